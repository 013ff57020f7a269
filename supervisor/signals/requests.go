package signals

import (
	"cmp"
	"sync/atomic"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// The gateway is a CLI agent pane's third state signal (see docs/hooks.md):
// it tells the supervisor when a main-loop model request of a pane starts
// and ends (gateway.Activity). The pane counts its requests in flight; its
// terminal, told that the count changed, reads it on its own goroutine
// (the pane's owner), so the gateway's goroutines never wait and the
// latest count always wins, whatever order the news came in.

// Requests counts a pane's main-loop model requests in flight; the zero
// value counts none.
type Requests struct{ n atomic.Int64 }

// Change adds delta to the count, which never goes below zero (an end
// heard before its start).
func (r *Requests) Change(delta int64) {
	for {
		n := r.n.Load()
		if r.n.CompareAndSwap(n, max(n+delta, 0)) {
			return
		}
	}
}

// InFlight is how many requests are in flight.
func (r *Requests) InFlight() int { return int(r.n.Load()) }

// Info is what ls and explain show of a pane's state signals: its
// requests in flight, what the gateway and the screen last said, and how
// often its signals disagreed.
func Info(c pane.Signals) *api.Signals {
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
