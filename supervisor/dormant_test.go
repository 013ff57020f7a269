package supervisor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
)

// dormantHome starts supervisors on one home whose cicy panes run
// stepRules; onInputOnly leaves the restarted panes dormant until input.
func dormantHome(t *testing.T) func(onInputOnly bool) *Supervisor {
	t.Helper()
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(stepRules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	root := t.TempDir()
	getenv := func(k string) string { return map[string]string{"CICY_SCRIPT": rules}[k] }
	return func(onInputOnly bool) *Supervisor {
		h, store := openTestHome(t, root)
		s, err := New(context.Background(), Config{Home: h, Log: quietLog(), Getenv: getenv, StopGrace: 10 * time.Second, onInputOnly: onInputOnly}, store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(); _ = s.tmux.KillServer() })
		return s
	}
}

// TestDormantPaneListedThenRestoredOnSend: after a restart a cicy pane is
// listed at once, starting and marked not restored (its history not read),
// and its first message restores it: the answer comes from the
// conversation it had, and ls then counts its messages.
func TestDormantPaneListedThenRestoredOnSend(t *testing.T) {
	start := dormantHome(t)
	ctx := context.Background()
	s := start(false)
	p, err := s.Create(ctx, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, p.ID, api.SendRequest{Text: "first", Wait: true}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = start(true)
	got, err := s.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "starting" || got.Reason != dormantReason || !got.Unrestored || got.Messages != 0 {
		t.Fatalf("the pane after the restart: %s (%s), unrestored %v, %d messages; want starting, not restored yet, messages unknown",
			got.State, got.Reason, got.Unrestored, got.Messages)
	}
	res, err := s.Send(ctx, p.ID, api.SendRequest{Text: "second", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Answer != "I got: second" {
		t.Fatalf("the first send after the restart: %+v", res)
	}
	if got, _ = s.Get(p.ID); got.Unrestored || got.Messages != 4 {
		t.Errorf("the pane after its first send: unrestored %v, %d messages; want restored with 4", got.Unrestored, got.Messages)
	}
}

// TestDormantPaneInFlightResumedWithoutInput: a cicy pane whose turn was
// running a tool call at the shutdown takes it up after the restart with
// no input (the background restore takes such panes first): its answer
// comes, and the call ran once.
func TestDormantPaneInFlightResumedWithoutInput(t *testing.T) {
	start := dormantHome(t)
	p, _, log := stepAndShutdown(t, start(false), false)
	s := start(false)
	// Its files, not the API: a look at its screen would restore it.
	pi, err := s.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	reply := filepath.Join(cicy.HistoryDir(pi.Workspace), "reply.json")
	pollFor(t, "the turn taken up", func() bool {
		var r cicy.Reply
		b, err := os.ReadFile(reply)
		return err == nil && json.Unmarshal(b, &r) == nil && r.Status == cicy.TurnCompleted && r.Answer == "stepped"
	})
	if b, _ := os.ReadFile(log); strings.Count(string(b), "ran") != 1 {
		t.Errorf("the call ran %d times, want once", strings.Count(string(b), "ran"))
	}
}

// TestDormantWorkerTaskEndsOnce: a task delivered to a cicy worker that
// is mid-tool at the shutdown ends once after a restart that restores no
// pane by itself: the outbox's recovery restores the worker and follows
// its turn.
func TestDormantWorkerTaskEndsOnce(t *testing.T) {
	start := dormantHome(t)
	_, task, log := stepAndShutdown(t, start(false), true)
	s := start(true)
	got := waitTask(t, s, task.ID, 30*time.Second)
	if got.Status != api.TaskDone || got.Attempts != 1 || got.Result != "stepped" {
		t.Errorf("the task after the restart: %s after %d deliveries, result %q (%s); want done by its first delivery with %q",
			got.Status, got.Attempts, got.Result, got.Reason, "stepped")
	}
	if b, _ := os.ReadFile(log); strings.Count(string(b), "ran") != 1 {
		t.Errorf("the call ran %d times, want once", strings.Count(string(b), "ran"))
	}
}
