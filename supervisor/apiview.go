package supervisor

import (
	"context"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/httpapi"
)

// The supervisor as its HTTP API (package httpapi) sees it: the methods
// the API asks for that the rest of the supervisor has no use for, and
// the API's form of a task.

var _ httpapi.Daemon = (*Supervisor)(nil)

// Health is what the API's health says of the supervisor itself: its
// gateway, node, default provider and what needs a person about its home.
func (s *Supervisor) Health() api.Health {
	return api.Health{Gateway: s.GatewayURL(), Node: s.cfg.Node, Provider: s.cfg.Getenv("CICY_PROVIDER"), NeedsYou: s.homeNeeds()}
}

// ListTasks is the tasks to or from a pane (every task when pane is "").
func (s *Supervisor) ListTasks(ctx context.Context, pane string) ([]schema.Task, error) {
	return s.store.ListTasks(ctx, pane)
}

// TaskInfo is a task as the API gives it, with the nodes of its worker
// and sender.
func (s *Supervisor) TaskInfo(t schema.Task) api.TaskInfo { return s.taskInfo(t) }

// CallerMaster is the pane a command runs in, when it is a master (its
// dispatches come from it); "" otherwise.
func (s *Supervisor) CallerMaster(caller string) string { return s.callerMaster(caller) }

// PaneIDOf is the id of the pane ref names: an id as it is, a title
// resolved as every command resolves one.
func (s *Supervisor) PaneIDOf(ref string) (string, error) { return s.paneIDOf(ref) }

func optTime(s string, valid bool) *time.Time {
	if !valid {
		return nil
	}
	t := schema.ParseTime(s)
	return &t
}

func taskInfo(t schema.Task) api.TaskInfo {
	ti := api.TaskInfo{
		ID: t.ID, From: t.From, To: t.To, Text: t.Text, Status: t.Status, Result: t.Result, Error: t.Error,
		Reason: t.Reason, Source: t.Source, CreatedAt: schema.ParseTime(t.CreatedAt), Attempts: t.Attempts,
		DeliveredAt: optTime(t.DeliveredAt.String, t.DeliveredAt.Valid),
		FinishedAt:  optTime(t.FinishedAt.String, t.FinishedAt.Valid),
		NotifiedAt:  optTime(t.NotifiedAt.String, t.NotifiedAt.Valid),
	}
	if t.Branch != "" {
		w := t.Work
		ti.Work = &w
	}
	return ti
}

// taskInfo is taskInfo with the nodes of the task's worker and sender.
func (s *Supervisor) taskInfo(t schema.Task) api.TaskInfo {
	ti := taskInfo(t)
	ti.ToNode, ti.FromNode = s.nodeOf(t.To), s.nodeOf(t.From)
	return ti
}

// nodeOf is the node of a pane ("" when no node has it).
func (s *Supervisor) nodeOf(id string) string {
	if s.isLocal(id) {
		return s.cfg.Node
	}
	return s.cl.NodeOf(id)
}

// attachable is a pane whose program may run on a PTY of ours.
type attachable interface{ attachable() (*pane.PTY, bool) }

// PTY is the PTY a viewer attaches to, or why there is none.
func (s *Supervisor) PTY(id string) (*pane.PTY, error) {
	e, err := s.get(id)
	if err != nil {
		return nil, err
	}
	k := e.kind()
	t, ok := k.(attachable)
	if !ok {
		if st := k.Status(); !st.Running() {
			return nil, api.Failedf("pane %s is not running (%s); 'cicy-agent restart %s' starts it again", e.cfg.ID, st.Reason, e.cfg.ID)
		}
		return nil, api.Usagef("pane %s is a %s pane: it has no terminal; follow it with 'cicy-agent screen %s'", e.cfg.ID, e.cfg.Type, e.cfg.ID)
	}
	p, ok := t.attachable()
	if !ok {
		return nil, api.Usagef("pane %s runs in tmux: attach with %s", e.cfg.ID, strings.Join(s.tmux.AttachCommand(e.cfg.ID), " "))
	}
	return p, nil
}
