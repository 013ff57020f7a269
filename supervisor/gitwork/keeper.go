package gitwork

import (
	"context"
	"path/filepath"
	"sync/atomic"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/worktree"
)

// Pane is one pane of this node's registry as the worktrees see it: its
// row, and where what ls shows of its worktree is kept.
type Pane struct {
	Config schema.Pane
	Seen   *Seen
}

// Panes is what the worktrees need of the supervisor's registry.
type Panes interface {
	// Pane is this node's pane ref names (an id or a title); false when
	// it has none.
	Pane(ref string) (Pane, bool)
	// All is this node's panes, in id order.
	All() []Pane
	// Workspace is the workspace of the pane ref names, of any node
	// (a create's --master); false when there is none.
	Workspace(ref string) (string, bool)
	// ID is the id of the pane ref names, or the API error that says why
	// there is none.
	ID(ref string) (string, error)
	// Elsewhere is the node another node's pane id runs on; false when
	// no other node has it.
	Elsewhere(ctx context.Context, id string) (node string, ok bool)
}

// Tasks is what the worktrees need of the supervisor's tasks.
type Tasks interface {
	// Task is task id, the API error when there is none.
	Task(ctx context.Context, id int64) (schema.Task, error)
	// SendBack dispatches text to pane as a task from caller's master
	// (from nobody when caller is ""): a merge's conflict sent back.
	SendBack(ctx context.Context, caller, pane, text string) (api.TaskInfo, error)
}

// Store is what the worktrees read of the database.
type Store interface {
	// LastWork is the work recorded with pane's last task that left one.
	LastWork(ctx context.Context, pane string) (api.Work, bool, error)
	// ListTasks is pane's tasks ("" for all).
	ListTasks(ctx context.Context, pane string) ([]schema.Task, error)
}

// Config is what a Keeper is made with.
type Config struct {
	// Root is the home's folder: its worktree tag and its list of
	// repositories are there.
	Root string
	// Workspaces is the folder of the home's default workspaces (one per
	// pane id).
	Workspaces string
	// Spares is the folder of the spare worktrees.
	Spares string
	Log    *logrus.Entry
	Panes  Panes
	Tasks  Tasks
	Store  Store
}

// Keeper keeps the home's workers' worktrees: made, checked out again,
// committed at a task's end, measured, merged and removed.
type Keeper struct {
	// Git runs git (its LockWait bounds a commit's wait for a lock: a
	// minute). Exported for one test in another package: the
	// supervisor's TestWorktreeCommitLock shortens LockWait to see a task
	// fail on a held lock end to end; nothing else sets it.
	Git    worktree.Git
	root   string
	wsDir  string
	log    *logrus.Entry
	panes  Panes
	tasks  Tasks
	store  Store
	spares *Spares
}

// New is the keeper of the worktrees of the home cfg describes; Close
// stops the spares it makes in the background.
func New(cfg Config) *Keeper {
	k := &Keeper{root: cfg.Root, wsDir: cfg.Workspaces, log: cfg.Log,
		panes: cfg.Panes, tasks: cfg.Tasks, store: cfg.Store}
	k.spares = newSpares(k.Git, cfg.Spares, cfg.Log)
	return k
}

// Close stops making spares and waits for the ones being made.
func (k *Keeper) Close() { k.spares.close() }

// Spares is the keeper's spare worktrees. Only the supervisor's tests
// and benchmarks call it (spares_test.go, worktree_bench_test.go): they
// make worktrees through the whole supervisor, so they shorten Settle and
// find a spare's folder, mark and state (Key, Path, Mark, Idle) here.
func (k *Keeper) Spares() *Spares { return k.spares }

// workspace is pane id's default workspace.
func (k *Keeper) workspace(id string) string { return filepath.Join(k.wsDir, id) }

// Seen is what ls shows of one pane's worktree, read from git when asked
// and workStale old, or again after a task or merge changed it; the core
// keeps one with each pane.
type Seen struct{ p atomic.Pointer[workRead] }

// Forget drops what was read: the next look reads git again.
func (s *Seen) Forget() { s.p.Store(nil) }
