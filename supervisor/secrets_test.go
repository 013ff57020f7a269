package supervisor

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestScrubLog: no log line shows a provider credential, in its message,
// a field or an error.
func TestScrubLog(t *testing.T) {
	var out bytes.Buffer
	l := logrus.New()
	l.SetOutput(&out)
	l.SetFormatter(ScrubLog(&logrus.TextFormatter{DisableColors: true}, func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-log-leak-1", "OPENAI_API_KEY": "sk-log-leak-2"}[k]
	}))
	l.WithError(errors.New("invalid x-api-key sk-ant-log-leak-1")).WithField("body", "sk-log-leak-2").Error("upstream said sk-ant-log-leak-1")
	if s := out.String(); strings.Contains(s, "leak") || strings.Count(s, "[redacted]") != 3 {
		t.Fatalf("log line: %s", s)
	}
}

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
	h := Home{Root: "/h"}
	got := paneEnv(h, "w-1", environ, nil, getenv)
	want := []string{"PATH=/bin", "FOO=1", "TERM=xterm-256color", "CICY_HOME=/h", "CICY_PANE_ID=w-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("no pass: %q, want %q", got, want)
	}
	got = paneEnv(h, "w-1", environ, []string{"OPENAI_API_KEY", "FOO", "MISSING", "OPENAI_API_KEY"}, getenv)
	want = []string{"PATH=/bin", "OPENAI_API_KEY=sk-o", "FOO=1", "TERM=xterm-256color", "CICY_HOME=/h", "CICY_PANE_ID=w-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("passing OPENAI_API_KEY: %q, want %q", got, want)
	}
}

// TestPrepareHomeModes: the home and its folders are the user's alone; a
// home left open to all (0777) is tightened, an old world-readable log too.
func TestPrepareHomeModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(filepath.Join(root, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := Home{Root: root}
	if err := os.WriteFile(h.Log(), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := h.Prepare(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{root: 0o700, h.path("logs"): 0o700, h.Log(): 0o600, h.path("db"): 0o700, h.path("run"): 0o700, h.path("workspaces"): 0o700} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, fi.Mode().Perm(), want)
		}
	}
}

// TestPrepareRefusesAnotherUsersOpenHome: a home that belongs to another
// user and that anyone may write in is refused with a sentence (needs
// root, to give the folder away).
func TestPrepareRefusesAnotherUsersOpenHome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a folder another user's")
	}
	root := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err := Home{Root: root}.Prepare()
	if err == nil || !strings.Contains(err.Error(), "belongs to another user") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Prepare: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "db")); err == nil {
		t.Fatal("Prepare created folders in another user's home")
	}
}
