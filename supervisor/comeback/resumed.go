package comeback

import (
	"time"

	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// RestartLine is what a CLI agent that came back in its own session is
// told of the task it was working on when the machine went down.
const RestartLine = "the machine restarted while you were working on this task, and you are back in the same conversation: check what is already done, finish the task, and answer as you would have"

// Worker is the pane a resumed task waits for, as the task asks of it.
type Worker interface {
	// Now is what runs for the pane now.
	Now() Now
}

// Now is what runs for a pane at one moment.
type Now struct {
	// Stopped: nothing runs; Gone: found gone at the start, it still
	// waits to come back; Reason: why it is stopped.
	Stopped, Gone bool
	Reason        string
	// Back is how it last came back ("" when it did not).
	Back string
	// Pane is what runs for it, when it is not stopped.
	Pane Runner
}

// Runner is a running pane as a resumed task uses it (the outbox's
// view of a worker, and a delivery to it).
type Runner interface {
	View() outbox.View
	Deliver(t schema.Task, wake func()) (outbox.Delivery, error)
}

// ResumedTask is a task delivered to a CLI agent that was gone at the
// start and comes back resuming its session: once it is back and idle it
// is told, in one line (RestartLine), that the machine restarted while it
// worked on the task, and the task ends with that turn as usual. One that
// does not come back in that session fails, interrupted by the restart.
// It is the outbox's Delivery of the task.
type ResumedTask struct {
	w     Worker
	t     schema.Task
	wake  func()
	inner outbox.Delivery
}

// NewResumedTask is the task t of worker w, which comes back; wake wakes
// the outbox.
func NewResumedTask(w Worker, t schema.Task, wake func()) *ResumedTask {
	return &ResumedTask{w: w, t: t, wake: wake}
}

// Look is how often a task waiting for its worker to come back looks
// again.
const Look = 500 * time.Millisecond

// Check is the outbox's look at the task (outbox.Delivery).
func (d *ResumedTask) Check(now time.Time) outbox.Progress {
	if d.inner != nil {
		return d.inner.Check(now)
	}
	failed := func(why string) outbox.Progress {
		return outbox.Progress{Ended: true, Failed: true, Error: "interrupted by a restart: " + why, How: "its worker did not come back in its session"}
	}
	w := d.w.Now()
	if w.Stopped {
		if w.Gone {
			return outbox.Progress{Next: now.Add(Look)}
		}
		return failed("the worker did not come back (" + w.Reason + ")")
	}
	if !IsResumed(w.Back) {
		return failed("the worker came back in a new conversation, which does not know the task (" + w.Back + ")")
	}
	v := w.Pane.View()
	switch {
	case !v.Running:
		return failed("the worker's process ended (" + v.Reason + ")")
	case !v.Idle:
		return outbox.Progress{Next: now.Add(Look)}
	}
	told := d.t
	told.Text = RestartLine
	inner, err := w.Pane.Deliver(told, d.wake)
	if err != nil {
		return failed("could not tell the worker: " + err.Error())
	}
	d.inner = inner
	return inner.Check(now)
}

// Abandon gives the task up (outbox.Delivery).
func (d *ResumedTask) Abandon() {
	if d.inner != nil {
		d.inner.Abandon()
	}
}
