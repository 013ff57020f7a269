package cicy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// TestQueueSurvivesStop: a message accepted while a turn runs (a 🔔 line
// for a busy master) is on disk before Send returns: when the process
// stops before the turn that would take it, the next start runs it — once.
func TestQueueSurvivesStop(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newRig(t, func(n int, rec *apitest.Recorded) apitest.Reply {
		if n == 0 {
			select {
			case <-release:
			case <-rec.Context.Done():
			}
		}
		return textReply("ok")
	})
	a := r.start()
	r.sendAsync("a long turn", "")
	pollUntil(t, "the first request", func() bool { return r.srv.Len() == 1 })
	line := "🔔 [w-2] task 7 → done: the answer"
	if _, err := a.Send(line, "", false); err != nil {
		t.Fatal(err)
	}
	a.Close() // the stop: the running turn is cut short

	b := r.start()
	pollUntil(t, "the queued line's turn after the restart", func() bool {
		for _, rec := range r.srv.Requests() {
			if m := rec.Req.Messages; len(m) > 0 && strings.Contains(m[len(m)-1].JoinedText(), line) {
				return b.Status().State == Idle
			}
		}
		return false
	})
	n := 0
	for _, m := range r.history() {
		if m.Role == wire.RoleUser && strings.Contains(m.JoinedText(), line) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the line is in the history %d times, want once", n)
	}
	if _, err := os.Stat(filepath.Join(HistoryDir(r.ws), queueFile)); !os.IsNotExist(err) {
		t.Errorf("the queue file is left: %v", err)
	}
}

// TestQueueFileTakenAlready: a stop right after a turn put a message in
// the history, before the queue file forgot it, does not run it twice.
func TestQueueFileTakenAlready(t *testing.T) {
	r := newRig(t, replies(textReply("ok")))
	a := r.start()
	if res := r.send("do it once"); res.Status != TurnCompleted {
		t.Fatal(res)
	}
	a.Close()
	if err := saveQueue(HistoryDir(r.ws), []item{{text: "do it once"}}); err != nil {
		t.Fatal(err)
	}
	r.start()
	if n := r.srv.Len(); n != 1 {
		t.Fatalf("%d requests, want the one turn", n)
	}
	if _, err := os.Stat(filepath.Join(HistoryDir(r.ws), queueFile)); !os.IsNotExist(err) {
		t.Errorf("the queue file is left: %v", err)
	}
}

// TestMentionsWhileBusy: while a turn or a compaction holds the history,
// Mentions still finds every user message of it, not only the running
// turn's (a master restarted busy with a queued 🔔 line was told again of
// a task whose line its history held).
func TestMentionsWhileBusy(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newRig(t, func(n int, rec *apitest.Recorded) apitest.Reply {
		if n > 0 {
			select {
			case <-release:
			case <-rec.Context.Done():
			}
		}
		return textReply("ok")
	})
	a := r.start()
	earlier := "🔔 [w-2] task 7 → done"
	if res := r.send(earlier + ": the answer"); res.Status != TurnCompleted {
		t.Fatal(res)
	}
	r.sendAsync("a long turn", "")
	pollUntil(t, "the second turn's request", func() bool { return r.srv.Len() == 2 })
	for text, want := range map[string]bool{earlier: true, "a long turn": true, "🔔 [w-2] task 8 → done": false} {
		if got := a.Mentions(text); got != want {
			t.Errorf("during a turn, Mentions(%q) = %v, want %v", text, got, want)
		}
	}
	a.Cancel()
	pollUntil(t, "the turn cancelled", func() bool { return a.Status().State == Idle })
	r.sendAsync("/compact", "")
	pollUntil(t, "the compaction's request", func() bool { return r.srv.Len() == 3 })
	if !a.Mentions(earlier) {
		t.Errorf("during a compaction, Mentions(%q) = false", earlier)
	}
}
