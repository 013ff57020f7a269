package comeback

import (
	"testing"
	"time"
)

// TestLivesCountsQuickDeaths: deaths within QuickDeath of their start
// count in a row, one told twice counts once, and a long life starts the
// count again.
func TestLivesCountsQuickDeaths(t *testing.T) {
	t.Parallel()
	var l Lives
	t0 := time.Unix(1_700_000_000, 0)
	l.Start(t0)
	if n := l.Died(t0.Add(time.Second)); n != 1 {
		t.Fatalf("first quick death: %d", n)
	}
	if n := l.Died(t0.Add(time.Second)); n != 1 {
		t.Fatalf("the same death told twice counted again: %d", n)
	}
	l.Start(t0.Add(2 * time.Second))
	if n := l.Died(t0.Add(3 * time.Second)); n != 2 {
		t.Fatalf("second quick death: %d", n)
	}
	l.Start(t0.Add(4 * time.Second))
	if n := l.Died(t0.Add(4*time.Second + QuickDeath)); n != 0 {
		t.Fatalf("a death %s after its start counted as quick: %d", QuickDeath, n)
	}
	l.Start(t0.Add(20 * time.Second))
	if n := l.Died(t0.Add(21 * time.Second)); n != 1 {
		t.Fatalf("a quick death after a long life: %d", n)
	}
	l.Reset()
	l.Start(t0.Add(30 * time.Second))
	if n := l.Died(t0.Add(31 * time.Second)); n != 1 {
		t.Fatalf("a quick death after a reset counted the ones before: %d", n)
	}
}
