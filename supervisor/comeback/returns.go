package comeback

import (
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Panes is the supervisor's registry as the returns ask of it.
type Panes interface {
	// BringBack starts pane id's program again, unless something else
	// started, stopped or removed it meanwhile (quick: the quick deaths
	// in a row before it, for the log); a CLI agent resumes its recorded
	// session when resume is set.
	BringBack(id, why string, quick int, resume bool)
	// CrashLoop stops bringing pane id back: its state says so (why its
	// last program ended: last).
	CrashLoop(id string, last pane.Status, quick int)
	// Found is how pane id, found gone at the start, is now.
	Found(id string) Found
}

// Found is how a pane found gone at the start is now.
type Found struct {
	Removed bool   // it was removed since
	Stopped bool   // nothing runs for it
	Gone    bool   // stopped, it still waits to come back
	Back    string // how it last came back ("" when it did not)
}

// Returns brings panes back: the ones found gone at a start, once the
// outbox has settled their tasks (BringBackAll), and the ones whose
// program exits by itself (Exited). Each return runs on a goroutine of
// its own; Stop ends their waits and Wait waits for them.
type Returns struct {
	panes Panes

	mu sync.Mutex
	// closing is set by Stop: no pane comes back after it.
	closing bool
	quit    chan struct{}
	running sync.WaitGroup
	// gone are the panes found gone at the start, still to bring back;
	// atStart all of them, and startedAt the start, for the summary.
	gone, atStart []string
	startedAt     time.Time
}

// New is the returns of the panes p.
func New(p Panes) *Returns { return &Returns{panes: p, quit: make(chan struct{})} }

// Begin notes the start: the panes found gone from now on are its.
func (r *Returns) Begin(at time.Time) {
	r.mu.Lock()
	r.startedAt = at
	r.mu.Unlock()
}

// FoundGone notes pane id found gone at the start, to bring back once the
// outbox has settled its tasks.
func (r *Returns) FoundGone(id string) {
	r.mu.Lock()
	r.gone = append(r.gone, id)
	r.atStart = append(r.atStart, id)
	r.mu.Unlock()
}

// BringBackAll brings back, each on a goroutine of its own, the panes
// found gone at the start; it runs once the outbox has settled their
// tasks (a task a pane that cannot resume was working on failed as
// interrupted by a restart).
func (r *Returns) BringBackAll() {
	r.mu.Lock()
	ids := r.gone
	r.gone = nil
	r.mu.Unlock()
	for _, id := range ids {
		r.goBack(func() { r.panes.BringBack(id, Reboot, 0, true) })
	}
}

// Exited is the restart policy's look at pane id, whose program ended by
// itself with st after quick quick deaths in a row, as d decided (Decide):
// it comes back, after a wait that doubles with each quick death, or
// stops in a crash loop.
func (r *Returns) Exited(id string, st pane.Status, quick int, d Decision) {
	switch d.Action {
	case Fresh:
		r.goBack(func() { r.panes.BringBack(id, d.Why, quick, false) })
	case Loop:
		r.goBack(func() { r.panes.CrashLoop(id, st, quick) })
	case Again:
		r.goBack(func() {
			select {
			case <-time.After(d.Wait):
			case <-r.quit:
				return
			}
			r.panes.BringBack(id, d.Why, quick, true)
		})
	}
}

// goBack runs f on a goroutine Wait waits for; not after Stop.
func (r *Returns) goBack(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return
	}
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		f()
	}()
}

// Stop ends the waits: no pane comes back after it.
func (r *Returns) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closing {
		r.closing = true
		close(r.quit)
	}
}

// Wait waits for the returns under way.
func (r *Returns) Wait() { r.running.Wait() }

// SummaryFor is how long status sums up how the panes came back.
const SummaryFor = time.Hour

// Summary sums up how the panes found gone at the start came back; nil
// when none was, or SummaryFor after the start.
func (r *Returns) Summary() *topology.CameBack {
	r.mu.Lock()
	ids, at := r.atStart, r.startedAt
	r.mu.Unlock()
	if len(ids) == 0 || time.Since(at) > SummaryFor {
		return nil
	}
	found := make([]Found, len(ids))
	for i, id := range ids {
		found[i] = r.panes.Found(id)
	}
	return Tally(at, found)
}

// Tally sums up found, the panes found gone at the start at.
func Tally(at time.Time, found []Found) *topology.CameBack {
	c := &topology.CameBack{At: at, Gone: len(found)}
	for _, f := range found {
		switch {
		case f.Removed:
			c.Gone--
		case f.Stopped && f.Gone:
			c.Waiting++
		case f.Stopped && f.Back == "":
			c.Failed++
		case IsResumed(f.Back):
			c.Resumed++
		default:
			c.Restarted++
		}
	}
	return c
}
