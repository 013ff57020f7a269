package topology

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The two magic values of agent_config.role. Any other text is a label: the
// pane is untracked, excluded from completion tracking.
const (
	RoleMaster = "master"
	RoleWorker = "worker"
)

// Tracked reports whether completion tracking covers a pane with this role.
func Tracked(role string) bool { return role == RoleWorker }

// Pane is what the topology needs to know of one pane.
type Pane struct {
	ID          string
	Title       string
	Type        string
	Role        string
	Node        string // the node that runs the pane
	Master      string // explicit --master, "" when none
	State       string
	Reason      string
	CurrentTask string
	Elapsed     float64 // seconds the current task has run
	Tokens      int64   // all input and output tokens so far
	CacheHit    float64 // cache-read over all input tokens; -1 when none
	Compactable bool    // a cicy pane with more than 300 messages
	// OverBudget is the sentence the pane's model requests are refused
	// with (its budget or its team's reached); "" when not.
	OverBudget string
	// Upstream is why the pane's model requests keep failing upstream;
	// "" when they do not.
	Upstream string
	// NoProvider is why the pane cannot make a model call (its provider
	// has no key); "" when it can.
	NoProvider string
	Work       Work // its git worktree's unmerged work; zero when it runs in none
	// Queued is how many tasks wait for it, the first of them FirstQueued.
	Queued      int
	FirstQueued int64
}

// Work is a worker's git worktree branch and what it holds that the
// branch it merges into lacks: commits, and their lines. It is not a
// task's change (api.Work, base..head of one task): it is a whole branch
// measured against its target, as the status view shows it.
type Work struct {
	Branch  string `json:"branch,omitempty"`
	Ahead   int    `json:"ahead,omitempty"`
	Added   int    `json:"added,omitempty"`
	Deleted int    `json:"deleted,omitempty"`
}

// TaskCounts are a master's tasks by status.
type TaskCounts struct {
	Total     int `json:"total"`
	Queued    int `json:"queued"`
	Delivered int `json:"delivered"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// Worker is one worker as the status view shows it.
type Worker struct {
	ID          string  `json:"id"`
	Title       string  `json:"title"`
	Type        string  `json:"type"`
	State       string  `json:"state"`
	Reason      string  `json:"reason"`
	CurrentTask string  `json:"current_task"`
	Elapsed     float64 `json:"elapsed"`
	Tokens      int64   `json:"tokens"`
	CacheHit    float64 `json:"cache_hit"`
	Compactable bool    `json:"compactable"`
	Node        string  `json:"node,omitempty"`
	Work
}

// Master is one master with its workers and task counts.
type Master struct {
	ID          string     `json:"id"`
	Title       string     `json:"title"`
	Type        string     `json:"type"`
	State       string     `json:"state"`
	Reason      string     `json:"reason"`
	Workers     []Worker   `json:"workers"`
	Tasks       TaskCounts `json:"tasks"`
	Tokens      int64      `json:"tokens"`
	CacheHit    float64    `json:"cache_hit"`
	Compactable bool       `json:"compactable"`
	Node        string     `json:"node,omitempty"`
}

// Untracked is a pane whose role is a free-text label.
type Untracked struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Role  string `json:"role"`
	Node  string `json:"node,omitempty"`
}

// Attention is something that needs a person: a pane waiting for an
// answer, in error or unreachable, a worker whose last task failed, a
// master whose tasks are all finished, a pane whose budget is reached or
// whose model requests keep failing upstream, a home whose disk is full.
type Attention struct {
	ID     string `json:"id"` // the pane to look at, or HomeID
	State  string `json:"state"`
	Reason string `json:"reason"`
	// Kind is one of NeedKinds: waiting, error, unreachable, task_failed,
	// all_done, budget, upstream, provider, worker-stopped, disk-full or
	// crash-loop.
	Kind string `json:"kind"`
	// Task is the failed task (task_failed).
	Task int64 `json:"task,omitempty"`
	// Node is the node that runs the pane.
	Node string `json:"node,omitempty"`
}

// The kinds of attention.
const (
	NeedWaiting = "waiting"
	NeedError   = "error"
	// NeedUnreachable is a pane of a node that does not answer or whose
	// lease lapsed: the kind and the pane's state are both "unreachable".
	NeedUnreachable = "unreachable"
	NeedTaskFailed  = "task_failed"
	NeedAllDone     = "all_done"
	NeedBudget      = "budget" // until the budget is raised
	// NeedUpstream is a pane whose model requests keep failing upstream
	// (quota, key, rate limit), until one succeeds.
	NeedUpstream = "upstream"
	// NeedProvider is a pane that cannot make a model call: its provider
	// cannot be set up in the supervisor's environment (no key), until it
	// can.
	NeedProvider = "provider"
	// NeedWorkerStopped is a worker that is not running (exited) while a
	// task waits for it: nothing happens until it is restarted.
	NeedWorkerStopped = "worker-stopped"
	// NeedDiskFull is the home (id HomeID, state disk-full) whose writes
	// fail for lack of space, until they succeed again.
	NeedDiskFull = "disk-full"
	// NeedCrashLoop is a pane whose program died at once after each of
	// three starts in a row by its restart policy: it is not started
	// again until restarted by hand (its state is error, its reason
	// starts with "crash-loop").
	NeedCrashLoop = "crash-loop"
)

// NeedLabel is a kind of attention as a person reads it: every kind
// spelled with hyphens (task-failed, worker-stopped). The JSON keeps
// the kinds it always had (task_failed, all_done) for the scripts that
// read them.
func NeedLabel(kind string) string { return strings.ReplaceAll(kind, "_", "-") }

// NeedKind is a kind of attention and what it means, as the dashboard's
// help explains it.
type NeedKind struct{ Kind, Means string }

// NeedKinds are every kind of attention, in the order they are explained.
var NeedKinds = []NeedKind{
	{NeedWaiting, "a pane waits for an answer (a question, a permission)"},
	{NeedError, "a pane is in error"},
	{NeedUnreachable, "a pane's node does not answer"},
	{NeedTaskFailed, "a worker's last task failed"},
	{NeedAllDone, "all the tasks of a master finished"},
	{NeedBudget, "a pane's or its team's spend reached its budget"},
	{NeedUpstream, "a pane's model requests keep failing upstream"},
	{NeedProvider, "a pane cannot make a model call: its provider has no key"},
	{NeedWorkerStopped, "a task waits for a worker that is not running"},
	{NeedDiskFull, "the home's disk is full: a write was refused (a message, a task, a turn's history or usage, a pane's restore)"},
	{NeedCrashLoop, "a pane's program died within 10 s of each of three starts in a row: it is not started again"},
}

// HomeID is the id of an attention about the home, not one pane.
const HomeID = "home"

// DiskFull is the attention of a home whose writes fail for lack of
// space; reason says what cannot be written.
func DiskFull(node, reason string) Attention {
	return Attention{ID: HomeID, State: NeedDiskFull, Kind: NeedDiskFull, Reason: reason, Node: node}
}

// FailedTask is a failed task that is its worker's latest finished one: it
// needs a person until the worker finishes a later task.
type FailedTask struct {
	ID     int64  `json:"id"`
	Worker string `json:"worker"`
	Error  string `json:"error"`
}

// Status is the `status --json` document (see docs/http-api.md).
type Status struct {
	Masters []Master `json:"masters"`
	// Unassigned are workers that report to no master: none was given and
	// there is not exactly one master to default to.
	Unassigned []Worker    `json:"unassigned"`
	Untracked  []Untracked `json:"untracked"`
	NeedsYou   []Attention `json:"needs_you"`
	// CameBack is how the panes found gone at the supervisor's start (a
	// reboot, a crash) came back; absent when none was, or an hour after.
	CameBack *CameBack `json:"came_back,omitempty"`
	// Notify are the home's notification sinks and what they did; absent
	// when there are none.
	Notify []SinkState `json:"notify,omitempty"`
}

// CameBack counts the panes a supervisor found gone at its start: Gone in
// all; of them Resumed (CLI agents in their own session), Restarted (a
// new process or conversation), Failed (could not come back) and Waiting
// (not back yet). At is the start.
type CameBack struct {
	At        time.Time `json:"at"`
	Gone      int       `json:"gone"`
	Resumed   int       `json:"resumed"`
	Restarted int       `json:"restarted"`
	Failed    int       `json:"failed"`
	Waiting   int       `json:"waiting"`
}

// Line is the summary as status prints it.
func (c CameBack) Line() string {
	s := fmt.Sprintf("after the restart at %s: %d of %d panes came back (%d resumed, %d restarted)",
		c.At.Local().Format("15:04:05"), c.Resumed+c.Restarted, c.Gone, c.Resumed, c.Restarted)
	if c.Failed > 0 {
		s += fmt.Sprintf(", %d could not", c.Failed)
	}
	if c.Waiting > 0 {
		s += fmt.Sprintf(", %d still coming", c.Waiting)
	}
	return s
}

// Build assembles the status view. panes must be in display order; counts
// maps a master id to its tasks' counts by status (Total is Build's to
// add up); failed are the failures that still stand.
func Build(panes []Pane, counts map[string]TaskCounts, failed []FailedTask) Status {
	st := Status{Masters: []Master{}, Unassigned: []Worker{}, Untracked: []Untracked{}, NeedsYou: []Attention{}}
	index := map[string]int{}
	for _, p := range panes {
		if p.Role == RoleMaster {
			index[p.ID] = len(st.Masters)
			st.Masters = append(st.Masters, Master{
				ID: p.ID, Title: p.Title, Type: p.Type, State: p.State, Reason: p.Reason,
				Workers: []Worker{}, Tasks: counts[p.ID].totalled(), Tokens: p.Tokens, CacheHit: p.CacheHit, Compactable: p.Compactable,
				Node: p.Node,
			})
		}
	}
	failedBy := map[string][]FailedTask{}
	for _, f := range failed {
		failedBy[f.Worker] = append(failedBy[f.Worker], f)
	}
	for _, p := range panes {
		var master *Master
		if i, ok := index[p.ID]; ok {
			master = &st.Masters[i]
		}
		st.NeedsYou = append(st.NeedsYou, needs(p, master, failedBy[p.ID])...)
		switch {
		case p.Role == RoleMaster:
		case Tracked(p.Role):
			w := Worker{ID: p.ID, Title: p.Title, Type: p.Type, State: p.State, Reason: p.Reason, CurrentTask: p.CurrentTask, Elapsed: p.Elapsed, Tokens: p.Tokens, CacheHit: p.CacheHit, Compactable: p.Compactable,
				Node: p.Node, Work: p.Work}
			// A worker reports to the master recorded in its row: given by
			// --master, or the only master there was when it was created
			// (the supervisor records it then); it does not join a master
			// created after it.
			if i, ok := index[p.Master]; ok {
				st.Masters[i].Workers = append(st.Masters[i].Workers, w)
			} else {
				st.Unassigned = append(st.Unassigned, w)
			}
		default:
			st.Untracked = append(st.Untracked, Untracked{ID: p.ID, Title: p.Title, Role: p.Role, Node: p.Node})
		}
	}
	return st
}

// needs is what of pane p needs a person: its state (waiting, error,
// unreachable), its standing failed tasks, its budget, and, for a master
// (m, nil for any other pane), all its tasks finished.
func needs(p Pane, m *Master, failed []FailedTask) []Attention {
	var out []Attention
	add := func(a Attention) {
		a.ID, a.State, a.Node = p.ID, p.State, p.Node
		out = append(out, a)
	}
	switch {
	case p.State == NeedError && strings.HasPrefix(p.Reason, NeedCrashLoop+":"):
		add(Attention{Reason: p.Reason, Kind: NeedCrashLoop})
	case p.State == NeedWaiting || p.State == NeedError || p.State == NeedUnreachable:
		add(Attention{Reason: p.Reason, Kind: p.State})
	}
	for _, f := range failed {
		add(Attention{Kind: NeedTaskFailed, Task: f.ID, Reason: fmt.Sprintf("task %d failed: %s", f.ID, FirstLine(f.Error))})
	}
	if p.OverBudget != "" {
		add(Attention{Kind: NeedBudget, Reason: p.OverBudget})
	}
	if p.Upstream != "" {
		add(Attention{Kind: NeedUpstream, Reason: p.Upstream})
	}
	if p.NoProvider != "" {
		add(Attention{Kind: NeedProvider, Reason: p.NoProvider})
	}
	if p.Queued > 0 && p.State == "exited" {
		add(Attention{Kind: NeedWorkerStopped, Task: p.FirstQueued, Reason: fmt.Sprintf("%d task(s) wait for it (task %d first), and it is not running (%s): 'cicy-agent restart %s' starts it",
			p.Queued, p.FirstQueued, p.Reason, p.ID)})
	}
	if m != nil && AllFinished(m.Tasks) && p.State == "idle" {
		add(Attention{Kind: NeedAllDone, Reason: finishedReason(m.Tasks)})
	}
	return out
}

// SpansNodes reports whether more than one node is named (empty names
// aside). The client views show a node column only then, so a single
// machine's team looks as it always did.
func SpansNodes(nodes ...string) bool {
	first := ""
	for _, n := range nodes {
		switch {
		case n == "":
		case first == "":
			first = n
		case n != first:
			return true
		}
	}
	return false
}

// Nodes are the nodes of every pane of the view, in order, repeats kept.
func (s Status) Nodes() []string {
	var out []string
	for _, m := range s.Masters {
		out = append(out, m.Node)
		for _, w := range m.Workers {
			out = append(out, w.Node)
		}
	}
	for _, w := range s.Unassigned {
		out = append(out, w.Node)
	}
	for _, u := range s.Untracked {
		out = append(out, u.Node)
	}
	return out
}

// AllFinished reports whether a master has tasks and none is open.
func AllFinished(c TaskCounts) bool { return c.Total > 0 && c.Queued+c.Delivered == 0 }

func finishedReason(c TaskCounts) string {
	if c.Done == c.Total {
		return fmt.Sprintf("all %d tasks done", c.Total)
	}
	return fmt.Sprintf("all %d tasks finished: %d done, %d failed, %d cancelled", c.Total, c.Done, c.Failed, c.Cancelled)
}

// FirstLine is the first line of s, marked " …" when more follows.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// totalled is c with its Total.
func (c TaskCounts) totalled() TaskCounts {
	c.Total = c.Queued + c.Delivered + c.Done + c.Failed + c.Cancelled
	return c
}

// The restart policies of a pane, docker-like: what brings it back when
// its process is gone. Left unset, a pane that was running when the
// machine (or the supervisor) went down is brought back at the next
// start, and an exit of its own is final.
const (
	// RestartAlways: brought back after a reboot, and whenever its
	// program exits.
	RestartAlways = "always"
	// RestartOnFailure: brought back after a reboot, and when its program
	// exits with a failure (a non-zero code or a signal).
	RestartOnFailure = "on-failure"
	// RestartNever: never brought back; a reboot leaves it exited.
	RestartNever = "never"
)

// RestartPolicies are the policies, as a user writes them.
var RestartPolicies = []string{RestartAlways, RestartOnFailure, RestartNever}

// ValidRestart reports whether p is a restart policy ("" is the default).
func ValidRestart(p string) bool { return p == "" || slices.Contains(RestartPolicies, p) }
