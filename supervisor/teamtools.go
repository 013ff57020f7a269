package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// teamTools are the team group of a cicy master (see docs/role-templates.md): dispatch,
// workers, task_status. Results of dispatched tasks come back to the
// master by themselves as 🔔 messages.
type teamTools struct{ s *Supervisor }

// The tool definitions are literals so the request stays byte-stable.
const (
	dispatchSchema   = `{"type":"object","properties":{"worker":{"type":"string","description":"The worker's pane id (w-N) or title."},"task":{"type":"string","description":"What the worker should do, self-contained: it sees only this text."}},"required":["worker","task"]}`
	workersSchema    = `{"type":"object","properties":{}}`
	taskStatusSchema = `{"type":"object","properties":{"task_id":{"type":"integer","description":"One task; omit it for every task you dispatched."}}}`
)

func (teamTools) Defs() []wire.Tool {
	return []wire.Tool{
		{Name: "dispatch", Description: "Give a task to one of your workers. It is queued until the worker is idle; its result comes back to you as a message starting with 🔔, so do not poll.", InputSchema: json.RawMessage(dispatchSchema)},
		{Name: "workers", Description: "List your workers with their state and current task.", InputSchema: json.RawMessage(workersSchema)},
		{Name: "task_status", Description: "Show the status and result of your tasks.", InputSchema: json.RawMessage(taskStatusSchema)},
	}
}

func (t teamTools) Run(ctx context.Context, paneID, name string, input json.RawMessage) (string, bool) {
	switch name {
	case "dispatch":
		return t.dispatch(ctx, paneID, input)
	case "workers":
		return t.workers(paneID), false
	case "task_status":
		return t.taskStatus(ctx, paneID, input)
	}
	return "error: unknown tool " + name, true
}

func (t teamTools) dispatch(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in struct {
		Worker string `json:"worker"`
		Task   string `json:"task"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return "error: the input must be {\"worker\": …, \"task\": …}", true
	}
	w, err := t.s.resolvePane(strings.TrimSpace(in.Worker))
	if err != nil {
		return "error: " + err.Error(), true
	}
	if m := t.s.masterOf(w); m != master && w.cfg.Role == topology.RoleWorker {
		return fmt.Sprintf("error: %s reports to %s, not to you (%s); call workers to see yours", w.cfg.ID, m, master), true
	}
	task, err := t.s.Dispatch(ctx, master, w.cfg.ID, in.Task)
	if err != nil {
		return "error: " + err.Error(), true
	}
	return fmt.Sprintf("task %d queued for %s (%s); its result will come back to you as a 🔔 message", task.ID, w.cfg.ID, w.cfg.Title), false
}

func (t teamTools) workers(master string) string {
	var b strings.Builder
	for _, p := range t.s.List(context.Background()) {
		if p.Role != topology.RoleWorker {
			continue
		}
		e, err := t.s.resolvePane(p.ID)
		if err != nil || t.s.masterOf(e) != master {
			continue
		}
		fmt.Fprintf(&b, "%s %q %s %s (%s)\n", p.ID, p.Title, p.Type, p.State, p.Reason)
	}
	if b.Len() == 0 {
		return "(you have no workers)"
	}
	return b.String()
}

func (t teamTools) taskStatus(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in struct {
		TaskID int64 `json:"task_id"`
	}
	_ = json.Unmarshal(input, &in)
	ts, err := t.s.store.ListTasks(ctx, master)
	if err != nil {
		return "error: " + err.Error(), true
	}
	var b strings.Builder
	for _, task := range ts {
		if task.From != master || (in.TaskID != 0 && task.ID != in.TaskID) {
			continue
		}
		fmt.Fprintf(&b, "task %d → %s: %s", task.ID, task.To, task.Status)
		switch task.Status {
		case schema.TaskDone:
			fmt.Fprintf(&b, ": %s", clipText(task.Result))
		case schema.TaskFailed:
			fmt.Fprintf(&b, ": %s", clipText(task.Error))
		}
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		if in.TaskID != 0 {
			return fmt.Sprintf("error: you dispatched no task %d", in.TaskID), true
		}
		return "(you have dispatched no tasks)", false
	}
	return b.String(), false
}

// clipText is a task's result or error on one line: its first 300 runes
// and "…" when it is longer.
func clipText(s string) string {
	return clip.Runes(strings.Join(strings.Fields(s), " "), 300+1)
}
