package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// usageSink stores a cicy pane's usage records in the database and counts
// them for the pane's totals.
type usageSink struct{ s *Supervisor }

func (u usageSink) RecordUsage(ctx context.Context, r cicy.UsageRecord) error {
	u.s.addUsage(r.PaneID, r.Model, schema.UsageTotal{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		CacheRead: r.Usage.CacheReadInputTokens, CacheCreation: r.Usage.CacheCreationInputTokens})
	return u.s.store.AddUsage(ctx, schema.UsageRow{
		PaneID: r.PaneID, ConversationID: r.ConversationID, TurnID: r.TurnID, Aux: r.Aux, Model: r.Model,
		InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		CacheRead: r.Usage.CacheReadInputTokens, CacheCreation: r.Usage.CacheCreationInputTokens,
		LatencyMS: r.Latency.Milliseconds(),
	})
}

// startAgent runs a cicy pane's turn loop, restoring its conversation.
func (s *Supervisor) startAgent(e *entry) error {
	a, err := cicy.Start(cicy.PaneConfig{
		ID: e.cfg.ID, Workspace: e.cfg.Workspace, RoleTemplate: e.cfg.RoleTemplate,
		Provider: e.cfg.Provider, Model: e.cfg.Model,
	}, cicy.Env{
		Home: s.cfg.Home.Root,
		NewProvider: func(name string) (cicy.Provider, error) {
			p, err := s.providers.New(name)
			if err != nil {
				return nil, err
			}
			return p, nil
		},
		Getenv:   s.cfg.Getenv,
		Usage:    usageSink{s},
		Team:     teamTools{s},
		OnStatus: func(pane.Status) { s.tasks.paneKick(); s.paneChanged(e.cfg.ID) },
		Log:      s.log,
		Now:      time.Now,
	})
	if err != nil {
		return err
	}
	e.agent = a
	return nil
}

// agentOf returns the pane's turn loop, or an error when it is not a cicy
// pane.
func (s *Supervisor) agentOf(id string) (*entry, *cicy.Agent, error) {
	e, err := s.get(id)
	if err != nil {
		return nil, nil, err
	}
	e.op.Lock()
	a := e.agent
	e.op.Unlock()
	if a == nil {
		return e, nil, usageErr("pane %s is a %s pane; this works on cicy panes only", e.cfg.ID, e.cfg.Type)
	}
	return e, a, nil
}

// sendCicy delivers a message to a cicy pane; with wait it blocks until
// the turn that handles it ends or ctx ends.
func (s *Supervisor) sendCicy(ctx context.Context, a *cicy.Agent, text string, wait bool) (*SendResult, error) {
	ch, err := a.Send(text, "", wait)
	if err != nil {
		return nil, failedErr("%v", err)
	}
	if !wait {
		return nil, nil
	}
	select {
	case r := <-ch:
		return &SendResult{Status: r.Status, Answer: r.Answer, Error: r.Error}, nil
	case <-ctx.Done():
		return nil, failedErr("timed out waiting for the turn to end; it goes on (see 'cicy-agent screen')")
	}
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
func (s *Supervisor) Command(ctx context.Context, id, cmd string) (*SendResult, error) {
	_, a, err := s.agentOf(id)
	if err != nil {
		return nil, err
	}
	return s.sendCicy(ctx, a, cmd, true)
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
	return e, filepath.Join(e.cfg.Workspace, cicy.GuidanceFile(e.cfg.Type)), nil
}

// Guidance reads a pane's guidance file.
func (s *Supervisor) Guidance(id string) (GuidanceDoc, error) {
	e, path, err := s.guidancePath(id)
	if err != nil {
		return GuidanceDoc{}, err
	}
	doc := GuidanceDoc{Scope: "agent", Name: e.cfg.ID, Filename: filepath.Base(path), Path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, &Error{Kind: KindNotFound, Message: fmt.Sprintf("pane %s has no %s", e.cfg.ID, doc.Filename)}
	}
	if err != nil {
		return doc, failedErr("read %s: %v", path, err)
	}
	doc.Content, doc.Exists = string(b), true
	return doc, nil
}

// SetGuidance replaces a pane's guidance file (atomically); a cicy pane's
// next turn carries it as its <role> block.
func (s *Supervisor) SetGuidance(id, content string) (GuidanceDoc, error) {
	e, path, err := s.guidancePath(id)
	if err != nil {
		return GuidanceDoc{}, err
	}
	// The workspace's own file (AGENTS.md, CLAUDE.md): readable, as
	// the project's files are.
	if err := atomicfile.Write(path, []byte(content), 0o644); err != nil {
		return GuidanceDoc{}, failedErr("%v", err)
	}
	return GuidanceDoc{Scope: "agent", Name: e.cfg.ID, Filename: filepath.Base(path), Path: path, Exists: true, Saved: true}, nil
}
