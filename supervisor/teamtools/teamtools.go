package teamtools

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

// Pane is a pane as the tools see it.
type Pane struct {
	ID, Title, Role string
	// Master is the master it reports to, "" when none.
	Master string
}

// Team is the supervisor as the tools ask it.
type Team interface {
	// Resolve finds a pane by id or title, this node's or another's.
	Resolve(ref string) (Pane, error)
	// Local is this node's pane id, when it has it.
	Local(id string) (Pane, bool)
	// List is every pane of the team.
	List(ctx context.Context) []api.PaneInfo
	// Dispatch queues a task from a master (or "") to a worker.
	Dispatch(ctx context.Context, from, to, text string) (schema.Task, error)
	// Tasks are the tasks from or to pane id.
	Tasks(ctx context.Context, id string) ([]schema.Task, error)
	// Task is one task; WaitTask blocks until it ends or ctx does.
	Task(ctx context.Context, id int64) (schema.Task, error)
	WaitTask(ctx context.Context, id int64) (schema.Task, error)
}

// Outbox is what the wait tool needs of the tasks' outbox (outbox.Outbox).
type Outbox interface {
	// Await holds back the 🔔 lines of tasks ids until release.
	Await(ids []int64) (release func())
	// Told records a task's master saw its end.
	Told(id int64)
}

// Work is the workers' git work (gitwork.Keeper) as diff and merge use it.
type Work interface {
	// Owner is the worker of a task id or worker target, and the task
	// when one was named.
	Owner(ctx context.Context, target string) (pane string, task *schema.Task, err error)
	Diff(ctx context.Context, target string, stat bool) (api.DiffResult, error)
	Merge(ctx context.Context, req api.MergeRequest) (api.MergeResult, error)
}

// Tools are the team group of a cicy master (see docs/role-templates.md): dispatch,
// workers, task_status. Results of dispatched tasks come back to the
// master by themselves as 🔔 messages. A CLI master reaches the same tools,
// and wait besides, through the API (Call) and `cicy-agent mcp`.
type Tools struct {
	team  Team
	tasks Outbox
	work  Work
	log   *logrus.Entry
}

// New makes the tools of a team.
func New(team Team, tasks Outbox, work Work, log *logrus.Entry) *Tools {
	return &Tools{team: team, tasks: tasks, work: work, log: log}
}

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

// CLIDefs are the team tools a CLI master gets (`cicy-agent mcp`):
// a cicy master's, and wait. A cicy master does not get wait (its results
// arrive as 🔔 messages, and its tool list stays byte-stable).
func CLIDefs() []wire.Tool {
	return append(Defs(), wire.Tool{Name: "wait",
		Description: "Block until the tasks you name have ended, or the timeout passes, and show each one's status and result. Use it when you have nothing else to do; a result you waited for does not come back as a 🔔 message.",
		InputSchema: json.RawMessage(waitSchema)})
}

// Defs are a cicy master's team tools.
func Defs() []wire.Tool {
	return []wire.Tool{
		{Name: "dispatch", Description: "Give a task to one of your workers. It is queued until the worker is idle; its result comes back to you as a message starting with 🔔, so do not poll.", InputSchema: json.RawMessage(dispatchSchema)},
		{Name: "workers", Description: "List your workers with their state and current task.", InputSchema: json.RawMessage(workersSchema)},
		{Name: "task_status", Description: "Show the status and result of your tasks.", InputSchema: json.RawMessage(taskStatusSchema)},
		{Name: "diff", Description: "Show the change a task or a worker made on its git worktree branch (workers created with --worktree): git's diff.", InputSchema: json.RawMessage(diffSchema)},
		{Name: "merge", Description: "Merge a task's or a worker's branch into your checkout: a fast-forward or a merge commit. A conflict changes nothing and names the files; with send_back it becomes a task for the worker.", InputSchema: json.RawMessage(mergeSchema)},
	}
}

// Defs are a cicy master's team tools (cicy.TeamTools).
func (*Tools) Defs() []wire.Tool { return Defs() }

// Run runs one of a cicy master's team tools for pane paneID
// (cicy.TeamTools): the tool's text, and whether it is a refusal or a
// failure.
func (t *Tools) Run(ctx context.Context, paneID, name string, input json.RawMessage) (string, bool) {
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

// Call runs one team tool for master pane m, as its cicy runtime would
// (same text, same refusals), with wait besides; input is the tool's JSON
// input. A pane that is not a master, or an unknown tool, is refused.
func (t *Tools) Call(ctx context.Context, m Pane, name string, input json.RawMessage) (api.TeamToolResult, error) {
	if m.Role != topology.RoleMaster {
		return api.TeamToolResult{}, api.Usagef("%s is not a master (role %q): the team tools are a master's, for leading its workers", m.ID, m.Role)
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	var res api.TeamToolResult
	switch {
	case name == "wait":
		res.Text, res.IsError = t.wait(ctx, m.ID, input)
	case slices.ContainsFunc(Defs(), func(d wire.Tool) bool { return d.Name == name }):
		res.Text, res.IsError = t.Run(ctx, m.ID, name, input)
	default:
		return res, api.Usagef("no team tool %q; they are dispatch, workers, task_status, diff, merge and wait", name)
	}
	return res, nil
}

func (t *Tools) dispatch(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in struct {
		Worker string `json:"worker"`
		Task   string `json:"task"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return "error: the input must be {\"worker\": …, \"task\": …}", true
	}
	w, err := t.team.Resolve(strings.TrimSpace(in.Worker))
	if err != nil {
		return "error: " + err.Error(), true
	}
	if m := w.Master; m != master && w.Role == topology.RoleWorker {
		if m == "" {
			m = "no master"
		}
		return fmt.Sprintf("error: %s reports to %s, not to you (%s); call workers to see yours", w.ID, m, master), true
	}
	task, err := t.team.Dispatch(ctx, master, w.ID, in.Task)
	if err != nil {
		return "error: " + err.Error(), true
	}
	return fmt.Sprintf("task %d queued for %s (%s); its result will come back to you as a 🔔 message", task.ID, w.ID, w.Title), false
}

func (t *Tools) workers(master string) string {
	var b strings.Builder
	for _, p := range t.team.List(context.Background()) {
		if p.Role != topology.RoleWorker {
			continue
		}
		e, err := t.team.Resolve(p.ID)
		if err != nil || e.Master != master {
			continue
		}
		fmt.Fprintf(&b, "%s %q %s %s (%s)\n", p.ID, p.Title, p.Type, p.State, p.Reason)
	}
	if b.Len() == 0 {
		return "(you have no workers)"
	}
	return b.String()
}

func (t *Tools) taskStatus(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in struct {
		TaskID int64 `json:"task_id"`
	}
	_ = json.Unmarshal(input, &in)
	ts, err := t.team.Tasks(ctx, master)
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
		case api.TaskDone:
			fmt.Fprintf(&b, ": %s", clipText(task.Result))
		case api.TaskFailed:
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
func (t *Tools) wait(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in struct {
		TaskIDs []int64 `json:"task_ids"`
		Timeout float64 `json:"timeout"`
	}
	if err := json.Unmarshal(input, &in); err != nil || len(in.TaskIDs) == 0 {
		return "error: the input must be {\"task_ids\": [ids…], \"timeout\": seconds}", true
	}
	for _, id := range in.TaskIDs {
		if task, err := t.team.Task(ctx, id); err != nil || task.From != master {
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
	defer t.tasks.Await(in.TaskIDs)() // no 🔔 line for them while the wait runs
	t.log.WithFields(logrus.Fields{"pane": master, "tasks": in.TaskIDs}).Info("A master waits for its tasks")
	var b strings.Builder
	for _, id := range in.TaskIDs {
		task, err := t.team.WaitTask(wctx, id)
		if err != nil {
			return "error: " + err.Error(), true
		}
		if ctx.Err() != nil {
			return "error: the wait was cancelled", true
		}
		if !api.Ended(task.Status) {
			fmt.Fprintf(&b, "task %d → %s: %s (not ended after %g s)\n", task.ID, task.To, task.Status, secs)
			continue
		}
		fmt.Fprintf(&b, "task %d → %s: %s", task.ID, task.To, task.Status)
		switch task.Status {
		case api.TaskDone:
			fmt.Fprintf(&b, ": %s", clip.Runes(task.Result, waitBody+1))
		case api.TaskFailed:
			fmt.Fprintf(&b, ": %s", clip.Runes(task.Error, waitBody+1))
		}
		b.WriteByte('\n')
		if !task.NotifiedAt.Valid {
			t.tasks.Told(task.ID)
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
func (t *Tools) workInput(ctx context.Context, master string, input json.RawMessage, in any) (string, bool) {
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
	worker, task, err := t.work.Owner(ctx, target)
	if err != nil {
		return "error: " + err.Error(), true
	}
	if e, ok := t.team.Local(worker); ok && e.Master != master && (task == nil || task.From != master) {
		return fmt.Sprintf("error: %s is not your worker; call workers to see yours", worker), true
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

func (t *Tools) diff(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in diffInput
	target, bad := t.workInput(ctx, master, input, &in)
	if bad {
		return target, true
	}
	d, err := t.work.Diff(ctx, target, in.Stat)
	if err != nil {
		return "error: " + err.Error(), true
	}
	return api.DiffText(d, diffBody), false
}

func (t *Tools) merge(ctx context.Context, master string, input json.RawMessage) (string, bool) {
	var in mergeInput
	target, bad := t.workInput(ctx, master, input, &in)
	if bad {
		return target, true
	}
	m, err := t.work.Merge(ctx, api.MergeRequest{Target: target, Into: in.Into, SendBack: in.SendBack, Caller: master})
	if err != nil {
		return "error: " + err.Error(), true
	}
	return api.MergeText(m, "merge with send_back: true"), len(m.Conflicts) > 0 && m.SentBack == nil
}
