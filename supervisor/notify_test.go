package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	h, store := openTestHome(t, root)
	s, err := New(context.Background(), Config{Home: h, Log: quietLog(), Getenv: getenv}, store)
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
	line := outbox.Notification(schema.Task{ID: task.ID, To: w.ID, Status: api.TaskDone}, false)
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

// TestNotifyMasterKilledMidTurn: a cicy master's turn works on a task's
// 🔔 line (recorded told) while the next task's line waits in its queue;
// the supervisor is killed (kill -9). The next supervisor's master runs
// the queued line at once, and the first line, in its history, must not
// be taken for one lost with the previous supervisor: the master is told
// of each task once.
func TestNotifyMasterKilledMidTurn(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(notifyRules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CICY_SCRIPT", rules)
	home := Home{Root: filepath.Join(dir, "home")}
	n := spawnServe(t, "", home)
	ctx := context.Background()
	m := mustCreate(t, n.c, api.CreateRequest{Title: "lead", Role: "master", Provider: "script"})
	w := mustCreate(t, n.c, api.CreateRequest{Title: "sh", Type: "shell", Master: m.ID, Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	waitPanes(t, n.node(), "the worker idle", func(ps map[string]api.PaneInfo) bool { return ps[w.ID].State == "idle" })
	// Each task prints "slow <gate>": the master's turn on its line runs
	// until the gate exists.
	gate1, gate2 := filepath.Join(dir, "gate1"), filepath.Join(dir, "gate2")
	first := dispatchTold(t, n.c, m.ID, w.ID, "echo slow "+gate1)
	second := dispatchTold(t, n.c, m.ID, w.ID, "echo slow "+gate2)
	if p, err := n.c.Get(ctx, m.ID); err != nil || p.State != "busy" {
		t.Fatalf("the master while its turn waits for %s: %+v, %v", gate1, p, err)
	}

	n.kill9()
	n = spawnServe(t, "", home)
	// The new master runs the queued line (task 2's) at once; while it
	// waits for gate2, the recovery has long looked at task 1.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		p, err := n.c.Get(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.State == "busy" {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(home.Log())
			queue, _ := os.ReadFile(filepath.Join(cicy.HistoryDir(p.Workspace), "queue.json"))
			t.Fatalf("the master never ran the queued line after the restart: %+v\nqueue.json: %s\nthe supervisors' log:\n%s", p, queue, log)
		}
	}
	if err := os.WriteFile(gate2, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate1, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ws := waitTold(t, n.node(), m.ID, second)
	p, err := n.c.Get(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := notifications(t, p.Workspace, first); got != 1 || ws != 1 {
		t.Errorf("the master was told of task 1 %d times and of task 2 %d times, want once each", got, ws)
	}
}

// dispatchTold dispatches text from master to worker and waits until the
// task is done and its master recorded told.
func dispatchTold(t *testing.T, c *api.Client, master, worker, text string) int64 {
	t.Helper()
	ctx := context.Background()
	task, err := c.Dispatch(ctx, api.DispatchRequest{From: master, To: worker, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := c.Task(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == api.TaskDone && got.NotifiedAt != nil {
			return task.ID
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d: %+v, never done and told", task.ID, got)
		}
	}
}
