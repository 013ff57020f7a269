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

// TestEnv: no pane gets the supervisor's upstream URLs unless a shell
// pane asks for one by name; a CLI agent gets neither a provider key nor
// an upstream it asked for, and none of the variables that tell a
// program it runs in a CI job; a shell pane keeps those.
func TestEnv(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "ANTHROPIC_BASE_URL=http://u:pw@up", "ANTHROPIC_API_KEY=sk-a", "CI=true", "CI_JOB_ID=7", "GITHUB_ACTIONS=true", "CIRCLE=1"}
	getenv := func(k string) string {
		for _, kv := range environ {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	}
	pass := []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"}
	got := Env("/h", "w-1", true, environ, pass, getenv)
	want := []string{"PATH=/bin", "CIRCLE=1", "TERM=xterm-256color", "CICY_HOME=/h", "CICY_PANE_ID=w-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("CLI agent: %q, want %q", got, want)
	}
	got = Env("/h", "w-1", false, environ, nil, getenv)
	want = []string{"PATH=/bin", "CI=true", "CI_JOB_ID=7", "GITHUB_ACTIONS=true", "CIRCLE=1", "TERM=xterm-256color", "CICY_HOME=/h", "CICY_PANE_ID=w-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("shell pane: %q, want %q", got, want)
	}
	got = Env("/h", "w-1", false, environ, pass, getenv)
	want = []string{"PATH=/bin", "CI=true", "CI_JOB_ID=7", "GITHUB_ACTIONS=true", "CIRCLE=1", "ANTHROPIC_BASE_URL=http://u:pw@up", "ANTHROPIC_API_KEY=sk-a", "TERM=xterm-256color", "CICY_HOME=/h", "CICY_PANE_ID=w-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("shell pane asking: %q, want %q", got, want)
	}
}
