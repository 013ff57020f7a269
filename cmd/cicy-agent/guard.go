package main

import (
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/termsafe"
)

// Every command's output goes through a termsafe.Writer, so that agents'
// text cannot steer the terminal (package termsafe). --raw keeps the
// bytes as they came, for a pipe that wants them; --json is JSON, whose
// encoder escapes them (see termsafe.JSON).

// rawFlag turns the filter off for one command.
var rawFlag = &cli.BoolFlag{Name: "raw", Usage: "print agents' text as it came, control and escape sequences included (for a pipe that wants them; by default they are removed or shown as ^X)"}

// unguarded are the commands whose output is not agents' text for a
// person: a terminal of its own (attach, dashboard, view), a protocol
// (hook, mcp), a script (completion), the daemon's log (serve).
var unguarded = []string{"serve", "attach", "dashboard", "view", "hook", "mcp", "completion"}

// guard makes cmd and its subcommands print through termsafe.Writers, unless
// --raw is given.
func (e *env) guard(cmd *cli.Command) {
	if slices.Contains(unguarded, cmd.Name) {
		return
	}
	for _, sub := range cmd.Subcommands {
		e.guard(sub)
	}
	act := cmd.Action
	if act == nil {
		return
	}
	cmd.Action = func(c *cli.Context) error {
		if c.Bool("raw") {
			return act(c)
		}
		stdout, stderr := e.stdout, e.stderr
		out, errOut := termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
		e.stdout, e.stderr = out, errOut
		defer func() {
			e.stdout, e.stderr = stdout, stderr
			_ = out.Flush()
			_ = errOut.Flush()
		}()
		return act(c)
	}
}
