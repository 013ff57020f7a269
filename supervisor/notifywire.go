package supervisor

import (
	"context"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifier"
)

// The notifications (supervisor/notify/notifier) wired to the core: the
// team they watch and answer, the event stream they feed.

// startNotify starts the notifications, when the store keeps them.
func (s *Supervisor) startNotify(ctx context.Context, store Store) {
	ns, ok := store.(notifier.Store)
	if !ok {
		return
	}
	team := notifyTeam{s}
	n, err := notifier.New(ctx, notifier.Config{Node: s.cfg.Node, Root: s.cfg.Home.Root, Getenv: s.cfg.Getenv, Scrub: s.scrub.String,
		Log: s.log, Store: ns, Team: team, Hub: s.events})
	if err != nil {
		s.log.WithError(err).Error("Notifications could not start")
		return
	}
	s.notify = n // before the watch, which reads it
	n.Start()
}

// notifyTeam is the team as the notifier sees it (notifier.Team; its
// notifier.Hub is the event hub itself).
type notifyTeam struct{ *Supervisor }

func (t notifyTeam) StatusOf(ctx context.Context, panes []api.PaneInfo) (api.StatusResponse, error) {
	return t.events.Status(ctx, panes)
}

func (t notifyTeam) PaneID(ref string) (string, error) {
	e, err := t.get(ref)
	if err != nil {
		return "", err
	}
	return e.cfg.ID, nil
}
