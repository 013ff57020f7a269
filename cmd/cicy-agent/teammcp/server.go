package teammcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor"
)

// API is what the MCP server needs of the supervisor (an *api.Client).
type API interface {
	TeamTool(ctx context.Context, pane, tool string, input json.RawMessage) (api.TeamToolResult, error)
}

// NewServer is the MCP server of a master pane's team tools: each call
// goes to the supervisor, which answers as it would a cicy master;
// version is the program's, which the server gives as its own.
func NewServer(cl API, pane, version string, logger *slog.Logger) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "cicy-agent", Version: version}, &mcp.ServerOptions{
		Logger:       logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		Instructions: "You lead a team of agents run by cicy-agent. dispatch gives one of your workers a task; " +
			"workers lists them; task_status shows the tasks you dispatched; wait blocks until tasks end. " +
			"A task's result also comes back to you by itself, as a message starting with 🔔.",
	})
	for _, d := range supervisor.TeamToolDefs() {
		name := d.Name
		srv.AddTool(&mcp.Tool{Name: name, Description: d.Description, InputSchema: d.InputSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
				defer func() {
					if p := recover(); p != nil {
						res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s failed: %v", name, p)}
					}
				}()
				input, err := toolInput(name, req.Params.Arguments)
				if err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid input for %s: %v", name, err)}
				}
				out, err := cl.TeamTool(ctx, pane, name, input)
				switch {
				case err != nil:
					return toolText("error: "+err.Error(), true), nil
				case out.IsError:
					return toolText(out.Text, true), nil
				}
				return toolText(out.Text, false), nil
			})
	}
	return srv
}

// toolText is a tool's result: one text, an error's or not.
func toolText(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
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
func toolInput(tool string, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
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
