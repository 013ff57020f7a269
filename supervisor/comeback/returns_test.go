package comeback

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
)

// panesSeen records what the returns asked of the registry.
type panesSeen struct {
	mu    sync.Mutex
	calls []string
	found map[string]Found
}

func (p *panesSeen) note(s string) {
	p.mu.Lock()
	p.calls = append(p.calls, s)
	p.mu.Unlock()
}

func (p *panesSeen) BringBack(id, why string, quick int, resume bool) {
	p.note(fmt.Sprintf("back %s %q %d %v", id, why, quick, resume))
}

func (p *panesSeen) CrashLoop(id string, _ pane.Status, quick int) {
	p.note(fmt.Sprintf("loop %s %d", id, quick))
}

func (p *panesSeen) Found(id string) Found { return p.found[id] }

// waitCalls polls until n calls were made, and returns them.
func (p *panesSeen) waitCalls(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		calls := append([]string(nil), p.calls...)
		p.mu.Unlock()
		if len(calls) >= n {
			return calls
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls, want %d: %q", len(calls), n, calls)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReturnsBringBack: the panes found gone come back once, resuming,
// when BringBackAll is called; an exit comes back as decided, a loop is
// stopped; after Stop nothing comes back and a wait ends at once.
func TestReturnsBringBack(t *testing.T) {
	t.Parallel()
	p := &panesSeen{found: map[string]Found{"w-1": {Back: Resumed("s")}, "w-2": {Stopped: true, Gone: true}}}
	r := New(p)
	r.Begin(time.Now())
	r.FoundGone("w-1")
	r.FoundGone("w-2")
	r.BringBackAll()
	r.BringBackAll() // once only
	got := p.waitCalls(t, 2)
	r.Wait()
	if len(got) != 2 || !(got[0] == `back w-1 "`+Reboot+`" 0 true` || got[1] == `back w-1 "`+Reboot+`" 0 true`) {
		t.Fatalf("the panes found gone: %q", got)
	}
	if s := r.Summary(); s == nil || s.Gone != 2 || s.Resumed != 1 || s.Waiting != 1 {
		t.Fatalf("summary: %+v", s)
	}
	r.Exited("w-3", exit(1), LoopDeaths, Decision{Action: Loop})
	r.Exited("w-4", exit(1), 1, Decision{Action: Fresh, Why: "fresh"})
	r.Exited("w-5", exit(0), 0, Decision{Action: Stay})
	r.Wait()
	if got := p.waitCalls(t, 4)[2:]; len(got) != 2 {
		t.Fatalf("after the exits: %q", got)
	}
	r.Exited("w-6", exit(1), 0, Decision{Action: Again, Wait: time.Hour, Why: ByPolicy})
	r.Stop()
	r.Stop() // twice is fine
	r.Wait() // the hour's wait ended
	r.Exited("w-7", exit(1), 1, Decision{Action: Fresh, Why: "fresh"})
	r.Wait()
	if got := p.waitCalls(t, 4); len(got) != 4 {
		t.Fatalf("something came back after Stop: %q", got)
	}
}

// TestReturnsWaitThenBack: an exit decided Again comes back after its
// wait, resuming, with the quick deaths before it.
func TestReturnsWaitThenBack(t *testing.T) {
	t.Parallel()
	p := &panesSeen{}
	r := New(p)
	r.Exited("w-1", exit(1), 2, Decision{Action: Again, Wait: time.Millisecond, Why: ByPolicy})
	if got := p.waitCalls(t, 1); got[0] != `back w-1 "`+ByPolicy+`" 2 true` {
		t.Fatalf("%q", got)
	}
	r.Stop()
	r.Wait()
}

// TestSummaryNone: no summary when no pane was found gone.
func TestSummaryNone(t *testing.T) {
	t.Parallel()
	r := New(&panesSeen{})
	r.Begin(time.Now())
	if s := r.Summary(); s != nil {
		t.Fatalf("%+v", s)
	}
}
