package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Native completion signals of CLI agents (see docs/hooks.md): Claude Code and Codex
// hooks, Codex notify and opencode plugin events all run `cicy-agent
// hook`, which posts them here. Each may set the pane's state (reason
// "hook:<event>"), confirm that a typed task was submitted, or end a turn
// with the agent's last message, which becomes the task's result.

// hookLog is what an agent pane's signals have said; guarded by mu.
type hookLog struct {
	mu     sync.Mutex
	prompt time.Time // last prompt submitted
	end    time.Time // last turn end
	result string
	failed string
	// failedBy is where failed came from: the agent's hook, or the
	// gateway refusing its request for the budget.
	failedBy string
	lastSeen time.Time
	// The state the last signal that set one gave, and why.
	state  pane.State
	reason string
	// lastEvent is the agent/event of the last signal applied.
	lastEvent string
	// ignored is the last signal whose meaning was to ignore it, for
	// explain.
	ignored *api.HookIgnored
}

// ignore notes a signal whose meaning was to ignore it.
func (h *hookLog) ignore(req api.HookRequest, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ignored = &api.HookIgnored{Event: req.Agent + "/" + req.Event, At: req.At, Why: why}
}

// record notes what the signal req meant; false when it is older than
// the last one.
func (h *hookLog) record(eff cliagent.Effect, req api.HookRequest) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if req.At.Before(h.lastSeen) {
		return false
	}
	h.lastSeen, h.lastEvent = req.At, req.Agent+"/"+req.Event
	if eff.Prompt {
		h.prompt = req.At
	}
	if eff.End && !h.keepsFailure(eff) {
		h.end, h.result, h.failed, h.failedBy = req.At, eff.Result, eff.Failed, schema.SourceHook
	}
	if eff.State != "" {
		h.state, h.reason = eff.State, "hook:"+req.Event
	}
	return true
}

// keepsFailure reports whether a plain turn end must not replace the
// failure that already ended the same turn (no prompt since): opencode
// sends session.error, then session.idle with the last text it saw, an
// earlier turn's. The caller holds mu.
func (h *hookLog) keepsFailure(eff cliagent.Effect) bool {
	return h.failed != "" && eff.Failed == "" && !h.end.Before(h.prompt)
}

// refused ends the current turn as failed with why: the gateway refused
// its model request. The agent's own later plain end does not undo it
// (keepsFailure); a failure it signals replaces it.
func (h *hookLog) refused(at time.Time, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.end, h.result, h.failed, h.failedBy = at, "", why, schema.SourceGateway
}

// lastState is the state the latest signal set, if any did.
func (h *hookLog) lastState() (pane.State, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state, h.reason
}

// turnEnd is the last turn end at or after since, if any.
func (h *hookLog) turnEnd(since time.Time) (hookEnd, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.end.IsZero() || h.end.Before(since) {
		return hookEnd{}, false
	}
	return hookEnd{at: h.end, result: h.result, failed: h.failed, failedBy: h.failedBy}, true
}

// hookEnd is a turn end the hooks (or a budget refusal) told.
type hookEnd struct {
	at                       time.Time
	result, failed, failedBy string
}

func (h *hookLog) promptSince(since time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.prompt.IsZero() && !h.prompt.Before(since)
}

// lastPrompt is when the agent's last prompt was submitted; zero before
// any.
func (h *hookLog) lastPrompt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.prompt
}

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
	if req.Agent == "" {
		req.Agent = e.cfg.Type
	}
	if req.At.IsZero() || req.At.After(time.Now()) {
		req.At = time.Now()
	}
	if sid := cliagent.Session(req.Agent, req.Event, req.Payload); sid != "" {
		s.recordSession(ctx, e, sid, req.At)
	}
	eff := cliagent.Interpret(req.Agent, req.Event, req.Payload)
	// An agent's error may quote its upstream, which may echo the key.
	eff.Result, eff.Failed = s.scrub.String(eff.Result), s.scrub.String(eff.Failed)
	log := s.log.WithFields(map[string]any{"pane": e.cfg.ID, "hook": req.Agent + "/" + req.Event})
	if eff.Ignored != "" {
		log.Debug("Hook ignored: " + eff.Ignored)
		e.hooks.ignore(req, eff.Ignored)
		return api.HookResult{Ignored: eff.Ignored}, nil
	}
	res := api.HookResult{}
	if eff.State != "" {
		res.State, res.Reason = string(eff.State), "hook:"+req.Event
	}
	recorded, pending := s.recordHook(e, eff, req)
	if !recorded {
		// Hooks run as separate processes and may arrive out of order
		// (opencode's busy after its idle): an older one changes nothing.
		log.Debug("Hook older than the last one applied; ignored")
		return api.HookResult{Ignored: "older than the last signal of this pane"}, nil
	}
	if pending {
		// Create applies it once the pane's process is registered.
		log.WithField("state", res.State).Debug("Hook kept for the pane being started")
		return res, nil
	}
	if eff.State != "" {
		e.op.Lock()
		e.applyHookState()
		e.op.Unlock()
	}
	log.WithField("state", res.State).Debug("Hook applied")
	s.tasks.PaneChanged() // a turn-end hook may settle a delivered task
	return res, nil
}

// recordHook notes a signal in the pane's hook log. pending is true while
// Create is still starting the pane: it is recorded under s.mu, so Create,
// which takes the pane out of s.starting under s.mu before it applies the
// log's state, cannot miss it.
func (s *Supervisor) recordHook(e *entry, eff cliagent.Effect, req api.HookRequest) (recorded, pending bool) {
	s.mu.Lock()
	if s.starting[e.cfg.ID] == e {
		defer s.mu.Unlock()
		return e.hooks.record(eff, req), true
	}
	s.mu.Unlock()
	return e.hooks.record(eff, req), false
}

// applyHookState gives the pane's process the state its latest hook set.
// Always the latest, not the caller's own: hooks racing for e.op then
// still end on the newest signal. The caller holds e.op.
func (e *entry) applyHookState() {
	st, reason := e.hooks.lastState()
	if t, ok := e.kind().(hookTarget); ok && st != "" {
		t.SetState(st, reason)
	}
}

// HookSpool is where `cicy-agent hook` keeps signals while no supervisor
// runs; the next one replays them at start.
func (h Home) HookSpool() string { return h.path("run", "hooks") }

// SpoolHook appends a signal to the pane's spool file (one JSON line; a
// small O_APPEND write is atomic against other hooks).
func SpoolHook(h Home, id string, req api.HookRequest) error {
	if err := os.MkdirAll(h.HookSpool(), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", h.HookSpool(), err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode the hook: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(h.HookSpool(), id+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open the hook spool: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write the hook spool: %w", err)
	}
	return nil
}

// replayHooks applies the signals spooled while no supervisor ran, in
// order, and removes them.
func (s *Supervisor) replayHooks() {
	dir := s.cfg.Home.HookSpool()
	files, _ := filepath.Glob(filepath.Join(dir, "w-*.jsonl"))
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		taken := f + ".replaying"
		if err := os.Rename(f, taken); err != nil {
			continue
		}
		fh, err := os.Open(taken)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		n := 0
		for sc.Scan() {
			var req api.HookRequest
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				continue
			}
			if _, err := s.Hook(context.Background(), id, req); err == nil {
				n++
			}
		}
		fh.Close()
		os.Remove(taken)
		s.log.WithFields(map[string]any{"pane": id, "hooks": n}).Info("Replayed the hooks spooled while no supervisor ran")
	}
}
