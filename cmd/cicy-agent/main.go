// Command cicy-agent runs a mixed team of AI agents on one machine: a
// supervisor daemon that owns the panes, and the client commands that talk
// to it over $CICY_HOME/run/cicy.sock (see docs/http-api.md).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/termsafe"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

var requiredRe = regexp.MustCompile(`^Required flags? "([^"]+)" not set`)

// usageError is a mistake in how the command was called: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// failure is an operation that failed: exit status 1.
type failure struct{ msg string }

func (e *failure) Error() string { return e.msg }

func failf(format string, a ...any) error { return &failure{fmt.Sprintf(format, a...)} }

// run is the whole program but the exit: it returns the exit status, having
// written any error as one line on stderr.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	var unknown error
	app.CommandNotFound = func(c *cli.Context, name string) {
		cmds := app.Commands
		parent := commandPath(c)
		if parent != "" {
			cmds = c.Command.Subcommands
		}
		unknown = unknownCommand(name, parent, cmds)
	}
	if len(args) == 0 || args[len(args)-1] != "--generate-bash-completion" {
		// A completion request stays as typed: its flag must be last.
		args = permuteArgs(app, args)
	}
	err := app.Run(args)
	if unknown != nil && err == nil {
		err = unknown
	}
	return report(err, stderr)
}

func report(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 1
	var ue *usageError
	var ae *api.Error
	switch {
	case errors.As(err, &ue):
		code = 2
	case errors.As(err, &ae):
		if ae.Kind == api.KindUsage || ae.Kind == api.KindNotFound {
			code = 2
		}
	}
	if ec, ok := err.(cli.ExitCoder); ok && ec.ExitCode() != 0 && ue == nil && ae == nil {
		code = ec.ExitCode()
	}
	// An error can carry an agent's text (a task's error): printed safe.
	msg := strings.TrimSpace(strings.ReplaceAll(termsafe.Text(err.Error()), "\n", " "))
	// urfave/cli reports a missing required flag as a plain error.
	if m := requiredRe.FindStringSubmatch(msg); m != nil {
		code = 2
		msg = "--" + strings.ReplaceAll(m[1], ", ", " and --") + " must be given; see --help"
	}
	fmt.Fprintf(stderr, "cicy-agent: %s\n", msg)
	return code
}

// onUsageError turns urfave/cli's flag errors into one sentence with exit
// status 2 instead of a help dump.
func onUsageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	where := "cicy-agent"
	var flags []cli.Flag
	if c.Command != nil {
		flags = c.Command.Flags
	}
	if p := commandPath(c); p != "" {
		where += " " + p
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		if !strings.HasPrefix(name, "--") && len(name) > 2 {
			name = "-" + name // the flag package drops one dash of --name
		}
		msg = unknownFlag(name, flags)
	}
	return usagef("%s; see '%s --help'", msg, where)
}
