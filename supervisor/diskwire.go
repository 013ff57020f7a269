package supervisor

import (
	"context"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The disk-full watch (supervisor/diskwatch) wired to the core: the home
// it tells of, the database's writes it is told.

// Home is what needs a person about the home as a whole.
func (s *Supervisor) Home() api.HomeInfo {
	h := api.HomeInfo{DiskFull: s.disk.Reason(), Node: s.cfg.Node, CameBack: s.back.Summary()}
	h.Notify = s.notify.States(context.Background())
	return h
}

// homeNeeds is the home's part of needs-you (for health).
func (s *Supervisor) homeNeeds() []topology.Attention { return s.Home().Needs() }

// databaseWrote is told every write to the database: one refused for
// lack of space (a dispatch, a pane's runtime) makes the home need you
// until a write succeeds, which a retry tries on the timer.
func (s *Supervisor) databaseWrote(err error) {
	if !cicy.IsDiskFull(err) {
		s.disk.Note("the database", err)
		return
	}
	s.disk.Retry("the database", err, func() error {
		return s.store.SetSetting(context.Background(), "disk_probe", schema.Now())
	})
}
