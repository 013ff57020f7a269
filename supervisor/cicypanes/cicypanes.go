package cicypanes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Core is what the cicy panes' API asks of the daemon.
type Core interface {
	// Agent is the turn loop of the cicy pane id names (a dormant one
	// woken); an error the API answers when the pane is not, or is not a
	// running, cicy pane.
	Agent(id string) (*cicy.Agent, error)
	// GuidanceFile is the id of the pane ref names and the path of its
	// guidance file (AGENTS.md, or CLAUDE.md for claude panes).
	GuidanceFile(ref string) (id, path string, err error)
}

// Panes answers the API's calls on cicy panes and on guidance files.
type Panes struct{ core Core }

// New is the cicy panes' API on core.
func New(core Core) *Panes { return &Panes{core: core} }

// Cancel stops the running turn of a cicy pane.
func (p *Panes) Cancel(id string) (bool, error) {
	a, err := p.core.Agent(id)
	if err != nil {
		return false, err
	}
	return a.Cancel(), nil
}

// Command runs /compact or /clear on a cicy pane and waits for it.
func (p *Panes) Command(ctx context.Context, id, cmd string) (*api.SendResult, error) {
	a, err := p.core.Agent(id)
	if err != nil {
		return nil, err
	}
	return Send(ctx, a, cmd, true)
}

// Events streams a cicy pane's events.
func (p *Panes) Events(id string) (<-chan cicy.Event, func(), error) {
	a, err := p.core.Agent(id)
	if err != nil {
		return nil, nil, err
	}
	ch, stop := a.Subscribe()
	return ch, stop, nil
}

// Send delivers a message to a cicy pane; with wait it blocks until the
// turn that handles it ends or ctx ends.
func Send(ctx context.Context, a *cicy.Agent, text string, wait bool) (*api.SendResult, error) {
	ch, err := a.Send(text, "", wait)
	if err != nil {
		return nil, api.Failedf("%v", err)
	}
	if !wait {
		return nil, nil
	}
	select {
	case r := <-ch:
		return sendResult(r), nil
	case <-ctx.Done():
		return nil, api.Failedf("timed out waiting for the turn to end; it goes on (see 'cicy-agent screen')")
	}
}

// sendResult is a turn's result as send --wait answers it. A turn whose
// history or usage was not written is failed, with its answer and why:
// a client that sees "completed" may trust that nothing waits in memory.
func sendResult(r cicy.TurnResult) *api.SendResult {
	res := &api.SendResult{Status: r.Status, Answer: r.Answer, Error: r.Error}
	if r.Unsaved == "" {
		return res
	}
	res.Unsaved = r.Unsaved
	if r.Status == cicy.TurnCompleted {
		res.Status, res.Error = cicy.TurnFailed, r.Unsaved
	} else {
		res.Error += "; " + r.Unsaved
	}
	return res
}

// Guidance reads a pane's guidance file.
func (p *Panes) Guidance(ref string) (api.GuidanceDoc, error) {
	id, path, err := p.core.GuidanceFile(ref)
	if err != nil {
		return api.GuidanceDoc{}, err
	}
	doc := api.GuidanceDoc{Scope: "agent", Name: id, Filename: filepath.Base(path), Path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("pane %s has no %s", id, doc.Filename)}
	}
	if err != nil {
		return doc, api.Failedf("read %s: %v", path, err)
	}
	doc.Content, doc.Exists = string(b), true
	return doc, nil
}

// SetGuidance replaces a pane's guidance file (atomically); a cicy pane's
// next turn carries it as its <role> block.
func (p *Panes) SetGuidance(ref, content string) (api.GuidanceDoc, error) {
	id, path, err := p.core.GuidanceFile(ref)
	if err != nil {
		return api.GuidanceDoc{}, err
	}
	// The workspace's own file (AGENTS.md, CLAUDE.md): readable, as
	// the project's files are.
	if err := atomicfile.Write(path, []byte(content), 0o644); err != nil {
		return api.GuidanceDoc{}, api.Failedf("%v", err)
	}
	return api.GuidanceDoc{Scope: "agent", Name: id, Filename: filepath.Base(path), Path: path, Exists: true, Saved: true}, nil
}

// Ledger is where a model call's usage is written (package spend's
// Accounts).
type Ledger interface {
	Record(ctx context.Context, row schema.UsageRow) error
}

// UsageSink records a cicy pane's model calls in the ledger.
type UsageSink struct{ Ledger Ledger }

// RecordUsage writes r as a usage row.
func (u UsageSink) RecordUsage(ctx context.Context, r cicy.UsageRecord) error {
	return u.Ledger.Record(ctx, schema.UsageRow{
		PaneID: r.PaneID, ConversationID: r.ConversationID, TurnID: r.TurnID, Aux: r.Aux, Model: r.Model,
		InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		CacheRead: r.Usage.CacheReadInputTokens, CacheCreation: r.Usage.CacheCreationInputTokens,
		LatencyMS: r.Latency.Milliseconds(),
	})
}

// ProviderWarning says why the new pane id, an agent with a turn loop,
// cannot make a model call (its provider's key is missing, say); it is ""
// when it can, or when the pane has no turn loop.
func (p *Panes) ProviderWarning(id string) string {
	a, err := p.core.Agent(id)
	if err != nil {
		return ""
	}
	if why := a.ProviderProblem(); why != "" {
		return fmt.Sprintf("%s cannot make a model call: %s (a running supervisor keeps the environment it was started with)", id, why)
	}
	return ""
}
