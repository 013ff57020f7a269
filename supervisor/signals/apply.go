package signals

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// Target is the CLI agent pane a signal is applied to, as the supervisor's
// registry holds it.
type Target interface {
	// Hooks is the pane's hook log.
	Hooks() *Hooks
	// RecordSession notes that a signal of at carried the agent's session
	// id (Session.Record).
	RecordSession(ctx context.Context, id string, at time.Time)
	// Record notes the signal in the pane's hook log (Hooks.Record);
	// pending while the pane is still being started, whose start then
	// applies the log's state.
	Record(eff cliagent.Effect, req api.HookRequest) (recorded, pending bool)
	// ApplyState gives the pane's program the state its latest signal
	// set.
	ApplyState()
	// Changed says the pane changed: a turn end may settle a delivered
	// task.
	Changed()
}

// Apply applies one signal of the CLI agent pane t, whose type is typ: it
// records the session id it carries, and what it means (cliagent.Interpret)
// with the agent's texts passed through scrub (an agent's error may quote
// its upstream, which may echo the key). A signal older than the last one
// applied changes nothing.
func Apply(ctx context.Context, t Target, typ string, req api.HookRequest, scrub func(string) string, log *logrus.Entry) api.HookResult {
	if req.Agent == "" {
		req.Agent = typ
	}
	if req.At.IsZero() || req.At.After(time.Now()) {
		req.At = time.Now()
	}
	if sid := cliagent.Session(req.Agent, req.Event, req.Payload); sid != "" {
		t.RecordSession(ctx, sid, req.At)
	}
	eff := cliagent.Interpret(req.Agent, req.Event, req.Payload)
	eff.Result, eff.Failed = scrub(eff.Result), scrub(eff.Failed)
	log = log.WithField("hook", req.Agent+"/"+req.Event)
	if eff.Ignored != "" {
		log.Debug("Hook ignored: " + eff.Ignored)
		t.Hooks().ignore(req, eff.Ignored)
		return api.HookResult{Ignored: eff.Ignored}
	}
	res := api.HookResult{}
	if eff.State != "" {
		res.State, res.Reason = string(eff.State), "hook:"+req.Event
	}
	recorded, pending := t.Record(eff, req)
	if !recorded {
		// Hooks run as separate processes and may arrive out of order
		// (opencode's busy after its idle): an older one changes nothing.
		log.Debug("Hook older than the last one applied; ignored")
		return api.HookResult{Ignored: "older than the last signal of this pane"}
	}
	if pending {
		// The pane's start applies it once its process is registered.
		log.WithField("state", res.State).Debug("Hook kept for the pane being started")
		return res
	}
	if eff.State != "" {
		t.ApplyState()
	}
	log.WithField("state", res.State).Debug("Hook applied")
	t.Changed()
	return res
}
