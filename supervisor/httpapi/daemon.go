package httpapi

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/memory"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Daemon is the API's view of the supervisor: everything a handler asks
// of it, grouped by what it is about.
type Daemon interface {
	PaneLife
	Screens
	Tasks
	Team
}

// PaneLife is the panes' list and each pane's life: made, sent to,
// answered, restarted, killed.
type PaneLife interface {
	Panes(ctx context.Context) iter.Seq[api.PaneInfo]
	ListFiltered(ctx context.Context, f api.PaneFilter) ([]api.PaneInfo, error)
	Create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error)
	Get(id string) (api.PaneInfo, error)
	KillPane(ctx context.Context, id string) (api.KillResult, error)
	RestartPane(ctx context.Context, id string, fresh bool) error
	Send(ctx context.Context, id string, req api.SendRequest) (*api.SendResult, error)
	Hook(ctx context.Context, id string, req api.HookRequest) (api.HookResult, error)
	Answer(ctx context.Context, id string, req api.AnswerRequest) (api.AnswerResult, error)
}

// Screens is what a viewer sees of a pane in the daemon: its screen, the
// PTY to attach to.
type Screens interface {
	Screen(id string, lines int) (api.ScreenResponse, error)
	PTY(id string) (*pane.PTY, error)
}

// Views is what a viewer follows of a pane (package screens): its screen
// with colours, a preview that follows it, why it has its state.
type Views interface {
	StyledScreen(id string, lines int) (api.ScreenResponse, error)
	Preview(ctx context.Context, id string, lines int, emit func(api.ScreenResponse) error) error
	Explain(id string) (api.Explanation, error)
}

// CicyPanes is what only a cicy pane has (package cicypanes): its turn to
// cancel, its commands, its events, its memories; and any pane's guidance
// file.
type CicyPanes interface {
	Cancel(id string) (bool, error)
	Command(ctx context.Context, id, cmd string) (*api.SendResult, error)
	Events(id string) (<-chan cicy.Event, func(), error)
	Memories(id string) (api.MemoryList, error)
	MemoryGet(id, memID string) (memory.Memory, error)
	MemoryRemove(id, memID string) error
	MemoryFlush(ctx context.Context, id string) (cicy.FlushResult, error)
	MemoryReindex(id string) (api.ReindexResult, error)
	Guidance(id string) (api.GuidanceDoc, error)
	SetGuidance(id, content string) (api.GuidanceDoc, error)
}

// Tasks is the team's tasks: dispatched, waited for, listed, cancelled,
// and given in the API's form.
type Tasks interface {
	Dispatch(ctx context.Context, from, to, text string) (schema.Task, error)
	WaitTask(ctx context.Context, id int64) (schema.Task, error)
	GetTask(ctx context.Context, id int64) (schema.Task, error)
	CancelTask(ctx context.Context, id int64) (schema.Task, error)
	ListTasks(ctx context.Context, pane string) ([]schema.Task, error)
	TaskInfo(t schema.Task) api.TaskInfo
	CallerMaster(caller string) string
	PaneIDOf(ref string) (string, error)
}

// Team is the supervisor and its team as a whole: its health, status and
// event stream, the cluster's nodes, a master's team tools, the workers'
// worktrees.
type Team interface {
	Health() api.Health
	Status(ctx context.Context) (api.StatusResponse, error)
	Stream(ctx context.Context, local bool, emit func([]api.Event) error) error
	Nodes(ctx context.Context) ([]api.NodeInfo, error)
	TeamTool(ctx context.Context, ref, name string, input json.RawMessage) (api.TeamToolResult, error)
	Diff(ctx context.Context, target string, stat bool) (api.DiffResult, error)
	Merge(ctx context.Context, req api.MergeRequest) (api.MergeResult, error)
	Worktrees(ctx context.Context, prune bool) []api.WorktreeInfo
}

// Spending is the budgets and the usage report (package spend).
type Spending interface {
	Budgets() []api.Budget
	Budget(ref string) (api.Budget, error)
	SetBudget(ctx context.Context, ref string, req api.BudgetRequest) (api.Budget, error)
	Usage(ctx context.Context, q api.UsageQuery) (api.UsageReport, error)
}

// Answers is the recorded answers to what a task's worker asked (package
// notifier).
type Answers interface {
	Answers(ctx context.Context, pane string, task int64) []api.Answer
	WithAnswers(ctx context.Context, pane string, tasks []api.TaskInfo)
}

// Room mounts a room's routes on the API's mux; its handlers read a body
// with decode and answer with respond, as the API's own do.
type Room func(mux *http.ServeMux, decode func(*http.Request, any) error, respond func(http.ResponseWriter, any, error))

// Config is the API's make-up besides the daemon.
type Config struct {
	// Version, Home (the home's root) and Cluster (the cluster API's
	// address, if any) are told by health.
	Version, Home, Cluster string
	// BodyTimeout is the time a request's body has to arrive once its
	// header has (10s when 0).
	BodyTimeout time.Duration
	// Shutdown stops the supervisor (POST /api/shutdown), after the answer.
	Shutdown func()
	Spend    Spending
	Answers  Answers
	Views    Views
	Cicy     CicyPanes
	// Rooms mount the routes of the supervisor's rooms.
	Rooms []Room
	// Forward wraps the routes: a request for another node's pane is
	// passed on to it (package cluster).
	Forward func(http.Handler) http.Handler
}
