package supervisor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
)

// TestWireDocumentsMatchTheirSources: package api keeps its own copies of
// documents the daemon builds from other packages' types (a pane's status,
// a flush's result); each encodes as its source does.
func TestWireDocumentsMatchTheirSources(t *testing.T) {
	code := 3
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := pane.Status{State: pane.Exited, Reason: "exit 3", Since: at, PID: 42, ExitCode: &code}
	f := cicy.FlushResult{Turns: 2, Stored: 1, Error: "e"}
	for _, c := range []struct {
		name     string
		src, got any
	}{
		{"pane status", st, wireStatus(st)},
		{"flush result", f, api.FlushResult(f)},
	} {
		want, _ := json.Marshal(c.src)
		got, _ := json.Marshal(c.got)
		if string(got) != string(want) {
			t.Errorf("%s: api encodes %s, its source %s", c.name, got, want)
		}
	}
}
