package supervisor

import (
	"context"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// The team's event stream (supervisor/eventhub) wired to the core: what
// the core publishes, and the team the hub reads its events from.

// paneChanged publishes a pane's change (state, usage, creation, removal).
func (s *Supervisor) paneChanged(id string) { s.events.PaneChanged(id) }

// stateChanged publishes a terminal pane's state change.
func (s *Supervisor) stateChanged(id string) { s.events.StateChanged(id) }

// taskChanged publishes a task's change, and so the summary's.
func (s *Supervisor) taskChanged(id int64) { s.events.TaskChanged(id) }

// Stream calls emit with the snapshot, then with each batch of changes,
// until ctx ends or emit fails. With local, only this node's panes are in
// it (what the other nodes' peer watchers follow).
func (s *Supervisor) Stream(ctx context.Context, local bool, emit func([]api.Event) error) error {
	return s.events.Stream(ctx, local, emit)
}

// hubTeam is the team as the event hub reads it (eventhub.Team).
type hubTeam struct{ *Supervisor }

func (t hubTeam) LocalStatus(id string) (string, pane.Status, bool) {
	e, err := t.get(id)
	if err != nil {
		return "", pane.Status{}, false
	}
	return e.cfg.ID, e.status(), true
}

func (t hubTeam) LocalInfo(id string) (api.PaneInfo, bool) {
	e, err := t.get(id)
	if err != nil {
		return api.PaneInfo{}, false
	}
	return t.describe(e), true
}

func (t hubTeam) OtherNode(id string) (api.PaneInfo, bool) { return t.cl.Info(id) }
