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
	start := dormantHome(t)
	s := start(false)
	_, task, log := stepAndShutdown(t, s, true)
	s = start(false)
	got := waitTask(t, s, task.ID, 30*time.Second)
	if got.Status != api.TaskDone || got.Attempts != 1 || got.Result != "stepped" {
		t.Errorf("the task after the restart: %s after %d deliveries, result %q (%s); want done by its first delivery with %q",
			got.Status, got.Attempts, got.Result, got.Reason, "stepped")
	}
	if b, _ := os.ReadFile(log); strings.Count(string(b), "ran") != 1 {
		t.Errorf("the call ran %d times, want once", strings.Count(string(b), "ran"))
	}
}

// stepAndShutdown creates a cicy pane on s, gives it "step LOG" (as a
// task when dispatch is set, else as a message), waits until its tool
// call has started and shuts s down mid-call. It returns the pane, the
// task (zero for a message) and LOG.
func stepAndShutdown(t *testing.T, s *Supervisor, dispatch bool) (api.CreateResponse, schema.Task, string) {
	t.Helper()
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "calls.log")
	var task schema.Task
	if dispatch {
		task, err = s.Dispatch(ctx, "", p.ID, "step "+log)
	} else {
		_, err = s.Send(ctx, p.ID, api.SendRequest{Text: "step " + log})
	}
	if err != nil {
		t.Fatal(err)
	}
	pollFor(t, "the call starts", func() bool {
		_, err := os.Stat(log + ".started")
		return err == nil
	})
	s.Close()
	return p, task, log
}
