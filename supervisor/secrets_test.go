package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

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

// TestSecretsInAnswers: what a pane prints reaches the task ledger and
// every API answer without the supervisor's secrets — a provider key, a
// pane's gateway token — whatever the command printed them for.
func TestSecretsInAnswers(t *testing.T) {
	t.Parallel()
	key := "sk-ant-api03-secret-key-0123456789"
	token := "cicy-pane-" + strings.Repeat("ab", 24)
	s, h := newTestSupervisor(t, func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": key}[k]
	})
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	// The typed commands hold neither secret whole; their output does.
	leak := `printf '%s%s\n%s%s\n' sk-ant-api03-sec ret-key-0123456789 cicy-pane- $(printf 'ab%.0s' $(seq 24))`
	task := runShellTask(t, s, p.ID, leak+"; false")
	stored, err := s.store.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"result": stored.Result, "error": stored.Error + stored.Reason} {
		if strings.Contains(text, key) || strings.Contains(text, token) {
			t.Errorf("the ledger's %s holds a secret: %q", what, text)
		}
	}
	if strings.Count(stored.Result, "[redacted]") != 2 {
		t.Errorf("result %q", stored.Result)
	}
	// Nor is either in a file of the home (the task's output file).
	if outs := noFileHolds(t, s.cfg.Home.Root, key, token); outs != 1 {
		t.Fatalf("%d task output files in the home", outs)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/tasks/" + itoa(task.ID), ""},
		{"GET", "/api/tasks", ""},
		{"POST", "/api/panes/" + p.ID + "/send", `{"text": ` + strconvQuote(leak) + `, "wait": true, "timeout": 20}`},
		{"GET", "/api/panes/" + p.ID + "/screen", ""},
		{"GET", "/api/panes/" + p.ID + "/explain", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)))
		body := rec.Body.String()
		if rec.Code != 200 || strings.Contains(body, key) || strings.Contains(body, token) || !strings.Contains(body, "[redacted]") {
			t.Errorf("%s %s: %d %s", c.method, c.path, rec.Code, body)
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestSecretsWrappedAndQuoted: a key a shell printed past the end of its
// row (the terminal wraps it) is not in the screen or any answer, whole or
// split; a credential holding <, > and & is not in an answer as JSON
// escapes it (\u003c).
func TestSecretsWrappedAndQuoted(t *testing.T) {
	t.Parallel()
	key := "sk-ant-api03-wrapped-secret-key-0123456789"
	odd := "tok<en>&secret-42"
	for _, backend := range []string{"pty", "tmux"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			if backend == "tmux" && !pane.TmuxAvailable() {
				t.Skip("no tmux")
			}
			s, h := newTestSupervisor(t, func(k string) string {
				return map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_AUTH_TOKEN": odd}[k]
			})
			ctx := context.Background()
			p, err := s.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: backend, Command: []string{"bash", "--norc", "--noprofile"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
			waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
			// 100 x's, then the key: past any row of 120 or fewer
			// columns. Neither secret is whole in what is typed.
			leak := `printf 'x%.0s' $(seq 100); printf '%s%s\n%s%s\n' sk-ant-api03-wrapped-se cret-key-0123456789 'tok<en>&sec' ret-42`
			for _, c := range []struct{ method, path, body string }{
				{"POST", "/api/panes/" + p.ID + "/send", `{"text": ` + strconvQuote(leak) + `, "wait": true, "timeout": 20}`},
				{"GET", "/api/panes/" + p.ID + "/screen", ""},
			} {
				var body string
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)))
					if body = rec.Body.String(); rec.Code != 200 {
						t.Fatalf("%s %s: %d %s", c.method, c.path, rec.Code, body)
					}
					if strings.Count(body, "[redacted]") >= 2 || time.Now().After(deadline) || c.method == "POST" {
						break
					}
				}
				joined := strings.NewReplacer(`\n`, "", `\r`, "").Replace(body)
				for _, secret := range []string{key, odd, "tok\\u003cen\\u003e\\u0026secret-42"} {
					if strings.Contains(joined, secret) {
						t.Errorf("%s %s shows %q: %s", c.method, c.path, secret, body)
					}
				}
				if !json.Valid([]byte(body)) || strings.Count(body, "[redacted]") < 2 {
					t.Errorf("%s %s: %s", c.method, c.path, body)
				}
			}
			// The last lines, cut below the key's first row: not its rest.
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/panes/"+p.ID+"/screen?lines=3", nil))
			if body := rec.Body.String(); rec.Code != 200 || strings.Contains(body, "secret-key-0123456789") || !strings.Contains(body, "[redacted]") {
				t.Errorf("the screen's last lines: %d %s", rec.Code, body)
			}
		})
	}
}

// noFileHolds checks that no file under root holds one of the secrets;
// it returns how many task output files (*.out) it read.
func noFileHolds(t *testing.T, root string, secrets ...string) (outs int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeType != 0 {
			return err
		}
		if strings.HasSuffix(path, ".out") {
			outs++
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, secret := range secrets {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds a secret: %q", path, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return outs
}
