package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
)

// usageSink records a cicy pane's model calls in the ledger.
type usageSink struct{ s *Supervisor }

func (u usageSink) RecordUsage(ctx context.Context, r cicy.UsageRecord) error {
	return u.s.spend.Record(ctx, schema.UsageRow{
		PaneID: r.PaneID, ConversationID: r.ConversationID, TurnID: r.TurnID, Aux: r.Aux, Model: r.Model,
		InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		CacheRead: r.Usage.CacheReadInputTokens, CacheCreation: r.Usage.CacheCreationInputTokens,
		LatencyMS: r.Latency.Milliseconds(),
	})
}

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
		Usage:    usageSink{s},
		Team:     s.team,
		OnStatus: func(cicy.Status) { s.tasks.PaneChanged(); s.paneChanged(id) },
		OnWrite:  func(err error) { s.disk.note("the history of "+id, err) },
		Log:      s.log,
		Now:      time.Now,
	})
	if err != nil {
		return nil, err
	}
	return &cicyKind{cfg: cfg, a: a, log: s.log.WithField("pane", id)}, nil
}

// agentOf returns the pane's turn loop, or an error when it has none.
func (s *Supervisor) agentOf(id string) (*entry, *cicy.Agent, error) {
	e, err := s.get(id)
	if err != nil {
		return nil, nil, err
	}
	if t, ok := s.awaken(e).(turnLoop); ok {
		return e, t.agent(), nil
	}
	if panetype.InProcess(e.cfg.Type) {
		return e, nil, api.Failedf("pane %s is not running (%s); 'cicy-agent restart %s' starts it again", e.cfg.ID, e.status().Reason, e.cfg.ID)
	}
	return e, nil, api.Usagef("pane %s is a %s pane; this works on cicy panes only", e.cfg.ID, e.cfg.Type)
}

// Cancel stops the running turn of a cicy pane.
func (s *Supervisor) Cancel(id string) (bool, error) {
	_, a, err := s.agentOf(id)
	if err != nil {
		return false, err
	}
	return a.Cancel(), nil
}

// Command runs /compact or /clear on a cicy pane and waits for it.
func (s *Supervisor) Command(ctx context.Context, id, cmd string) (*api.SendResult, error) {
	_, a, err := s.agentOf(id)
	if err != nil {
		return nil, err
	}
	return sendCicy(ctx, a, cmd, true)
}

// Events streams a cicy pane's events.
func (s *Supervisor) Events(id string) (<-chan cicy.Event, func(), error) {
	_, a, err := s.agentOf(id)
	if err != nil {
		return nil, nil, err
	}
	ch, stop := a.Subscribe()
	return ch, stop, nil
}

// guidancePath is a pane's AGENTS.md (or CLAUDE.md for claude panes).
func (s *Supervisor) guidancePath(id string) (*entry, string, error) {
	e, err := s.get(id)
	if err != nil {
		return nil, "", err
	}
	return e, s.cfg.Home.paneGuidance(e.cfg), nil
}

// Guidance reads a pane's guidance file.
func (s *Supervisor) Guidance(id string) (api.GuidanceDoc, error) {
	e, path, err := s.guidancePath(id)
	if err != nil {
		return api.GuidanceDoc{}, err
	}
	doc := api.GuidanceDoc{Scope: "agent", Name: e.cfg.ID, Filename: filepath.Base(path), Path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("pane %s has no %s", e.cfg.ID, doc.Filename)}
	}
	if err != nil {
		return doc, api.Failedf("read %s: %v", path, err)
	}
	doc.Content, doc.Exists = string(b), true
	return doc, nil
}

// SetGuidance replaces a pane's guidance file (atomically); a cicy pane's
// next turn carries it as its <role> block.
func (s *Supervisor) SetGuidance(id, content string) (api.GuidanceDoc, error) {
	e, path, err := s.guidancePath(id)
	if err != nil {
		return api.GuidanceDoc{}, err
	}
	// The workspace's own file (AGENTS.md, CLAUDE.md): readable, as
	// the project's files are.
	if err := atomicfile.Write(path, []byte(content), 0o644); err != nil {
		return api.GuidanceDoc{}, api.Failedf("%v", err)
	}
	return api.GuidanceDoc{Scope: "agent", Name: e.cfg.ID, Filename: filepath.Base(path), Path: path, Exists: true, Saved: true}, nil
}
