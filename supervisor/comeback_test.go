package supervisor

import (
	"testing"
	"time"
)

// TestLivesCountsQuickDeaths: deaths within quickDeath of their start
// count in a row, one told twice counts once, and a long life starts the
// count again.
func TestLivesCountsQuickDeaths(t *testing.T) {
	var l lives
	t0 := time.Unix(1_700_000_000, 0)
	l.start(t0)
	if n := l.died(t0.Add(time.Second)); n != 1 {
		t.Fatalf("first quick death: %d", n)
	}
	if n := l.died(t0.Add(time.Second)); n != 1 {
		t.Fatalf("the same death told twice counted again: %d", n)
	}
	l.start(t0.Add(2 * time.Second))
	if n := l.died(t0.Add(3 * time.Second)); n != 2 {
		t.Fatalf("second quick death: %d", n)
	}
	l.start(t0.Add(4 * time.Second))
	if n := l.died(t0.Add(4*time.Second + quickDeath)); n != 0 {
		t.Fatalf("a death %s after its start counted as quick: %d", quickDeath, n)
	}
}
