package supervisor

import (
	"context"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// dormant is a cicy pane a start has not restored yet: listed at once
// from its row (starting, "not restored yet"), its turn loop and history are brought back (awaken) when
// it first gets input — a message, a task, a command, a look at its turn
// — or by the background restore that follows the start, which takes up
// first the panes whose turn was in flight or whose queue holds messages.
type dormant struct {
	cfg schema.Pane
	st  pane.Status
	// wake restores the pane, once, and returns what runs it now (the
	// restored turn loop, or a stopped pane saying why it could not be).
	wake func() kind
	// start restores the pane's turn loop without taking e.op, for Stop,
	// whose caller holds it.
	start func() (kind, error)
}

// dormantReason is the reason a pane not restored yet shows.
const dormantReason = "not restored yet: its history is read on its first input, or soon in the background"

func (d *dormant) Status() pane.Status { return d.st }

func (d *dormant) Screen() (string, error) { return d.wake().Screen() }

func (d *dormant) Send(ctx context.Context, req api.SendRequest) (*api.SendResult, error) {
	return d.wake().Send(ctx, req)
}

// Stop ends the pane. One whose turn was in flight, or whose queue holds
// messages, is restored first and stopped as a running pane is (its turn
// ended as cancelled): a kill or a restart does not take it up later.
func (d *dormant) Stop(grace time.Duration, why string) pane.Status {
	if cicy.TakesUp(d.cfg.Workspace) {
		if k, err := d.start(); err == nil {
			return k.Stop(grace, why)
		}
	}
	return pane.Status{State: pane.Exited, Reason: why, Since: time.Now()}
}

// Detach leaves the pane's files as they are: the next start takes up
// what this one did not restore.
func (d *dormant) Detach(_ time.Duration, why string) pane.Status {
	return pane.Status{State: pane.Exited, Reason: why, Since: time.Now()}
}

// Describe says the history is not read yet: Messages is unknown.
func (d *dormant) Describe(pi *api.PaneInfo) { pi.Unrestored = true }

func (d *dormant) Explain(x *api.Explanation) { d.wake().Explain(x) }

func (d *dormant) Preview(ctx context.Context, lines int, emit func(api.ScreenResponse) error, gone func() bool) error {
	return d.wake().Preview(ctx, lines, emit, gone)
}

// The outbox looks at a pane for its tasks and notifications only: each
// of its calls restores the pane.
func (d *dormant) View() outbox.View { return d.wake().View() }

func (d *dormant) Deliver(t schema.Task, wake func()) (outbox.Delivery, error) {
	return d.wake().Deliver(t, wake)
}

func (d *dormant) Notify(t schema.Task) error { return d.wake().Notify(t) }

func (d *dormant) Recover(t schema.Task, wake func()) outbox.Recovery {
	return d.wake().Recover(t, wake)
}

func (d *dormant) Noticed(t schema.Task) outbox.Notice { return d.wake().Noticed(t) }

// sleepEntry makes e a dormant cicy pane, listed as starting until
// restored: it takes messages and tasks (each restores it), but whether
// its last turn goes on is not known before its history is read, so it
// is not said to be idle (a wait for idle after a crash waits for the
// turn that goes on).
func (s *Supervisor) sleepEntry(e *entry) {
	e.set(&dormant{
		cfg: e.cfg, st: pane.Status{State: pane.Starting, Reason: dormantReason, Since: time.Now()},
		wake:  func() kind { return s.awaken(e) },
		start: func() (kind, error) { return s.launch(e, true) },
	})
}

// awaken restores a dormant pane (under e.op, unless something else
// replaced it meanwhile) and returns what runs the pane now.
func (s *Supervisor) awaken(e *entry) kind {
	if _, ok := e.kind().(*dormant); !ok {
		return e.kind()
	}
	e.op.Lock()
	defer e.op.Unlock()
	if _, ok := e.kind().(*dormant); !ok {
		return e.kind()
	}
	k, err := s.launch(e, true)
	if err != nil {
		k = s.restoreFailed(e.cfg, err)
	}
	e.set(k)
	s.paneChanged(e.cfg.ID)
	return k
}

// restoreFailed is a cicy pane whose restore failed: an error that says
// why; one that failed for lack of space is tried again when there is
// room (retryRestore).
func (s *Supervisor) restoreFailed(r schema.Pane, err error) kind {
	full := cicy.IsDiskFull(err)
	k := &stopped{cfg: r, st: pane.Status{State: pane.Error, Reason: "could not restore: " + err.Error(), Since: time.Now()}, noRoom: full}
	if full {
		s.disk.Retry("the restore of "+r.ID, err, func() error { return s.retryRestore(r.ID) })
	}
	return k
}

// restoreDormant restores the dormant panes after the start, until quit
// is closed: first those that take up work of their own (a turn that was
// in flight, queued messages: they cannot wait for input), then the
// others, in id order.
func (s *Supervisor) restoreDormant(quit <-chan struct{}) {
	began, n := time.Now(), 0
	var rest []*entry
	for _, e := range s.entries() {
		if _, ok := e.kind().(*dormant); !ok {
			continue
		}
		select {
		case <-quit:
			return
		default:
		}
		if cicy.TakesUp(e.cfg.Workspace) {
			s.awaken(e)
			n++
		} else {
			rest = append(rest, e)
		}
	}
	for e := range slices.Values(rest) {
		select {
		case <-quit:
			return
		default:
		}
		s.awaken(e)
		n++
	}
	if n > 0 {
		s.log.WithFields(logrus.Fields{"panes": n, "took": time.Since(began).Round(time.Millisecond).String()}).Info("Every cicy pane is restored")
	}
}
