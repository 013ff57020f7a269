package signals

import (
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// Native completion signals of CLI agents (see docs/hooks.md): Claude Code and Codex
// hooks, Codex notify and opencode plugin events all run `cicy-agent
// hook`, which posts them to the supervisor. Each may set the pane's state
// (reason "hook:<event>"), confirm that a typed task was submitted, or end
// a turn with the agent's last message, which becomes the task's result.

// Hooks is what an agent pane's signals have said; guarded by mu. The
// zero value is empty and ready.
type Hooks struct {
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
func (h *Hooks) ignore(req api.HookRequest, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ignored = &api.HookIgnored{Event: req.Agent + "/" + req.Event, At: req.At, Why: why}
}

// Record notes what the signal req meant; false when it is older than
// the last one.
func (h *Hooks) Record(eff cliagent.Effect, req api.HookRequest) bool {
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
func (h *Hooks) keepsFailure(eff cliagent.Effect) bool {
	return h.failed != "" && eff.Failed == "" && !h.end.Before(h.prompt)
}

// Refused ends the current turn as failed with why: the gateway refused
// its model request. The agent's own later plain end does not undo it
// (keepsFailure); a failure it signals replaces it.
func (h *Hooks) Refused(at time.Time, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.end, h.result, h.failed, h.failedBy = at, "", why, schema.SourceGateway
}

// LastState is the state the latest signal set, if any did.
func (h *Hooks) LastState() (pane.State, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state, h.reason
}

// TurnEnd is the last turn end at or after since, if any.
func (h *Hooks) TurnEnd(since time.Time) (End, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.end.IsZero() || h.end.Before(since) {
		return End{}, false
	}
	return End{At: h.end, Result: h.result, Failed: h.failed, FailedBy: h.failedBy}, true
}

// End is a turn end the hooks (or a budget refusal) told: the agent's
// last message, or why the turn failed and who said so (FailedBy: the
// hook, or the gateway refusing its request for the budget).
type End struct {
	At                       time.Time
	Result, Failed, FailedBy string
}

// PromptSince reports whether a prompt was submitted at or after since.
func (h *Hooks) PromptSince(since time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.prompt.IsZero() && !h.prompt.Before(since)
}

// LastPrompt is when the agent's last prompt was submitted; zero before
// any.
func (h *Hooks) LastPrompt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.prompt
}

// Seen is the last signal applied, or nil; the screen rules may overrule
// it quiet after it.
func (h *Hooks) Seen(quiet time.Duration) *api.HookSeen {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastEvent == "" {
		return nil
	}
	return &api.HookSeen{Event: h.lastEvent, At: h.lastSeen, ScreenRulesFrom: h.lastSeen.Add(quiet)}
}

// Heard reports whether any of the agent's signals came (its hooks work).
func (h *Hooks) Heard() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastEvent != ""
}

// IgnoredSeen is the last signal ignored, if any.
func (h *Hooks) IgnoredSeen() *api.HookIgnored {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ignored == nil {
		return nil
	}
	seen := *h.ignored
	return &seen
}
