package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Tasks: a master (or a person) dispatches a task to a worker; the outbox
// (package outbox) delivers it through the worker's pane-kind adapter,
// settles it and tells the master.

// TaskStore is what the outbox needs of the database.
type TaskStore interface {
	CreateTask(ctx context.Context, from, to, text, reason string) (schema.Task, error)
	GetTask(ctx context.Context, id int64) (schema.Task, error)
	ListTasks(ctx context.Context, pane string) ([]schema.Task, error)
	TasksIn(ctx context.Context, status string) ([]schema.Task, error)
	Unnotified(ctx context.Context) ([]schema.Task, error)
	MoveTask(ctx context.Context, id int64, ch schema.TaskChange) (bool, error)
	MarkNotified(ctx context.Context, id int64) error
}

// MaxTaskText bounds a task's text.
const MaxTaskText = 64 << 10

// callerMaster is the pane a command runs in, when it is a master (its
// dispatches come from it); "" otherwise.
func (s *Supervisor) callerMaster(caller string) string {
	e, err := s.resolvePane(caller)
	if err != nil || e.cfg.Role != topology.RoleMaster {
		return ""
	}
	return e.cfg.ID
}

// userSender is the from of a task dispatched by a person, not a master.
const userSender = "user"

// Dispatch validates and queues a task. from "" means the
// worker's master, or the user when it has none.
func (s *Supervisor) Dispatch(ctx context.Context, from, to, text string) (schema.Task, error) {
	if strings.TrimSpace(text) == "" {
		return schema.Task{}, api.Usagef("the task is empty")
	}
	if len(text) > MaxTaskText {
		return schema.Task{}, api.Usagef("the task is %d bytes; at most %d are accepted (put long input in a file and name it)", len(text), MaxTaskText)
	}
	if strings.ContainsRune(text, 0) {
		return schema.Task{}, api.Usagef("the task contains a NUL byte, which cannot be typed into a pane; remove it")
	}
	w, err := s.resolvePane(to)
	if err != nil {
		return schema.Task{}, err
	}
	switch {
	case w.cfg.Role == topology.RoleMaster:
		return schema.Task{}, api.Usagef("%s is a master; tasks go to workers", w.cfg.ID)
	case !topology.Tracked(w.cfg.Role):
		return schema.Task{}, api.Usagef("%s is untracked (role %q): tasks go to workers, whose completion is tracked; create it with --role worker", w.cfg.ID, w.cfg.Role)
	}
	if from == "" {
		from = userSender
		if m := s.masterOf(w); m != "" {
			from = m
		}
	} else {
		m, err := s.resolvePane(from)
		if err != nil {
			return schema.Task{}, err
		}
		if m.cfg.ID == w.cfg.ID {
			return schema.Task{}, api.Usagef("a pane cannot dispatch a task to itself")
		}
		if m.cfg.Role != topology.RoleMaster {
			return schema.Task{}, api.Usagef("--from %s is not a master (role %q)", m.cfg.ID, m.cfg.Role)
		}
		from = m.cfg.ID
	}
	t, err := s.store.CreateTask(ctx, from, w.cfg.ID, text, "queued until "+w.cfg.ID+" is idle")
	if err != nil {
		return schema.Task{}, err
	}
	s.tasks.Queued(t.ID)
	return t, nil
}

// resolvePane finds a pane by id or, failing that, by title: this node's,
// or another node's (an entry made from its row, for its config only).
func (s *Supervisor) resolvePane(ref string) (*entry, error) {
	if id, err := api.ParsePaneID(ref); err == nil {
		e, err := s.get(id)
		if err != nil {
			if row, ok := s.cl.Lookup(context.Background(), id); ok {
				return remoteEntry(row), nil
			}
		}
		return e, err
	}
	var found []*entry
	s.mu.Lock()
	for _, e := range s.panes {
		if e.cfg.Title == ref {
			found = append(found, e)
		}
	}
	s.mu.Unlock()
	for _, r := range s.cl.ByTitle(ref) {
		found = append(found, remoteEntry(r))
	}
	if len(found) == 1 {
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, e := range found {
		ids[i] = e.cfg.ID
	}
	return nil, titleErr(ref, ids)
}

// paneIDOf is the id of the pane ref names: an id as it is (a removed
// pane's too: its tasks and worktree outlive it), a title resolved as
// every command resolves one.
func (s *Supervisor) paneIDOf(ref string) (string, error) {
	if id, err := api.ParsePaneID(ref); err == nil || strings.HasPrefix(ref, "w-") {
		return id, err
	}
	e, err := s.resolvePane(ref)
	if err != nil {
		return "", err
	}
	return e.cfg.ID, nil
}

// remoteEntry is another node's pane as resolvePane returns it: its
// config, for checks; it runs nothing here.
func remoteEntry(r schema.Pane) *entry {
	e := newEntry(r, pane.Status{State: pane.Unreachable, Reason: "on node " + r.Node})
	e.elsewhere = r.Node
	return e
}

// localPane is resolvePane for what only the pane's own node can do here.
func (s *Supervisor) localPane(ref string) (*entry, error) {
	e, err := s.resolvePane(ref)
	if err == nil && e.elsewhere != "" {
		return nil, api.Failedf("pane %s runs on node %s: name it by id (%s) so that the request goes to its node", e.cfg.ID, e.elsewhere, e.cfg.ID)
	}
	return e, err
}

// masterOf is the master a worker reports to (recorded at its create), or "".
func (s *Supervisor) masterOf(w *entry) string {
	if w.cfg.Master.Valid {
		return w.cfg.Master.String
	}
	return ""
}

// CancelTask cancels a queued or delivered task; a delivered cicy task's
// running turn is cancelled too.
func (s *Supervisor) CancelTask(ctx context.Context, id int64) (schema.Task, error) {
	t, err := s.GetTask(ctx, id)
	if err != nil {
		return t, err
	}
	if api.Ended(t.Status) {
		return t, api.Failedf("task %d is already %s", id, t.Status)
	}
	// The outbox lets go of a cancelled delivered task: a cicy worker's
	// running turn is cancelled.
	s.tasks.Move(id, schema.TaskChange{From: t.Status, To: api.TaskCancelled, Reason: "cancelled by request"})
	return s.GetTask(ctx, id)
}

// GetTask returns one task.
func (s *Supervisor) GetTask(ctx context.Context, id int64) (schema.Task, error) {
	t, err := s.store.GetTask(ctx, id)
	if errors.Is(err, schema.ErrNotFound) {
		return t, &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no task %d (see 'cicy-agent tasks')", id)}
	}
	return t, err
}

// WaitTask blocks until the task ends or ctx does.
func (s *Supervisor) WaitTask(ctx context.Context, id int64) (schema.Task, error) {
	for {
		ch := s.tasks.Changes()
		t, err := s.GetTask(ctx, id)
		if err != nil || api.Ended(t.Status) {
			return t, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return t, nil
		}
	}
}
