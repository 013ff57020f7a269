package notifier

import (
	"context"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Hooks for the tests and benchmarks that drive a whole supervisor (in
// package supervisor, so they cannot be this package's export_test.go):
// they raise and end episodes as a scan would, without a team that needs
// you, and shorten the coalescing window. The product never calls them.

// SetWindow sets the window that coalesces a flapping pane (a minute).
// The supervisor's TestNotifyCoalescesAFlappingPane shortens it to see a
// digest within the test; BenchmarkNeedsYouToSink makes it a nanosecond
// so that each round is told.
func (n *Notifier) SetWindow(d time.Duration) {
	n.scanMu.Lock()
	defer n.scanMu.Unlock()
	n.window = d
}

// Raise raises the need a of pane p, as a scan that finds it does. The
// supervisor's notification tests raise every kind of need through it
// (raiseAll): a real pane in each of those states is not to be had in a
// test.
func (n *Notifier) Raise(ctx context.Context, a topology.Attention, p api.PaneInfo) {
	n.scanMu.Lock()
	defer n.scanMu.Unlock()
	now := time.Now()
	key, _ := n.keyOf(a)
	ev, _ := n.eventOf(a, p, now)
	n.raise(ctx, key, ev, now)
}

// End ends the episodes of needs, as a scan that no longer finds them
// does; the supervisor's TestNotifyCoalescesAFlappingPane and
// BenchmarkNotifyBurst end the episodes they raised through Raise.
func (n *Notifier) End(ctx context.Context, needs ...topology.Attention) error {
	n.scanMu.Lock()
	keys := make([]string, 0, len(needs))
	for _, a := range needs {
		key, _ := n.keyOf(a)
		delete(n.open, key)
		keys = append(keys, key)
	}
	n.scanMu.Unlock()
	return n.store.CloseNeeds(ctx, keys)
}
