package panetype

import (
	"slices"
	"strings"
	"testing"
)

// TestPaneTypeQuestions: what is asked of a pane type is answered by the
// registry: where it runs, whether its tasks are shell commands, whether
// it is a CLI agent, and its guidance file.
func TestPaneTypeQuestions(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	r.Register("alpha", "ALPHA.md")
	r.Register("beta", "")
	for _, c := range []struct {
		typ                   string
		inProcess, shell, cli bool
		guidance              string
	}{
		{"cicy", true, false, false, "AGENTS.md"},
		{"shell", false, true, false, "AGENTS.md"},
		{"alpha", false, false, true, "ALPHA.md"},
		{"beta", false, false, true, "AGENTS.md"},
		{"gamma", false, false, false, "AGENTS.md"},
	} {
		if InProcess(c.typ) != c.inProcess || RunsShellTasks(c.typ) != c.shell || r.IsAgent(c.typ) != c.cli || r.GuidanceFile(c.typ) != c.guidance {
			t.Errorf("%s: in process %v, shell tasks %v, CLI agent %v, guidance %s", c.typ, InProcess(c.typ), RunsShellTasks(c.typ), r.IsAgent(c.typ), r.GuidanceFile(c.typ))
		}
	}
	if got := r.All(); !slices.Equal(got, []string{"cicy", "alpha", "beta", "shell"}) {
		t.Errorf("All = %v; want cicy, the agents by name, shell", got)
	}
	if got := r.Agents(); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("Agents = %v", got)
	}
	if typ, ok := r.Resolve(""); typ != Default || !ok {
		t.Errorf(`Resolve("") = %q, %v; want %s, true`, typ, ok, Default)
	}
	if _, ok := r.Resolve("bash"); ok {
		t.Error(`Resolve("bash") is a pane type`)
	}
	if _, ok := r.Resolve("beta"); !ok {
		t.Error(`Resolve("beta") is not a pane type`)
	}
}

// TestRegisterRefuses: a bad registration panics at init with a message
// that names what is wrong.
func TestRegisterRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, guidance, want string }{
		{"", "", "the name must be"},
		{"Claude", "", "the name must be"},
		{"a b", "", "the name must be"},
		{"ok", "dir/X.md", "must be a file name"},
		{"ok", ".hidden", "must be a file name"},
		{"cicy", "", "registered twice"},
		{"shell", "", "registered twice"},
		{"dup", "", "registered twice"},
	} {
		r := NewRegistry()
		r.Register("dup", "")
		msg := func() (msg string) {
			defer func() { msg, _ = recover().(string) }()
			r.Register(c.name, c.guidance)
			return ""
		}()
		if !strings.Contains(msg, c.want) {
			t.Errorf("Register(%q, %q) panicked with %q; want %q", c.name, c.guidance, msg, c.want)
		}
	}
}
