package supervisor

import (
	"context"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/agentpane"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
	"github.com/cicy-ai/cicy-agent/supervisor/newpane"
	"github.com/cicy-ai/cicy-agent/supervisor/signals"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The wiring of a CLI agent pane's signals (package signals): its hooks,
// the gateway's requests and answers, its session id, each kept in the
// pane's entry across restarts of its program.

// Hook applies one signal of a CLI agent pane.
func (s *Supervisor) Hook(ctx context.Context, id string, req api.HookRequest) (api.HookResult, error) {
	id, err := api.ParsePaneID(id)
	if err != nil {
		return api.HookResult{}, err
	}
	e, ok := s.live(id)
	if !ok {
		return api.HookResult{}, api.PaneNotFound(id)
	}
	if !panetype.IsAgent(e.cfg.Type) {
		return api.HookResult{}, api.Usagef("pane %s is a %s pane; hooks come from %s panes", e.cfg.ID, e.cfg.Type, topology.List(panetype.Agents(), "and"))
	}
	log := s.log.WithField("pane", e.cfg.ID)
	return signals.Apply(ctx, hookPane{s, e}, e.cfg.Type, req, s.scrub.String, log), nil
}

// hookPane is an entry as the signal applied to it sees it.
type hookPane struct {
	s *Supervisor
	e *entry
}

func (p hookPane) Hooks() *signals.Hooks { return &p.e.hooks }
func (p hookPane) Changed()              { p.s.tasks.PaneChanged() }

func (p hookPane) RecordSession(ctx context.Context, id string, at time.Time) {
	p.e.session.Record(ctx, p.s.store, p.s.log, p.e.cfg.ID, id, at)
}

// Record notes a signal in the pane's hook log. pending is true while
// Create is still starting the pane: it is recorded under s.mu, so Create,
// which takes the pane out of s.starting under s.mu before it applies the
// log's state, cannot miss it.
func (p hookPane) Record(eff cliagent.Effect, req api.HookRequest) (recorded, pending bool) {
	s, e := p.s, p.e
	s.mu.Lock()
	if s.starting[e.cfg.ID] == e {
		defer s.mu.Unlock()
		return e.hooks.Record(eff, req), true
	}
	s.mu.Unlock()
	return e.hooks.Record(eff, req), false
}

func (p hookPane) ApplyState() {
	p.e.op.Lock()
	defer p.e.op.Unlock()
	p.e.applyHookState()
}

// applyHookState gives the pane's process the state its latest hook set.
// Always the latest, not the caller's own: hooks racing for e.op then
// still end on the newest signal. The caller holds e.op.
func (e *entry) applyHookState() {
	st, reason := e.hooks.LastState()
	if t, ok := e.kind().(hookTarget); ok && st != "" {
		t.SetState(st, reason)
	}
}

// HookSpool is where `cicy-agent hook` keeps signals while no supervisor
// runs; the next one replays them at start.
func (h Home) HookSpool() string { return h.path("run", "hooks") }

// SpoolHook appends a signal to the pane's spool file (signals.Spool).
func SpoolHook(h Home, id string, req api.HookRequest) error {
	return signals.Spool(h.HookSpool(), id, req)
}

// replayHooks applies the signals spooled while no supervisor ran, in
// order, and removes them.
func (s *Supervisor) replayHooks() {
	signals.Replay(s.cfg.Home.HookSpool(), func(id string, req api.HookRequest) error {
		_, err := s.Hook(context.Background(), id, req)
		return err
	}, s.log)
}

// requestTarget is a pane whose state the gateway's requests in flight
// move: a CLI agent's terminal.
type requestTarget interface {
	RequestsChanged()
}

var (
	_ requestTarget = (*cliKind)(nil)
	_ requestTarget = (*pane.PTY)(nil)
	_ requestTarget = (*pane.TmuxPane)(nil)
)

// RequestStarted hears from the gateway that a main-loop model request of
// the pane began. It never blocks; a pane that is gone, or not a CLI agent,
// is ignored.
func (s *Supervisor) RequestStarted(id string) { s.requestsChanged(id, 1) }

// RequestEnded hears from the gateway that a main-loop model request of
// the pane ended, and how (wire.go): the answer is recorded before the
// count drops, so whoever sees no request in flight sees the answer.
func (s *Supervisor) RequestEnded(id string, a gateway.Answer) {
	if e, ok := s.live(id); ok && panetype.IsAgent(e.cfg.Type) {
		a.Text, a.Error = s.scrub.String(a.Text), s.scrub.String(a.Error)
		if e.answers.Note(a) {
			s.paneChanged(id) // needs you (upstream), or no longer
		}
	}
	s.requestsChanged(id, -1)
}

func (s *Supervisor) requestsChanged(id string, delta int64) {
	e, ok := s.live(id)
	if !ok || !panetype.IsAgent(e.cfg.Type) {
		return
	}
	e.requests.Change(delta)
	e.wakeRequests()
}

// wakeRequests tells the pane's terminal that its count of requests in
// flight changed; a pane not running a CLI agent has none to tell.
func (e *entry) wakeRequests() {
	if t, ok := e.kind().(requestTarget); ok {
		t.RequestsChanged()
	}
}

// RequestsChanged tells the agent's terminal that its requests in flight
// changed.
func (p *cliKind) RequestsChanged() {
	if t, ok := p.proc.(requestTarget); ok {
		t.RequestsChanged()
	}
}

// Describe adds the state signals of the agent: its requests in flight and
// how often its signals disagreed.
func (p *cliKind) Describe(pi *api.PaneInfo) {
	pi.Signals = signals.Info(p.proc.Status().Signals)
}

// Answer answers pane id's dialog, restarts it, types a reply or returns
// its screen (agentpane.Answer). A refusal because the pane does not wait
// for that answer is a *agentpane.NotWaitingError.
func (s *Supervisor) Answer(ctx context.Context, id string, req api.AnswerRequest) (api.AnswerResult, error) {
	return agentpane.Answer(ctx, answerRegistry{s}, s.notify, s.log, id, req)
}

// answerRegistry is the registry as answering a pane sees it.
type answerRegistry struct{ s *Supervisor }

func (r answerRegistry) AnswerPane(id string) (agentpane.Pane, error) {
	e, err := r.s.get(id)
	if err != nil {
		return nil, err
	}
	return answerPane{e}, nil
}

func (r answerRegistry) Screen(id string) (string, string, error) {
	sc, err := r.s.Screen(id, 0)
	return sc.State, sc.Screen, err
}

func (r answerRegistry) Restart(ctx context.Context, id string) error {
	return r.s.RestartPane(ctx, id, false)
}

// answerPane is an entry as answering it sees it.
type answerPane struct{ e *entry }

func (p answerPane) ID() string                 { return p.e.cfg.ID }
func (p answerPane) Type() string               { return p.e.cfg.Type }
func (p answerPane) Program() agentpane.Program { return p.e.kind() }

func (p answerPane) Locked(f func(agentpane.Program, *agentpane.Mark) error) error {
	p.e.op.Lock()
	defer p.e.op.Unlock()
	return f(p.e.kind(), &p.e.answered)
}

// prepareAgent seeds a CLI agent's config folder and returns its command
// line and extra environment (agentpane.Prepare).
func (s *Supervisor) prepareAgent(cfg schema.Pane, extra []string, resume string) (argv, env []string, err error) {
	pc := newpane.ParseConfig(cfg.Config)
	l := agentpane.Launch{Pane: cfg, Extra: extra, Resume: resume, Dir: s.cfg.Home.paneDir(cfg.ID), Shared: s.cfg.Home.paneDir("shared"),
		AllowAll: pc.AllowAll, Gateway: s.paneGatewayURL(), Home: s.cfg.Home.Root, Getenv: s.cfg.Getenv,
		Token: func() (string, error) { return s.newPaneToken(context.Background(), cfg.ID) }}
	if pc.Worktree != nil {
		l.Guidance = s.cfg.Home.paneGuidance(cfg)
	}
	if cfg.Role == topology.RoleMaster {
		for _, t := range TeamToolDefs() {
			l.TeamTools = append(l.TeamTools, t.Name)
		}
	}
	return agentpane.Prepare(l)
}

// paneDir is a pane's own folder for its agent's configuration.
func (h Home) paneDir(id string) string { return h.path("panes", id) }
