package eventhub

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

func TestHubCoalescesPerKey(t *testing.T) {
	h := New(nil, nil, nil)
	sub, stop := h.subscribe()
	defer stop()
	for i := 0; i < 1000; i++ {
		h.publish("pane:w-1")
	}
	h.publish("pane:w-2")
	h.publish("task:3", keySummary)
	h.publish("pane:w-1")
	got := sub.take()
	want := []string{"pane:w-1", "pane:w-2", "task:3", keySummary}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("dirty keys %v, want %v: each key once, in first-change order", got, want)
	}
	if len(sub.take()) != 0 {
		t.Fatal("take did not empty the set")
	}
	select {
	case <-sub.wake:
	default:
		t.Fatal("publish did not wake the subscriber")
	}
	stop()
	h.publish("pane:w-9") // no subscriber: must not block or panic
}

// TestPacer: after a quiet spell up to eventBurst batches go out at once
// (ten panes changing together are each told without waiting); under
// sustained change a stream writes one batch per eventBatch.
func TestPacer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPacer(t0)
	for i := range eventBurst {
		if w := p.wait(t0); w != 0 {
			t.Fatalf("batch %d of a burst waits %s", i+1, w)
		}
		p.take(t0)
	}
	if w := p.wait(t0); w != eventBatch {
		t.Fatalf("the batch after a burst waits %s, want %s", w, eventBatch)
	}
	// A change every millisecond for 10 s: the burst, then one per batch.
	now, sent := t0, 0
	for end := t0.Add(10 * time.Second); now.Before(end); now = now.Add(time.Millisecond) {
		if w := p.wait(now); w > 0 {
			now = now.Add(w)
		}
		p.take(now)
		sent++
	}
	if want := int(10*time.Second/eventBatch) + 1; sent > want {
		t.Fatalf("%d batches in 10 s of constant change, want at most %d", sent, want)
	}
	// A quiet second refills the bucket.
	now = now.Add(time.Second)
	for i := range eventBurst {
		if w := p.wait(now); w != 0 {
			t.Fatalf("after a quiet second, batch %d waits %s", i+1, w)
		}
		p.take(now)
	}
}

// TestWireStatusMatchesPaneStatus: package api keeps its own copy of a
// pane's status; a state event's encodes as the pane's own does.
func TestWireStatusMatchesPaneStatus(t *testing.T) {
	code := 3
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := pane.Status{State: pane.Exited, Reason: "exit 3", Since: at, PID: 42, ExitCode: &code}
	want, _ := json.Marshal(st)
	got, _ := json.Marshal(wireStatus(st))
	if string(got) != string(want) {
		t.Errorf("api encodes %s, its source %s", got, want)
	}
}

// team is a team of one local pane (w-1, exited with its pid still
// recorded) and one pane of another node (w-2).
type team struct{}

func (team) List(context.Context) []api.PaneInfo { return nil }
func (team) ListLocal() []api.PaneInfo           { return nil }
func (team) LocalStatus(id string) (string, pane.Status, bool) {
	code := 1
	return "w-1", pane.Status{State: pane.Exited, PID: 42, ExitCode: &code}, id == "w-1"
}
func (team) LocalInfo(id string) (api.PaneInfo, bool) { return api.PaneInfo{ID: "w-1"}, id == "w-1" }
func (team) OtherNode(id string) (api.PaneInfo, bool) {
	return api.PaneInfo{ID: "w-2", Node: "b"}, id == "w-2"
}
func (team) Home() api.HomeInfo                  { return api.HomeInfo{Node: "a"} }
func (team) TaskInfo(t schema.Task) api.TaskInfo { return api.TaskInfo{ID: t.ID} }

// TestBuildEvents: each dirty key is its current value; a pane's whole
// document makes its state event needless; a pane no node has is
// removed; a local stream (another node's peer watcher) has only this
// node's panes, no tasks, summary or home.
func TestBuildEvents(t *testing.T) {
	t.Parallel()
	h := New(team{}, nil, nil)
	ctx := context.Background()
	kinds := func(evs []api.Event) string {
		var out []string
		for _, ev := range evs {
			id := ev.ID
			if ev.Pane != nil {
				id = ev.Pane.ID
			}
			out = append(out, strings.TrimSpace(ev.Type+" "+id))
		}
		return strings.Join(out, ", ")
	}
	evs := h.build(ctx, []string{"state:w-1", "home", "state:w-2", "pane:w-9"}, false)
	if got, want := kinds(evs), "state w-1, home, pane w-2, pane_removed w-9"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if st := evs[0].State; st.PID != 0 || st.ExitCode == nil || *st.ExitCode != 1 {
		t.Fatalf("an exited pane's state %+v: want its code and no pid, as ls shows it", st)
	}
	if evs[1].Home.Node != "a" {
		t.Fatalf("home %+v", evs[1].Home)
	}
	if got, want := kinds(h.build(ctx, []string{"state:w-1", "pane:w-1"}, false)), "pane w-1"; got != want {
		t.Fatalf("a pane's state and document: %q, want %q", got, want)
	}
	local := h.build(ctx, []string{"summary", "home", "task:3", "pane:w-2", "state:w-1", "pane:w-9"}, true)
	if got, want := kinds(local), "state w-1, pane_removed w-9"; got != want {
		t.Fatalf("local stream %q, want %q", got, want)
	}
}
