package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The team tools over the API: POST /api/panes/{id}/team/{tool} runs a
// master's team tool as that master — the very code a cicy master's tool
// calls run (teamTools), so a CLI master (through cicy-agent mcp) gets the
// same answers and refusals — plus wait, for a master that would rather
// block than be told by a 🔔 line.

// Wait's bounds: the default timeout and the longest one.
const (
	teamWaitDefault = 600 * time.Second
	teamWaitMax     = 3600 * time.Second
)

// teamWaitSchema is wait's input.
const teamWaitSchema = `{"type":"object","properties":{"task_ids":{"type":"array","items":{"type":"integer"},"minItems":1,"description":"The tasks to wait for (ids dispatch returned); only tasks you dispatched."},"timeout":{"type":"number","description":"Seconds to wait at most (default 600, at most 3600); the tasks still open then are listed as such."}},"required":["task_ids"]}`

// TeamTools is the team tools a master can call over the API: name,
// description and JSON schema, the cicy master's three and wait.
func TeamTools() []api.TeamToolDef {
	var out []api.TeamToolDef
	for _, d := range (teamTools{}).Defs() {
		out = append(out, api.TeamToolDef{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema})
	}
	return append(out, api.TeamToolDef{Name: "wait", InputSchema: json.RawMessage(teamWaitSchema),
		Description: "Wait until the tasks you name have ended (or the timeout passed) and return their results. Only when you have nothing else to do: results also come back to you by themselves as 🔔 messages."})
}

// TeamTool runs a team tool as master id; the result is the tool's text,
// an error when the tool refused (IsError) — a usage error when the input
// is not the tool's.
func (s *Supervisor) TeamTool(ctx context.Context, id, tool string, input json.RawMessage) (api.TeamToolResult, error) {
	e, err := s.get(id)
	if err != nil {
		return api.TeamToolResult{}, err
	}
	if e.cfg.Role != topology.RoleMaster {
		return api.TeamToolResult{}, usageErr("%s is not a master (role %q): the team tools are a master's", e.cfg.ID, e.cfg.Role)
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if err := checkTeamInput(tool, input); err != nil {
		return api.TeamToolResult{}, err
	}
	var text string
	var isErr bool
	if tool == "wait" {
		text, isErr = s.teamWait(ctx, e.cfg.ID, input)
	} else {
		text, isErr = teamTools{s}.Run(ctx, e.cfg.ID, tool, input)
	}
	return api.TeamToolResult{Text: text, IsError: isErr}, nil
}

// checkTeamInput refuses an unknown tool and input that is not the tool's:
// unknown keys, wrong types, a missing required key.
func checkTeamInput(tool string, input json.RawMessage) error {
	dec := func(v any) error {
		d := json.NewDecoder(strings.NewReader(string(input)))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			return usageErr("%s: the input is not the tool's: %v", tool, err)
		}
		return nil
	}
	switch tool {
	case "dispatch":
		var in struct {
			Worker *string `json:"worker"`
			Task   *string `json:"task"`
		}
		if err := dec(&in); err != nil {
			return err
		}
		if in.Worker == nil || in.Task == nil {
			return usageErr("dispatch: the input needs \"worker\" and \"task\"")
		}
	case "workers":
		return dec(&struct{}{})
	case "task_status":
		return dec(&struct {
			TaskID int64 `json:"task_id"`
		}{})
	case "wait":
		var in struct {
			TaskIDs []int64 `json:"task_ids"`
			Timeout float64 `json:"timeout"`
		}
		if err := dec(&in); err != nil {
			return err
		}
		if len(in.TaskIDs) == 0 {
			return usageErr("wait: the input needs \"task_ids\", a list of at least one task id")
		}
	default:
		return &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no team tool %q (the tools are dispatch, workers, task_status and wait)", tool)}
	}
	return nil
}

// teamWait blocks until master's tasks ids have all ended, or the
// timeout, or ctx; it says each one's status and result.
func (s *Supervisor) teamWait(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in struct {
		TaskIDs []int64 `json:"task_ids"`
		Timeout float64 `json:"timeout"`
	}
	_ = json.Unmarshal(input, &in) // checked by checkTeamInput
	wait := teamWaitDefault
	if in.Timeout > 0 {
		wait = min(time.Duration(in.Timeout*float64(time.Second)), teamWaitMax)
	}
	for _, id := range in.TaskIDs {
		t, err := s.store.GetTask(ctx, id)
		if err != nil || t.From != master {
			return fmt.Sprintf("error: you dispatched no task %d (task_status lists yours)", id), true
		}
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var b strings.Builder
	open := 0
	for _, id := range in.TaskIDs {
		t, err := s.WaitTask(ctx, id)
		if err != nil {
			return "error: " + err.Error(), true
		}
		fmt.Fprintf(&b, "task %d → %s: %s", t.ID, t.To, t.Status)
		switch t.Status {
		case schema.TaskDone:
			fmt.Fprintf(&b, ": %s", t.Result)
		case schema.TaskFailed:
			fmt.Fprintf(&b, ": %s", t.Error)
		case schema.TaskQueued, schema.TaskDelivered:
			open++
		}
		b.WriteByte('\n')
	}
	if open > 0 {
		fmt.Fprintf(&b, "(%d still open after %s; results also come back to you as 🔔 messages)\n", open, wait.Round(time.Second))
	}
	return b.String(), false
}

// teamRoutes serves the team tools.
func (a *handler) teamRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/team/tools", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, TeamTools())
	})
	mux.HandleFunc("POST /api/panes/{id}/team/{tool}", func(w http.ResponseWriter, r *http.Request) {
		var input json.RawMessage
		if err := decode(r, &input); err != nil {
			writeErr(w, err)
			return
		}
		res, err := a.sup.TeamTool(r.Context(), r.PathValue("id"), r.PathValue("tool"), input)
		respond(w, res, err)
	})
}
