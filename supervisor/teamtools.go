package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// teamTools are the team group of a cicy master (see docs/role-templates.md): dispatch,
// workers, task_status. Results of dispatched tasks come back to the
// master by themselves as 🔔 messages. A CLI master reaches the same tools,
// and wait besides, through the API (TeamTool) and `cicy-agent mcp`.
type teamTools struct{ s *Supervisor }

// The tool definitions are literals so the request stays byte-stable.
const (
	dispatchSchema   = `{"type":"object","properties":{"worker":{"type":"string","description":"The worker's pane id (w-N) or title."},"task":{"type":"string","description":"What the worker should do, self-contained: it sees only this text."}},"required":["worker","task"]}`
	workersSchema    = `{"type":"object","properties":{}}`
	taskStatusSchema = `{"type":"object","properties":{"task_id":{"type":"integer","description":"One task; omit it for every task you dispatched."}}}`
	diffSchema       = `{"type":"object","properties":{"target":{"type":"string","description":"A task id (its commits) or a worker's pane id (all of its branch not merged yet)."},"stat":{"type":"boolean","description":"Only the summary of files and lines."}},"required":["target"]}`
	mergeSchema      = `{"type":"object","properties":{"target":{"type":"string","description":"A task id (up to its commit) or a worker's pane id (its whole branch)."},"into":{"type":"string","description":"The branch to merge into; default: the one checked out in your repository."},"send_back":{"type":"boolean","description":"On a conflict, give the worker a task to rebase its branch and resolve it."}},"required":["target"]}`
	waitSchema       = `{"type":"object","properties":{"task_ids":{"type":"array","items":{"type":"integer"},"minItems":1,"description":"The tasks to wait for: ids that dispatch returned."},"timeout":{"type":"number","description":"Give up after this many seconds (default 600, at most 3600)."}},"required":["task_ids"]}`
)

// Bounds of the wait tool: its timeout in seconds, and the runes of each
// result it shows (as much as a 🔔 message carries).
const (
	defaultWaitSeconds = 600
	maxWaitSeconds     = 3600
	waitBody           = 2000
)

// TeamToolDefs are the team tools a CLI master gets (`cicy-agent mcp`):
// a cicy master's, and wait. A cicy master does not get wait (its results
// arrive as 🔔 messages, and its tool list stays byte-stable).
func TeamToolDefs() []wire.Tool {
	return append(teamTools{}.Defs(), wire.Tool{Name: "wait",
		Description: "Block until the tasks you name have ended, or the timeout passes, and show each one's status and result. Use it when you have nothing else to do; a result you waited for does not come back as a 🔔 message.",
		InputSchema: json.RawMessage(waitSchema)})
}

func (teamTools) Defs() []wire.Tool {
	return []wire.Tool{
		{Name: "dispatch", Description: "Give a task to one of your workers. It is queued until the worker is idle; its result comes back to you as a message starting with 🔔, so do not poll.", InputSchema: json.RawMessage(dispatchSchema)},
		{Name: "workers", Description: "List your workers with their state and current task.", InputSchema: json.RawMessage(workersSchema)},
		{Name: "task_status", Description: "Show the status and result of your tasks.", InputSchema: json.RawMessage(taskStatusSchema)},
		{Name: "diff", Description: "Show the change a task or a worker made on its git worktree branch (workers created with --worktree): git's diff.", InputSchema: json.RawMessage(diffSchema)},
		{Name: "merge", Description: "Merge a task's or a worker's branch into your checkout: a fast-forward or a merge commit. A conflict changes nothing and names the files; with send_back it becomes a task for the worker.", InputSchema: json.RawMessage(mergeSchema)},
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
	case "diff":
		return t.diff(ctx, paneID, input)
	case "merge":
		return t.merge(ctx, paneID, input)
	}
	return "error: unknown tool " + name, true
}

// TeamTool runs one team tool for a master pane, as its cicy runtime would
// (same text, same refusals), with wait besides; input is the tool's JSON
// input. A pane that is not a master, or an unknown tool, is refused.
func (s *Supervisor) TeamTool(ctx context.Context, ref, name string, input json.RawMessage) (api.TeamToolResult, error) {
	m, err := s.localPane(ref)
	if err != nil {
		return api.TeamToolResult{}, err
	}
	if m.cfg.Role != topology.RoleMaster {
		return api.TeamToolResult{}, api.Usagef("%s is not a master (role %q): the team tools are a master's, for leading its workers", m.cfg.ID, m.cfg.Role)
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	t := teamTools{s}
	var res api.TeamToolResult
	switch {
	case name == "wait":
		res.Text, res.IsError = t.wait(ctx, m.cfg.ID, input)
	case slices.ContainsFunc(t.Defs(), func(d wire.Tool) bool { return d.Name == name }):
		res.Text, res.IsError = t.Run(ctx, m.cfg.ID, name, input)
	default:
		return res, api.Usagef("no team tool %q; they are dispatch, workers, task_status, diff, merge and wait", name)
	}
	return res, nil
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
		if m == "" {
			m = "no master"
		}
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

// wait blocks until each of the master's named tasks has ended or the
// timeout passes, then shows each one; the results it shows count as the
// master told (no 🔔 line follows for them).
func (t teamTools) wait(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in struct {
		TaskIDs []int64 `json:"task_ids"`
		Timeout float64 `json:"timeout"`
	}
	if err := json.Unmarshal(input, &in); err != nil || len(in.TaskIDs) == 0 {
		return "error: the input must be {\"task_ids\": [ids…], \"timeout\": seconds}", true
	}
	for _, id := range in.TaskIDs {
		if task, err := t.s.GetTask(ctx, id); err != nil || task.From != master {
			return fmt.Sprintf("error: you dispatched no task %d", id), true
		}
	}
	secs := in.Timeout
	if secs <= 0 {
		secs = defaultWaitSeconds
	}
	secs = min(secs, maxWaitSeconds)
	wctx, cancel := context.WithTimeout(ctx, time.Duration(secs*float64(time.Second)))
	defer cancel()
	defer t.s.tasks.Await(in.TaskIDs)() // no 🔔 line for them while the wait runs
	t.s.log.WithFields(logrus.Fields{"pane": master, "tasks": in.TaskIDs}).Info("A master waits for its tasks")
	var b strings.Builder
	for _, id := range in.TaskIDs {
		task, err := t.s.WaitTask(wctx, id)
		if err != nil {
			return "error: " + err.Error(), true
		}
		if ctx.Err() != nil {
			return "error: the wait was cancelled", true
		}
		if !schema.Terminal(task.Status) {
			fmt.Fprintf(&b, "task %d → %s: %s (not ended after %g s)\n", task.ID, task.To, task.Status, secs)
			continue
		}
		fmt.Fprintf(&b, "task %d → %s: %s", task.ID, task.To, task.Status)
		switch task.Status {
		case schema.TaskDone:
			fmt.Fprintf(&b, ": %s", clip.Runes(task.Result, waitBody+1))
		case schema.TaskFailed:
			fmt.Fprintf(&b, ": %s", clip.Runes(task.Error, waitBody+1))
		}
		b.WriteByte('\n')
		if !task.NotifiedAt.Valid {
			t.s.tasks.Told(task.ID)
		}
	}
	return b.String(), false
}

// clipText is a task's result or error on one line: its first 300 runes
// and "…" when it is longer.
func clipText(s string) string {
	return clip.Runes(strings.Join(strings.Fields(s), " "), 300+1)
}

// diffBody bounds the diff the diff tool shows, in runes.
const diffBody = 20000

// workTarget is a diff or merge tool's input: what it acts on, which must
// be the master's (a task it dispatched, or one of its workers).
func (t teamTools) workInput(ctx context.Context, master string, input json.RawMessage, in any) (string, bool) {
	if err := json.Unmarshal(input, in); err != nil {
		return "error: the input must be {\"target\": a task id or a worker's pane id, …}", true
	}
	var target string
	switch v := in.(type) {
	case *diffInput:
		target = v.Target
	case *mergeInput:
		target = v.Target
	}
	target = strings.TrimSpace(target)
	wt, err := t.s.trees.Resolve(ctx, target)
	if err != nil {
		return "error: " + err.Error(), true
	}
	if e, err := t.s.get(wt.Pane); err == nil && t.s.masterOf(e) != master && (wt.Task == nil || wt.Task.From != master) {
		return fmt.Sprintf("error: %s is not your worker; call workers to see yours", wt.Pane), true
	}
	return target, false
}

type diffInput struct {
	Target string `json:"target"`
	Stat   bool   `json:"stat"`
}

type mergeInput struct {
	Target   string `json:"target"`
	Into     string `json:"into"`
	SendBack bool   `json:"send_back"`
}

func (t teamTools) diff(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in diffInput
	target, bad := t.workInput(ctx, master, input, &in)
	if bad {
		return target, true
	}
	d, err := t.s.Diff(ctx, target, in.Stat)
	if err != nil {
		return "error: " + err.Error(), true
	}
	return api.DiffText(d, diffBody), false
}

func (t teamTools) merge(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in mergeInput
	target, bad := t.workInput(ctx, master, input, &in)
	if bad {
		return target, true
	}
	m, err := t.s.Merge(ctx, api.MergeRequest{Target: target, Into: in.Into, SendBack: in.SendBack, Caller: master})
	if err != nil {
		return "error: " + err.Error(), true
	}
	return api.MergeText(m, "merge with send_back: true"), len(m.Conflicts) > 0 && m.SentBack == nil
}
