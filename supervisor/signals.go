package supervisor

import (
	"cmp"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// The gateway is a CLI agent pane's third state signal (see docs/hooks.md):
// it tells the supervisor when a main-loop model request of a pane starts
// and ends (gateway.Activity). The entry counts the pane's requests in
// flight; its terminal, told that the count changed, reads it on its own
// goroutine (the pane's owner), so the gateway's goroutines never wait and
// the latest count always wins, whatever order the news came in.

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
		if e.answers.note(a) {
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
	for {
		n := e.requests.Load()
		if e.requests.CompareAndSwap(n, max(n+delta, 0)) {
			break
		}
	}
	e.wakeRequests()
}

// inFlight is how many main-loop model requests of the pane are in flight.
func (e *entry) inFlight() int { return int(e.requests.Load()) }

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
	pi.Signals = signalsInfo(p.proc.Status().Signals)
}

func signalsInfo(c pane.Signals) *api.Signals {
	s := &api.Signals{InFlight: c.InFlight, Disagreements: api.Disagreements{
		HookVsScreen: c.HookVsScreen, GatewayVsHook: c.GatewayVsHook, GatewayVsScreen: c.GatewayVsScreen}}
	if !c.GatewayAt.IsZero() {
		at := c.GatewayAt
		s.LastGateway = &at
	}
	if !c.ScreenAt.IsZero() {
		s.LastScreen = &api.ScreenSeen{State: cmp.Or(string(c.ScreenState), "unknown"), Rule: c.ScreenRule, Part: string(c.ScreenPart), At: c.ScreenAt}
	}
	return s
}
