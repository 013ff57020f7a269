package supervisor

import (
	"context"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/gitwork"
)

// The workers' worktrees live in supervisor/gitwork; this is its wiring:
// the supervisor as gitwork sees it (treesCore), and the API's calls.

// treesCore is the registry and the tasks as gitwork asks for them.
type treesCore struct{ s *Supervisor }

func (c treesCore) Pane(ref string) (gitwork.Pane, bool) {
	e, err := c.s.get(ref)
	if err != nil {
		return gitwork.Pane{}, false
	}
	return gitwork.Pane{Config: e.cfg, Seen: &e.work}, true
}

func (c treesCore) All() []gitwork.Pane {
	entries := c.s.entries()
	out := make([]gitwork.Pane, len(entries))
	for i, e := range entries {
		out[i] = gitwork.Pane{Config: e.cfg, Seen: &e.work}
	}
	return out
}

func (c treesCore) Workspace(ref string) (string, bool) {
	m, err := c.s.resolvePane(ref)
	if err != nil {
		return "", false
	}
	return m.cfg.Workspace, true
}

func (c treesCore) ID(ref string) (string, error) { return c.s.paneIDOf(ref) }

func (c treesCore) Elsewhere(ctx context.Context, id string) (string, bool) {
	row, ok := c.s.cl.Lookup(ctx, id)
	return row.Node, ok
}

func (c treesCore) Task(ctx context.Context, id int64) (schema.Task, error) {
	return c.s.GetTask(ctx, id)
}

func (c treesCore) SendBack(ctx context.Context, caller, pane, text string) (api.TaskInfo, error) {
	from := ""
	if caller != "" {
		from = c.s.callerMaster(caller)
	}
	t, err := c.s.Dispatch(ctx, from, pane, text)
	if err != nil {
		return api.TaskInfo{}, err
	}
	return c.s.taskInfo(t), nil
}

// Diff is the change of a task or a worker (gitwork.Keeper.Diff).
func (s *Supervisor) Diff(ctx context.Context, target string, stat bool) (api.DiffResult, error) {
	return s.trees.Diff(ctx, target, stat)
}

// Merge merges a task's commit or a worker's branch (gitwork.Keeper.Merge).
func (s *Supervisor) Merge(ctx context.Context, req api.MergeRequest) (api.MergeResult, error) {
	return s.trees.Merge(ctx, req)
}

// Worktrees lists the home's worktrees, pruned first with prune
// (gitwork.Keeper.List).
func (s *Supervisor) Worktrees(ctx context.Context, prune bool) []api.WorktreeInfo {
	return s.trees.List(ctx, prune)
}

// guidanceFile is where pane id's guidance file is (gitwork.GuidanceFile).
func (h Home) guidanceFile(id, typ, ws string, inWorktree bool) string {
	return gitwork.GuidanceFile(h.paneDir(id), typ, ws, inWorktree)
}

// paneGuidance is guidanceFile of an existing pane.
func (h Home) paneGuidance(cfg schema.Pane) string {
	return h.guidanceFile(cfg.ID, cfg.Type, cfg.Workspace, gitwork.InWorktree(cfg))
}
