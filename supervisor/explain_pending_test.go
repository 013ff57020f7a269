package supervisor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/signals"
)

// statusOnly is a terminal that only has a status.
type statusOnly struct {
	terminal
	st pane.Status
}

func (s statusOnly) Status() pane.Status { return s.st }

// TestExplainPending: explain says when the pane's last look gave a state
// the pane has not taken yet, and only then.
func TestExplainPending(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	for _, tc := range []struct {
		pending pane.State
		note    string
	}{
		{pending: "", note: ""},
		{pending: pane.Busy, note: "the pane's last look said busy, and it turns busy if the next look says so too"},
	} {
		p := &cliKind{termKind: termKind{cfg: schema.Pane{Type: "claude"}, proc: statusOnly{st: pane.Status{State: pane.Idle, Pending: tc.pending}}},
			hooks: &signals.Hooks{}, home: home}
		x := api.Explanation{Screen: "❯ "}
		p.Explain(&x)
		if x.Rules.Pending != string(tc.pending) {
			t.Errorf("pending %q: explain says pending %q", tc.pending, x.Rules.Pending)
		}
		if got := strings.Contains(x.Rules.Note, "last look"); got != (tc.note != "") || !strings.Contains(x.Rules.Note, tc.note) {
			t.Errorf("pending %q: note %q, want it to hold %q", tc.pending, x.Rules.Note, tc.note)
		}
	}
}
