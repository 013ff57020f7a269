package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/teammcp"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/topology"
)

func (e *env) mcpCmd() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve a CLI master's team tools over MCP on stdin/stdout (run by the master's agent, not by people)",
		Description: "A " + topology.List(panetype.Agents(), "or") + " pane with role master runs this command as an MCP server\n" +
			"(Model Context Protocol, over stdio): it gives the agent the team tools a cicy master has —\n" +
			"dispatch (a task to one of its workers), workers (them, with state and current task),\n" +
			"task_status (its tasks) — and wait (block until named tasks end, and show their results).\n" +
			"They answer and refuse exactly as a cicy master's do. The pane is CICY_PANE_ID (or --pane)\n" +
			"and the supervisor that of CICY_HOME (or --home), both set in every pane. It never starts a\n" +
			"supervisor: a call while none runs is a tool error saying so. It writes nothing but protocol\n" +
			"on stdout (anything else goes to stderr) and stops at the end of its input. The HTTP API it\n" +
			"uses, POST /api/panes/{id}/team/{tool}: docs/http-api.md of the cicy-agent repository.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "pane", Usage: "the master `PANE` the tools act for", EnvVars: []string{"CICY_PANE_ID"}},
		},
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0, "[--pane <pane>]"); err != nil {
				return err
			}
			if c.String("pane") == "" {
				return usagef("no pane: run inside a cicy-agent master pane (CICY_PANE_ID) or pass --pane")
			}
			id, err := api.ParsePaneID(c.String("pane"))
			if err != nil {
				return err
			}
			h, err := home(c)
			if err != nil {
				return err
			}
			logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
			srv := teammcp.NewServer(api.NewClient(h), id, version, logger)
			if err := srv.Run(c.Context, &teammcp.Transport{In: e.stdin, Out: e.stdout}); err != nil && !errors.Is(err, io.EOF) { // a stdio session ends at the end of its input
				return fmt.Errorf("serve MCP: %w", err)
			}
			return nil
		},
	}
}
