package supervisor

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// notifyRules script a cicy master: "slow" runs a shell command that
// ends when the file it names exists; a 🔔 line is answered "noted".
const notifyRules = `rules:
  - match: {tool_result: true}
    reply: {text: 'slow done'}
  - match: {last_user: 'slow (\S+)'}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'while [ ! -e {{1}} ]; do sleep 0.1; done'}
  - match: {last_user: '🔔'}
    reply: {text: 'noted'}
  - match: {aux: '*'}
    reply: {text: ok}
`

// openSupervisor starts a supervisor on the home at root (a second one
// after the first stopped: a restart).
func openSupervisor(t *testing.T, root string, getenv func(string) string) *Supervisor {
	t.Helper()
	h := Home{Root: root}
	if err := h.Prepare(); err != nil {
		t.Fatal(err)
	}
	store, err := schema.Open(context.Background(), h.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	l := logrus.New()
	l.SetOutput(io.Discard)
	s, err := New(context.Background(), Config{Home: h, Log: logrus.NewEntry(l), Getenv: getenv}, store)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNotifyBusyMasterAcrossStop: a worker's task ends while its cicy
// master runs a long turn; the 🔔 line waits in the master's queue and
// the task is recorded told. The supervisor stops before the master's
// turn takes the line: the next supervisor's master gets it — once.
// (The line used to wait in memory only: the master was never told.)
func TestNotifyBusyMasterAcrossStop(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(notifyRules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	getenv := func(k string) string { return map[string]string{"CICY_SCRIPT": rules}[k] }
	root := filepath.Join(dir, "home")
	ctx := context.Background()
	s := openSupervisor(t, root, getenv)
	m, err := s.Create(ctx, api.CreateRequest{Title: "lead", Role: "master", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Master: m.ID, Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		t.Fatal(err)
	}
	waitPane(t, s, w.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	if _, err := s.Send(ctx, m.ID, api.SendRequest{Text: "slow " + filepath.Join(dir, "gate")}); err != nil {
		t.Fatal(err)
	}
	task, err := s.Dispatch(ctx, m.ID, w.ID, "echo from-the-worker")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, _ := s.store.GetTask(ctx, task.ID)
		if got.NotifiedAt.Valid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d: %s, never recorded told", task.ID, got.Status)
		}
	}
	s.Close()
	_ = s.tmux.KillServer()

	s2 := openSupervisor(t, root, getenv)
	t.Cleanup(func() { s2.Close(); _ = s2.tmux.KillServer() })
	line := outbox.Notification(schema.Task{ID: task.ID, To: w.ID, Status: schema.TaskDone}, false)
	e, err := s2.get(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	hist := cicy.HistoryDir(e.cfg.Workspace)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(hist, "current.json"))
		if n := strings.Count(string(b), strings.TrimPrefix(line, "🔔 ")); n > 0 {
			if n != 1 {
				t.Fatalf("the master has the line %d times", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the master never got %q after the restart", line)
		}
	}
}
