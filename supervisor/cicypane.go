package supervisor

import (
	"context"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/schema"
)

// usageSink stores a cicy pane's usage records in the database.
type usageSink struct{ store Store }

func (u usageSink) RecordUsage(ctx context.Context, r cicy.UsageRecord) error {
	return u.store.AddUsage(ctx, schema.UsageRow{
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
		Getenv: s.cfg.Getenv,
		Usage:  usageSink{s.store},
		Log:    s.log,
		Now:    time.Now,
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

// SendResult is the answer of `send --wait` and of compact/clear.
type SendResult struct {
	Status string `json:"status"`
	Answer string `json:"answer"`
	Error  string `json:"error,omitempty"`
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
