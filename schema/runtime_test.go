package schema

import (
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
)

// TestRuntimeRoundTrip: a pane's status stored as its runtime reads back
// the same; a runtime never written reads as never started.
func TestRuntimeRoundTrip(t *testing.T) {
	t.Parallel()
	code := 3
	st := pane.Status{State: pane.Exited, Reason: "exited 3", Since: time.Date(2026, 12, 7, 13, 4, 5, 0, time.UTC), PID: 42, ExitCode: &code}
	got := RuntimeOf(st).Status()
	if got.State != st.State || got.Reason != st.Reason || !got.Since.Equal(st.Since) || got.ExitCode == nil || *got.ExitCode != 3 {
		t.Fatalf("%+v, want %+v", got, st)
	}
	if r := RuntimeOf(pane.Status{State: pane.Idle}); r.ExitCode.Valid || !r.PID.Valid {
		t.Fatalf("no exit code: %+v", r)
	}
	if got := (Runtime{}).Status(); got.State != pane.Exited || got.Reason != "never started" {
		t.Fatalf("never written: %+v", got)
	}
}
