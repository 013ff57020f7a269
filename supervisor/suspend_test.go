package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// stepRules script a cicy pane: "step LOG" runs one shell call that
// appends "ran" to LOG, touches LOG.started and takes a second; its
// result is answered "stepped".
const stepRules = `rules:
  - match: {tool_result: true}
    reply: {text: stepped}
  - match: {last_user: 'step (\S+)'}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'echo ran >> {{1}}; touch {{1}}.started; sleep 1'}
  - reply: {text: "I got: {{last_user}}"}
`

// TestShutdownMidToolTaskGoesOn: a graceful shutdown while a cicy
// worker's task runs a tool call: the call is given its grace and ends,
// and the next supervisor takes the turn up where it stopped. The task is
// done once, by its first delivery, and the call ran once (the shutdown
// used to end the turn as cancelled, so the restart sent the task again
// and its call ran a second time).
func TestShutdownMidToolTaskGoesOn(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(stepRules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	root := t.TempDir()
	getenv := func(k string) string { return map[string]string{"CICY_SCRIPT": rules}[k] }
	start := func() *Supervisor {
		h, store := openTestHome(t, root)
		s, err := New(context.Background(), Config{Home: h, Log: quietLog(), Getenv: getenv, StopGrace: 10 * time.Second}, store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(); _ = s.tmux.KillServer() })
		return s
	}
	ctx := context.Background()
	s := start()
	p, err := s.Create(ctx, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "calls.log")
	task, err := s.Dispatch(ctx, "", p.ID, "step "+log)
	if err != nil {
		t.Fatal(err)
	}
	pollFor(t, "the call starts", func() bool {
		_, err := os.Stat(log + ".started")
		return err == nil
	})
	s.Close()

	s = start()
	got := waitTask(t, s, task.ID, 30*time.Second)
	if got.Status != schema.TaskDone || got.Attempts != 1 || got.Result != "stepped" {
		t.Errorf("the task after the restart: %s after %d deliveries, result %q (%s); want done by its first delivery with %q",
			got.Status, got.Attempts, got.Result, got.Reason, "stepped")
	}
	if b, _ := os.ReadFile(log); strings.Count(string(b), "ran") != 1 {
		t.Errorf("the call ran %d times, want once", strings.Count(string(b), "ran"))
	}
}
