package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/supervisor"
	"github.com/cicy-ai/cicy-agent/topology"
)

// maxHookPayload bounds what a hook reads from its stdin.
const maxHookPayload = 2 << 20

func (e *env) hookCmd() *cli.Command {
	return &cli.Command{
		Name:      "hook",
		Usage:     "report a CLI agent's signal to the supervisor (run by the agents' own hooks)",
		ArgsUsage: "<event> [payload-json]",
		Description: "The CLI agents' own signals (their hooks, notify commands or plugins) run this command; the\n" +
			"supervisor seeds it into each CLI agent pane's config (" + topology.List(panetype.Agents(), "and") + ").\n" +
			"The payload is the JSON on stdin, or the last argument (a notify command's). The pane comes from CICY_PANE_ID and\n" +
			"the supervisor from CICY_HOME, both set in every pane. It never starts a supervisor:\n" +
			"while none runs, the signal is spooled under run/hooks/ and replayed by the next one.\n" +
			"It prints nothing on stdout (hooks read it) and exits 0 unless called wrongly.\n" +
			"What each agent's events mean: docs/hooks.md of the cicy-agent repository.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "the `AGENT` type that sent it: " + topology.List(panetype.Agents(), "or") + " (default: the pane's)"},
			&cli.StringFlag{Name: "pane", Usage: "the `PANE` it is about", EnvVars: []string{"CICY_PANE_ID"}},
		},
		Action: func(c *cli.Context) error {
			a, err := args(c, 1, 2, "<event> [payload-json]")
			if err != nil {
				return err
			}
			id := c.String("pane")
			if id == "" {
				return usagef("no pane: run inside a cicy-agent pane (CICY_PANE_ID) or pass --pane")
			}
			if id, err = api.ParsePaneID(id); err != nil {
				return err
			}
			req := api.HookRequest{Agent: c.String("agent"), Event: a[0], At: time.Now()}
			// A sender that knows when its event happened says so (the
			// opencode plugin): hooks racing each other keep their order.
			if at, err := time.Parse(time.RFC3339Nano, os.Getenv("CICY_HOOK_AT")); err == nil {
				req.At = at
			}
			switch {
			case len(a) == 2:
				req.Payload = json.RawMessage(a[1])
			case !isTerminal(e.stdin):
				b, err := io.ReadAll(io.LimitReader(e.stdin, maxHookPayload))
				if err != nil {
					return fmt.Errorf("read the hook payload: %w", err)
				}
				req.Payload = b
			}
			if len(req.Payload) > 0 && !json.Valid(req.Payload) {
				// Keep the event; the payload is reported as text.
				q, _ := json.Marshal(string(req.Payload))
				req.Payload = q
			}
			h, err := home(c)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, 5*time.Second)
			defer cancel()
			_, err = api.NewClient(h).Hook(ctx, id, req)
			if errors.Is(err, api.ErrNotRunning) {
				if serr := supervisor.SpoolHook(h, id, req); serr != nil {
					fmt.Fprintf(e.stderr, "cicy-agent hook: no supervisor, and the spool failed: %v\n", serr)
				}
				return nil
			}
			if err != nil {
				// A hook must not break the agent: say it, exit 0.
				fmt.Fprintf(e.stderr, "cicy-agent hook: %v\n", err)
			}
			return nil
		},
	}
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
