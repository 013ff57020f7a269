package diskwatch

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
)

// Watch knows whether the home's writes fail for lack of space: each
// writer (the ledger, a cicy pane's history) says how its last write went.
// One that failed because the disk is full stands until a write of the
// same writer succeeds; while any stands, the home needs you (disk-full).
//
// A writer that writes again only when asked (the database refused a
// dispatch; a cicy pane could not be restored) gets a retry: while any
// retry waits, a timer runs them (retryFirst, doubling up to
// retryMax), and at once when another writer's write succeeds; a
// retry that succeeds is dropped and its writer cleared.
type Watch struct {
	mu   sync.Mutex
	full map[string]error // writer → the error of its failed write
	// retries are the writers' retries (nil error: done).
	retries map[string]*pending
	timer   *time.Timer
	backoff time.Duration
	running bool // runRetries runs: it sets the timer again itself
	closed  bool
	// changed is called (never under mu, never blocking) when the state
	// of the home changed.
	changed func()
}

// The retry timer of the writers that write only when asked: at most
// retryMax apart, so what the full disk held back comes back within
// seconds of the room made (one small write to try is cheap).
const (
	retryFirst = time.Second
	retryMax   = 5 * time.Second
)

// pending is a writer's retry (its own value: a replaced one is told
// apart).
type pending struct{ write func() error }

// New is a watch that calls changed (never blocking) when the state of
// the home changed: a writer's write failed for lack of space, or one
// that had succeeded again.
func New(changed func()) *Watch {
	return &Watch{full: map[string]error{}, retries: map[string]*pending{}, changed: changed}
}

// Note records how writer's last write went: nil when it succeeded. An
// error other than a full disk changes nothing: it is not news of the
// disk.
func (d *Watch) Note(writer string, err error) {
	d.mu.Lock()
	_, was := d.full[writer]
	switch {
	case err == nil:
		delete(d.full, writer)
	case cicy.IsDiskFull(err):
		d.full[writer] = err
	}
	_, is := d.full[writer]
	if was && !is && len(d.retries) > 0 {
		// Room again: the waiting retries try now.
		d.schedule(0)
	}
	d.mu.Unlock()
	if was != is && d.changed != nil {
		d.changed()
	}
}

// Retry records that writer's write failed for lack of space (err) and
// that retry writes it again; it runs on the timer until it succeeds. A
// retry already waiting for writer is replaced.
func (d *Watch) Retry(writer string, err error, retry func() error) {
	d.mu.Lock()
	if _, ok := d.retries[writer]; !ok {
		d.retries[writer] = &pending{write: retry}
		if d.timer == nil && !d.running {
			d.backoff = retryFirst
			d.schedule(d.backoff)
		}
	}
	d.mu.Unlock()
	d.Note(writer, err)
}

// schedule sets the timer to run the retries after wait (under mu).
func (d *Watch) schedule(wait time.Duration) {
	if d.closed {
		return
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = time.AfterFunc(wait, d.runRetries)
}

// runRetries runs every waiting retry once (on the timer's goroutine).
func (d *Watch) runRetries() {
	d.mu.Lock()
	d.timer, d.running = nil, true
	retries := make(map[string]*pending, len(d.retries))
	for w, r := range d.retries {
		retries[w] = r
	}
	d.mu.Unlock()
	for w, r := range retries {
		err := r.write()
		d.mu.Lock()
		if (err == nil || !cicy.IsDiskFull(err)) && d.retries[w] == r {
			// Done, or failed for another reason, which the retry
			// itself reports: the disk is not the matter any more.
			delete(d.retries, w)
		}
		d.mu.Unlock()
		if err == nil || !cicy.IsDiskFull(err) {
			d.Note(w, nil)
		} else {
			d.Note(w, err)
		}
	}
	d.mu.Lock()
	d.running = false
	if len(d.retries) > 0 && d.timer == nil {
		d.backoff = min(2*d.backoff, retryMax)
		d.schedule(d.backoff)
	}
	d.mu.Unlock()
}

// Close stops the retries.
func (d *Watch) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

// Reason is the sentence of the home's full disk, "" while writes succeed:
// "disk full: the ledger and the history of w-3 cannot be written (…)".
func (d *Watch) Reason() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.full) == 0 {
		return ""
	}
	writers := make([]string, 0, len(d.full))
	for w := range d.full {
		writers = append(writers, w)
	}
	slices.Sort(writers)
	names := strings.Join(writers, ", ")
	if n := len(writers); n > 1 {
		names = strings.Join(writers[:n-1], ", ") + " and " + writers[n-1]
	}
	// The cause shown is a file's when one is among them: it names the
	// folder, so the disk.
	shown := d.full[writers[0]]
	for _, w := range writers {
		var pe *fs.PathError
		if errors.As(d.full[w], &pe) {
			shown = d.full[w]
			break
		}
	}
	return fmt.Sprintf("disk full: %s cannot be written (%s); free space on that disk: what waits in memory is written again once it can be",
		names, cicy.WriteProblem(shown))
}
