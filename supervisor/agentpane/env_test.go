package agentpane

import (
	"slices"
	"strings"
	"testing"
)

// TestPaneEnv: a pane gets the supervisor's environment without the
// provider credentials, except those passed (--env, or what a CLI agent
// needs), with the supervisor's value.
func TestPaneEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "ANTHROPIC_API_KEY=sk-a", "OPENAI_API_KEY=sk-o", "ANTHROPIC_AUTH_TOKEN=tok", "TERM=dumb", "FOO=1"}
	getenv := func(k string) string {
		for _, kv := range environ {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	}
	got := paneEnv("/h", "w-1", environ, nil, getenv)
	want := []string{"PATH=/bin", "FOO=1", "TERM=xterm-256color", "CICY_HOME=/h", "CICY_PANE_ID=w-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("no pass: %q, want %q", got, want)
	}
	got = paneEnv("/h", "w-1", environ, []string{"OPENAI_API_KEY", "FOO", "MISSING", "OPENAI_API_KEY"}, getenv)
	want = []string{"PATH=/bin", "OPENAI_API_KEY=sk-o", "FOO=1", "TERM=xterm-256color", "CICY_HOME=/h", "CICY_PANE_ID=w-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("passing OPENAI_API_KEY: %q, want %q", got, want)
	}
}
