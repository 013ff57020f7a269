package supervisor

import (
	"context"
	"encoding/json"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/teamtools"
)

// The team tools live in supervisor/teamtools; this is their wiring: the
// team as the tools see it (teamSide), and the API's call.

// TeamToolDefs are the team tools a CLI master gets (teamtools.CLIDefs).
func TeamToolDefs() []wire.Tool { return teamtools.CLIDefs() }

// TeamTool runs one team tool for a master pane of this node
// (teamtools.Tools.Call).
func (s *Supervisor) TeamTool(ctx context.Context, ref, name string, input json.RawMessage) (api.TeamToolResult, error) {
	m, err := s.localPane(ref)
	if err != nil {
		return api.TeamToolResult{}, err
	}
	return s.team.Call(ctx, s.teamPane(m), name, input)
}

// newTeamTools makes the tools on the supervisor's registry, outbox and
// worktrees.
func newTeamTools(s *Supervisor) *teamtools.Tools {
	return teamtools.New(teamSide{s}, s.tasks, teamSide{s}, s.log)
}

// teamPane is a pane as the team tools see it.
func (s *Supervisor) teamPane(e *entry) teamtools.Pane {
	return teamtools.Pane{ID: e.cfg.ID, Title: e.cfg.Title, Role: e.cfg.Role, Master: s.masterOf(e)}
}

// teamSide is the supervisor as the team tools see it (teamtools.Team
// and teamtools.Work).
type teamSide struct{ s *Supervisor }

func (t teamSide) Resolve(ref string) (teamtools.Pane, error) {
	e, err := t.s.resolvePane(ref)
	if err != nil {
		return teamtools.Pane{}, err
	}
	return t.s.teamPane(e), nil
}

func (t teamSide) Local(id string) (teamtools.Pane, bool) {
	e, err := t.s.get(id)
	if err != nil {
		return teamtools.Pane{}, false
	}
	return t.s.teamPane(e), true
}

func (t teamSide) List(ctx context.Context) []api.PaneInfo { return t.s.List(ctx) }

func (t teamSide) Dispatch(ctx context.Context, from, to, text string) (schema.Task, error) {
	return t.s.Dispatch(ctx, from, to, text)
}

func (t teamSide) Tasks(ctx context.Context, id string) ([]schema.Task, error) {
	return t.s.store.ListTasks(ctx, id)
}

func (t teamSide) Task(ctx context.Context, id int64) (schema.Task, error) {
	return t.s.GetTask(ctx, id)
}

func (t teamSide) WaitTask(ctx context.Context, id int64) (schema.Task, error) {
	return t.s.WaitTask(ctx, id)
}

func (t teamSide) Owner(ctx context.Context, target string) (string, *schema.Task, error) {
	wt, err := t.s.trees.Resolve(ctx, target)
	return wt.Pane, wt.Task, err
}

func (t teamSide) Diff(ctx context.Context, target string, stat bool) (api.DiffResult, error) {
	return t.s.Diff(ctx, target, stat)
}

func (t teamSide) Merge(ctx context.Context, req api.MergeRequest) (api.MergeResult, error) {
	return t.s.Merge(ctx, req)
}
