package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// streamReader reads a team stream in the background.
type streamReader struct {
	t      *testing.T
	events chan api.Event
}

func readStream(t *testing.T, c *api.Client) *streamReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.TeamEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &streamReader{t: t, events: make(chan api.Event, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(r.events)
		for {
			ev, err := st.Next()
			if err != nil {
				return
			}
			r.events <- ev
		}
	}()
	t.Cleanup(func() { cancel(); st.Close(); <-done })
	return r
}

// stateOf is the pane and state an event reports, from a pane or a state
// event.
func stateOf(ev api.Event) (id, state string) {
	switch {
	case ev.Type == "pane" && ev.Pane != nil:
		return ev.Pane.ID, ev.Pane.State
	case ev.Type == "state" && ev.State != nil:
		return ev.ID, string(ev.State.State)
	}
	return "", ""
}

// until reads events until ok says so, or fails at the deadline.
func (r *streamReader) until(what string, ok func(api.Event) bool) api.Event {
	r.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, open := <-r.events:
			if !open {
				r.t.Fatalf("stream ended waiting for %s", what)
			}
			if ok(ev) {
				return ev
			}
		case <-deadline:
			r.t.Fatalf("no event for %s", what)
		}
	}
}

// scriptedServer runs a supervisor whose cicy panes answer from the
// scripted model's benchmark rules.
func scriptedServer(t *testing.T) *api.Client {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(benchRules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CICY_SCRIPT", rules)
	return startServer(t)
}

func TestTeamEventStream(t *testing.T) {
	c := scriptedServer(t)
	ctx := context.Background()
	r := readStream(t, c)
	snap := r.until("the snapshot", func(ev api.Event) bool { return true })
	if snap.Type != "snapshot" || snap.Snapshot == nil || len(snap.Snapshot.Panes) != 0 {
		t.Fatalf("first event %+v, want an empty snapshot", snap)
	}

	sh := mustCreate(t, c, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	r.until("the shell pane idle", func(ev api.Event) bool {
		id, st := stateOf(ev)
		return id == sh.ID && st == "idle"
	})
	task, err := c.Dispatch(ctx, api.DispatchRequest{To: sh.ID, Text: "echo done-marker"})
	if err != nil {
		t.Fatal(err)
	}
	r.until("the task done", func(ev api.Event) bool {
		return ev.Type == "task" && ev.Task.ID == task.ID && ev.Task.Status == "done"
	})
	r.until("a summary counting it", func(ev api.Event) bool {
		return ev.Type == "summary" && ev.Summary.Counts["user"]["done"] == 1
	})

	// A cicy pane's usage and its cost (the scripted model costs $0).
	ci := mustCreate(t, c, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if _, err := c.Send(ctx, ci.ID, api.SendRequest{Text: "hello", Wait: true}); err != nil {
		t.Fatal(err)
	}
	ev := r.until("the cicy pane's usage", func(ev api.Event) bool {
		return ev.Type == "pane" && ev.Pane.ID == ci.ID && ev.Pane.Usage.OutputTokens > 0
	})
	if ev.Pane.CostUSD == nil || *ev.Pane.CostUSD != 0 {
		t.Fatalf("cost of the scripted model: %v, want 0", ev.Pane.CostUSD)
	}

	if err := c.Kill(ctx, sh.ID); err != nil {
		t.Fatal(err)
	}
	r.until("the shell pane removed", func(ev api.Event) bool { return ev.Type == "pane_removed" && ev.ID == sh.ID })

	// A new subscriber's snapshot has the team as it is now.
	snap = readStream(t, c).until("a second snapshot", func(api.Event) bool { return true })
	if len(snap.Snapshot.Panes) != 1 || snap.Snapshot.Panes[0].ID != ci.ID || len(snap.Snapshot.Tasks) != 1 {
		b, _ := json.Marshal(snap)
		t.Fatalf("second snapshot: %s", b)
	}
}

// mustCreate creates a pane or ends the test.
func mustCreate(t *testing.T, c *api.Client, req api.CreateRequest) api.CreateResponse {
	t.Helper()
	r, err := c.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNoisyPaneDoesNotStarve: while one pane changes state as fast as it
// can (a cicy pane turned over and over: busy, idle, usage, again) and
// another floods its terminal, a third pane's change still comes, with
// its exit code.
func TestNoisyPaneDoesNotStarve(t *testing.T) {
	c := scriptedServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := readStream(t, c)
	r.until("the snapshot", func(api.Event) bool { return true })
	noisy, err := c.Create(ctx, api.CreateRequest{Title: "noisy", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	var turned atomic.Int64
	stopped := make(chan struct{})
	go func() { // turns until the test ends
		defer close(stopped)
		for ctx.Err() == nil {
			if _, err := c.Send(ctx, noisy.ID, api.SendRequest{Text: fmt.Sprintf("turn %d", turned.Load()), Wait: true}); err != nil {
				return
			}
			turned.Add(1)
		}
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	if _, err := c.Create(ctx, api.CreateRequest{Title: "flood", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile", "-c", "while :; do echo x; done"}}); err != nil {
		t.Fatal(err)
	}
	quiet, err := c.Create(ctx, api.CreateRequest{Title: "quiet", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		t.Fatal(err)
	}
	r.until("the quiet pane idle", func(ev api.Event) bool {
		id, st := stateOf(ev)
		return id == quiet.ID && st == "idle"
	})
	// The quiet pane changes only once the noisy one has been noisy for a
	// while (however slow the machine), and while it still is.
	deadline := time.Now().Add(time.Minute)
	for turned.Load() < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("the noisy pane took only %d turns in a minute", turned.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Send(ctx, quiet.ID, api.SendRequest{Text: "exit 3"}); err != nil {
		t.Fatal(err)
	}
	ev := r.until("the quiet pane's exit", func(ev api.Event) bool {
		id, st := stateOf(ev)
		return id == quiet.ID && st == "exited"
	})
	if ev.Type == "state" && (ev.State.ExitCode == nil || *ev.State.ExitCode != 3) {
		t.Fatalf("exit event without its code: %+v", ev.State)
	}
}

func TestPreviewStream(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	c := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sh, err := c.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.Preview(ctx, sh.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	var first api.ScreenResponse
	if err := dec.Decode(&first); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, sh.ID, api.SendRequest{Text: "echo pre$((6*7))view"}); err != nil {
		t.Fatal(err)
	}
	for {
		var sc api.ScreenResponse
		if err := dec.Decode(&sc); err != nil {
			t.Fatalf("preview stream ended before the output: %v", err)
		}
		if strings.Contains(sc.Screen, "pre42view") {
			break
		}
	}
	if _, err := c.Preview(ctx, "w-99", 0); err == nil || !strings.Contains(err.Error(), "no pane w-99") {
		t.Fatalf("preview of a missing pane: %v", err)
	}
}
