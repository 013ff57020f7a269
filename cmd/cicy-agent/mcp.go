package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
)

// mcpCmd is the team tools of a CLI master as an MCP server over stdio:
// the agent's CLI (Claude Code, Codex, opencode) starts it from the
// config cicy-agent seeded for a master pane; each tool call is the
// supervisor's team tool (POST /api/panes/{id}/team/{tool}) run as the
// pane, with the same answers and refusals a cicy master gets.
func (e *env) mcpCmd() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve a master pane's team tools (dispatch, workers, task_status, wait) to its CLI agent over MCP on stdio",
		Description: "Started by a CLI agent (Claude Code, Codex, opencode) running in a master pane, from the MCP\n" +
			"server entry cicy-agent wrote into its config at the pane's creation — not by people. It\n" +
			"speaks the Model Context Protocol as JSON lines on stdin and stdout (nothing else is written\n" +
			"to stdout) until stdin ends. CICY_PANE_ID (set in every pane) names the calling master and\n" +
			"CICY_HOME its supervisor, which must be running (it is not started from here).",
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0, ""); err != nil {
				return err
			}
			id := os.Getenv("CICY_PANE_ID")
			if id == "" {
				return usagef("cicy-agent mcp runs inside a master pane: CICY_PANE_ID is not set")
			}
			h, err := home(c)
			if err != nil {
				return err
			}
			return serveMCP(c.Context, api.NewClient(h), id, e.stdin, e.stdout)
		},
	}
}

// serveMCP serves the team tools of master id, through cl, on in and out
// until in ends.
func serveMCP(ctx context.Context, cl *api.Client, id string, in io.Reader, out io.Writer) error {
	tools, err := cl.TeamTools(ctx)
	if err != nil {
		if errors.Is(err, api.ErrNotRunning) {
			return failf("no supervisor runs for this pane's home: the team tools need it")
		}
		return err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "cicy", Title: "cicy-agent team tools", Version: version}, nil)
	for _, t := range tools {
		name := t.Name
		srv.AddTool(&mcp.Tool{Name: name, Description: t.Description, InputSchema: t.InputSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return callTeamTool(ctx, cl, id, name, req.Params.Arguments)
			})
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("mcp: %w", err)
}

// callTeamTool runs one tool call: a refusal is a tool result with
// isError (the model reads it); input that is not the tool's is a
// protocol error (invalid params); a supervisor that cannot be reached is
// a tool error too, so the agent can say so.
func callTeamTool(ctx context.Context, cl *api.Client, id, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := cl.TeamTool(ctx, id, tool, args)
	var ae *api.Error
	switch {
	case errors.As(err, &ae) && ae.Kind == api.KindUsage:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: ae.Message}
	case err != nil:
		res = api.TeamToolResult{Text: "error: " + err.Error(), IsError: true}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}, IsError: res.IsError}, nil
}

// nopWriteCloser lets the transport close stdout without closing it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
