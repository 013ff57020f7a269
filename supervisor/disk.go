package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// diskWatch knows whether the home's writes fail for lack of space: each
// writer (the ledger, a cicy pane's history) says how its last write went.
// One that failed because the disk is full stands until a write of the
// same writer succeeds; while any stands, the home needs you (disk-full).
//
// A writer that writes again only when asked (the database refused a
// dispatch; a cicy pane could not be restored) gets a retry: while any
// retry waits, a timer runs them (diskRetryFirst, doubling up to
// diskRetryMax), and at once when another writer's write succeeds; a
// retry that succeeds is dropped and its writer cleared.
type diskWatch struct {
	mu   sync.Mutex
	full map[string]error // writer → the error of its failed write
	// retries are the writers' retries (nil error: done).
	retries map[string]*diskRetry
	timer   *time.Timer
	backoff time.Duration
	running bool // runRetries runs: it sets the timer again itself
	closed  bool
	// changed is called (never under mu, never blocking) when the state
	// of the home changed.
	changed func()
}

// The retry timer of the writers that write only when asked: at most
// diskRetryMax apart, so what the full disk held back comes back within
// seconds of the room made (one small write to try is cheap).
const (
	diskRetryFirst = time.Second
	diskRetryMax   = 5 * time.Second
)

// diskRetry is a writer's retry (its own value: a replaced one is told
// apart).
type diskRetry struct{ write func() error }

func newDiskWatch(changed func()) *diskWatch {
	return &diskWatch{full: map[string]error{}, retries: map[string]*diskRetry{}, changed: changed}
}

// note records how writer's last write went: nil when it succeeded. An
// error other than a full disk changes nothing: it is not news of the
// disk.
func (d *diskWatch) note(writer string, err error) {
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

// retry records that writer's write failed for lack of space (err) and
// that retry writes it again; it runs on the timer until it succeeds. A
// retry already waiting for writer is replaced.
func (d *diskWatch) retry(writer string, err error, retry func() error) {
	d.mu.Lock()
	if _, ok := d.retries[writer]; !ok {
		d.retries[writer] = &diskRetry{write: retry}
		if d.timer == nil && !d.running {
			d.backoff = diskRetryFirst
			d.schedule(d.backoff)
		}
	}
	d.mu.Unlock()
	d.note(writer, err)
}

// schedule sets the timer to run the retries after wait (under mu).
func (d *diskWatch) schedule(wait time.Duration) {
	if d.closed {
		return
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = time.AfterFunc(wait, d.runRetries)
}

// runRetries runs every waiting retry once (on the timer's goroutine).
func (d *diskWatch) runRetries() {
	d.mu.Lock()
	d.timer, d.running = nil, true
	retries := make(map[string]*diskRetry, len(d.retries))
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
			d.note(w, nil)
		} else {
			d.note(w, err)
		}
	}
	d.mu.Lock()
	d.running = false
	if len(d.retries) > 0 && d.timer == nil {
		d.backoff = min(2*d.backoff, diskRetryMax)
		d.schedule(d.backoff)
	}
	d.mu.Unlock()
}

// close stops the retries.
func (d *diskWatch) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

// reason is the sentence of the home's full disk, "" while writes succeed:
// "disk full: the ledger and the history of w-3 cannot be written (…)".
func (d *diskWatch) reason() string {
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

// Home is what needs a person about the home as a whole.
func (s *Supervisor) Home() api.HomeInfo {
	h := api.HomeInfo{DiskFull: s.disk.reason(), Node: s.cfg.Node, CameBack: s.back.Summary()}
	h.Notify = s.notify.States(context.Background())
	return h
}

// homeNeeds is the home's part of needs-you (for health).
func (s *Supervisor) homeNeeds() []topology.Attention { return s.Home().Needs() }

// databaseWrote is told every write to the database: one refused for
// lack of space (a dispatch, a pane's runtime) makes the home need you
// until a write succeeds, which a retry tries on the timer.
func (s *Supervisor) databaseWrote(err error) {
	if !cicy.IsDiskFull(err) {
		s.disk.note("the database", err)
		return
	}
	s.disk.retry("the database", err, func() error {
		return s.store.SetSetting(context.Background(), "disk_probe", schema.Now())
	})
}
