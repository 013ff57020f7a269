package cicypanes

import (
	"cmp"
	"sync/atomic"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// Worker is a cicy pane as the outbox sees it: a task is a message to
// its turn loop, whose turn's answer is the task's result.
type Worker struct {
	Agent *cicy.Agent
	// StopWhy is why the loop was stopped ("" while it was not), for the
	// task it carried.
	StopWhy func() string
}

// Deliver sends the task as a message; the turn that handles it settles it.
func (w Worker) Deliver(t schema.Task, wake func()) (outbox.Delivery, error) {
	ch, err := w.Agent.Send(outbox.Message(t), t.From, true)
	if err != nil {
		return nil, outbox.Retry(err)
	}
	d := &delivery{w: w, quit: make(chan struct{})}
	go d.await(ch, wake)
	return d, nil
}

// Notify queues the full notification as a message.
func (w Worker) Notify(t schema.Task) error {
	_, err := w.Agent.Send(outbox.Notification(t, true), "", false)
	return err
}

// Recover follows a task the worker is still on (its turn, cut short by
// the restart, goes on; or its message waits in the queue), else reads
// the worker's history: a task it answered is finished; one whose turn
// was closed as interrupted, or never started, may run again.
func (w Worker) Recover(t schema.Task, wake func()) outbox.Recovery {
	if ch, ok := w.Agent.Await(outbox.Message(t)); ok {
		d := &delivery{w: w, quit: make(chan struct{})}
		go d.await(ch, wake)
		return outbox.Recovery{Verdict: outbox.Resumed, Delivery: d}
	}
	outcome, answer := w.Agent.MessageOutcome(outbox.Message(t))
	if outcome == cicy.OutcomeDone {
		return outbox.Recovery{Verdict: outbox.Finished, Result: answer}
	}
	return outbox.Recovery{Verdict: outbox.Interrupted}
}

// Noticed reads the master's history for the notification of t: one sent
// after the history was last written and not in it was lost with the
// previous supervisor (one sent before that and absent was folded by
// /compact or dropped by /clear: not lost).
func (w Worker) Noticed(t schema.Task) outbox.Notice {
	if t.NotifiedAt.Valid && schema.ParseTime(t.NotifiedAt.String).Before(w.Agent.RestoredFrom()) {
		return outbox.NoticeUnknown
	}
	if w.Agent.Mentions(outbox.Notification(t, false)) {
		return outbox.NoticeSeen
	}
	if t.NotifiedAt.Valid {
		return outbox.NoticeLost
	}
	return outbox.NoticeUnknown
}

// delivery is a task sent to a cicy worker as a message.
type delivery struct {
	w    Worker
	got  atomic.Pointer[cicy.TurnResult] // the turn's result, once it came
	quit chan struct{}                   // closed by Abandon
}

// await keeps the turn's result and wakes the outbox; it ends with the
// result, the loop's stop, or Abandon.
func (d *delivery) await(ch <-chan cicy.TurnResult, wake func()) {
	select {
	case r := <-ch:
		d.got.Store(&r)
	case <-d.w.Agent.Done():
	case <-d.quit:
		return
	}
	wake()
}

func (d *delivery) Check(time.Time) outbox.Progress {
	r := d.got.Load()
	if r == nil {
		select {
		case <-d.w.Agent.Done():
			return d.stopped()
		default:
			return outbox.Progress{}
		}
	}
	switch r.Status {
	case cicy.TurnCompleted:
		return outbox.Progress{Ended: true, Result: r.Answer, How: "the worker's turn ended with an answer", Source: schema.SourceTurn}
	case cicy.TurnCancelled:
		return outbox.Progress{Ended: true, Failed: true, Error: "the worker's turn was cancelled", How: "turn cancelled", Source: schema.SourceTurn}
	default:
		return outbox.Progress{Ended: true, Failed: true, Error: r.Error, How: "the worker's turn failed", Source: schema.SourceTurn}
	}
}

// stopped is the word on a task whose worker's loop stopped before its
// turn ended (a killed worker is gone to the outbox, which fails its task
// as killed whatever this says).
func (d *delivery) stopped() outbox.Progress {
	why := "stopped"
	if d.w.StopWhy != nil {
		why = cmp.Or(d.w.StopWhy(), why)
	}
	return outbox.Progress{Ended: true, Failed: true, Error: "the worker's turn loop was " + why + " before its turn ended", How: "worker exited"}
}

// Abandon cancels the running turn when the task's own turn has not ended
// (the task was cancelled, or its worker killed; a stopped loop has no
// turn to cancel).
func (d *delivery) Abandon() {
	select {
	case <-d.quit:
		return
	default:
		close(d.quit)
	}
	if d.got.Load() == nil {
		d.w.Agent.Cancel()
	}
}
