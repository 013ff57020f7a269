package supervisor

import (
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cicypanes"
)

// A cicy pane's turn loop started (startAgent), and the registry as the
// cicy panes' API (supervisor/cicypanes) sees it: a pane's turn loop, a
// pane's guidance file.

// startAgent runs a cicy pane's turn loop, restoring its conversation.
func (s *Supervisor) startAgent(cfg schema.Pane) (kind, error) {
	id := cfg.ID
	a, err := cicy.Start(cicy.PaneConfig{
		ID: id, Workspace: cfg.Workspace, RoleTemplate: cfg.RoleTemplate, Guidance: s.cfg.Home.paneGuidance(cfg),
		Provider: cfg.Provider, Model: cfg.Model,
	}, cicy.Env{
		Home: s.cfg.Home.Root,
		NewProvider: func(name string) (cicy.Provider, error) {
			p, err := s.providers.New(name)
			if err != nil {
				return nil, err
			}
			return s.spend.Budgeted(p, id, name), nil
		},
		Getenv:   s.cfg.Getenv,
		Scrub:    s.scrub.Bytes,
		Usage:    cicypanes.UsageSink{Ledger: s.spend},
		Team:     s.team,
		OnStatus: func(cicy.Status) { s.tasks.PaneChanged(); s.paneChanged(id) },
		OnWrite:  func(err error) { s.disk.Note("the history of "+id, err) },
		Log:      s.log,
		Now:      time.Now,
	})
	if err != nil {
		return nil, err
	}
	return &cicyKind{cfg: cfg, a: a, log: s.log.WithField("pane", id)}, nil
}

// cicyCore is the registry as the cicy panes' API sees it (cicypanes.Core).
type cicyCore struct{ *Supervisor }

// Agent is the pane's turn loop, or an error when it has none.
func (c cicyCore) Agent(id string) (*cicy.Agent, error) {
	e, err := c.get(id)
	if err != nil {
		return nil, err
	}
	if t, ok := c.awaken(e).(turnLoop); ok {
		return t.agent(), nil
	}
	if panetype.InProcess(e.cfg.Type) {
		return nil, api.Failedf("pane %s is not running (%s); 'cicy-agent restart %s' starts it again", e.cfg.ID, e.status().Reason, e.cfg.ID)
	}
	return nil, api.Usagef("pane %s is a %s pane; this works on cicy panes only", e.cfg.ID, e.cfg.Type)
}

// GuidanceFile is a pane's AGENTS.md (or CLAUDE.md for claude panes).
func (c cicyCore) GuidanceFile(ref string) (string, string, error) {
	e, err := c.get(ref)
	if err != nil {
		return "", "", err
	}
	return e.cfg.ID, c.cfg.Home.paneGuidance(e.cfg), nil
}
