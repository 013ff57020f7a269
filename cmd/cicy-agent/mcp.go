package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor"
	"github.com/cicy-ai/cicy-agent/topology"
)

func (e *env) mcpCmd() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve a CLI master's team tools over MCP on stdin/stdout (run by the master's agent, not by people)",
		Description: "A " + topology.List(topology.AgentTypes(), "or") + " pane with role master runs this command as an MCP server\n" +
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
			logger := log.New(e.stderr, "cicy-agent mcp: ", 0)
			srv := newMCPServer(api.NewClient(h), id)
			stdio := server.NewStdioServer(srv)
			stdio.SetErrorLogger(logger)
			if err := stdio.Listen(c.Context, e.stdin, e.stdout); err != nil {
				return fmt.Errorf("serve MCP: %w", err)
			}
			return nil
		},
	}
}

// teamToolsAPI is what the MCP server needs of the supervisor.
type teamToolsAPI interface {
	TeamTool(ctx context.Context, pane, tool string, input json.RawMessage) (api.TeamToolResult, error)
}

// newMCPServer is the MCP server of a master pane's team tools: each call
// goes to the supervisor, which answers as it would a cicy master.
func newMCPServer(cl teamToolsAPI, pane string) *server.MCPServer {
	srv := server.NewMCPServer("cicy-agent", version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithInstructions("You lead a team of agents run by cicy-agent. dispatch gives one of your workers a task; "+
			"workers lists them; task_status shows the tasks you dispatched; wait blocks until tasks end. "+
			"A task's result also comes back to you by itself, as a message starting with 🔔."))
	for _, d := range supervisor.TeamToolDefs() {
		name := d.Name
		srv.AddTool(mcp.NewToolWithRawSchema(name, d.Description, d.InputSchema),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				input, err := toolInput(name, req.Params.RawArguments, req.Params.Arguments)
				if err != nil {
					return nil, server.NewHandlerError(invalidParams{fmt.Sprintf("invalid input for %s: %v", name, err)})
				}
				res, err := cl.TeamTool(ctx, pane, name, input)
				switch {
				case err != nil:
					return mcp.NewToolResultError("error: " + err.Error()), nil
				case res.IsError:
					return mcp.NewToolResultError(res.Text), nil
				}
				return mcp.NewToolResultText(res.Text), nil
			})
	}
	return srv
}

// The inputs of the team tools, for checking them: a pointer field is
// required.
type (
	dispatchInput struct {
		Worker *string `json:"worker"`
		Task   *string `json:"task"`
	}
	taskStatusInput struct {
		TaskID *int64 `json:"task_id"`
	}
	waitInput struct {
		TaskIDs []int64  `json:"task_ids"`
		Timeout *float64 `json:"timeout"`
	}
)

// toolInput is a call's arguments as JSON once they match the tool's
// schema (an object, its required fields present, each of its type);
// anything else is the caller's mistake, a protocol error.
func toolInput(tool string, raw json.RawMessage, args any) (json.RawMessage, error) {
	if len(raw) == 0 {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("the arguments must be a JSON object")
	}
	var err error
	switch tool {
	case "dispatch":
		var in dispatchInput
		if err = json.Unmarshal(raw, &in); err == nil && (in.Worker == nil || in.Task == nil) {
			err = fmt.Errorf("worker and task are required")
		}
	case "task_status":
		err = json.Unmarshal(raw, &taskStatusInput{})
	case "wait":
		var in waitInput
		if err = json.Unmarshal(raw, &in); err == nil && len(in.TaskIDs) == 0 {
			err = fmt.Errorf("task_ids must name at least one task")
		}
	}
	return raw, err
}

// invalidParams is a JSON-RPC "invalid params" error.
type invalidParams struct{ msg string }

func (e invalidParams) Error() string { return e.msg }

func (e invalidParams) JSONRPCError() mcp.JSONRPCError {
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, Error: mcp.NewJSONRPCErrorDetails(mcp.INVALID_PARAMS, e.msg, nil)}
}
