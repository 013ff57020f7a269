package eventhub

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
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
