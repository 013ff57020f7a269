package outbox

import (
	"errors"
	"time"

	"github.com/cicy-ai/cicy-agent/schema"
)

// Pane is one pane as the outbox drives it. The supervisor's pane-kind
// adapters (cicy, shell, CLI agent) implement it; the outbox never asks
// which kind a pane is.
type Pane interface {
	// View is the pane's state now, as the decision step needs it.
	View() View
	// Deliver hands t to the pane, which View said is idle; t is already
	// recorded as delivered. wake may be called from any goroutine, even
	// after the outbox stopped, when the delivery progressed without a
	// state change of the pane (a cicy turn's result arrived); it never
	// blocks. An error's text is the task's error ("could not type into
	// the worker: …"); one made with Retry queues the task again instead.
	Deliver(t schema.Task, wake func()) (Delivery, error)
	// Notify gives this master the line that tells of t, which ended
	// (Notification, full or not as the pane takes it).
	Notify(t schema.Task) error
	// Recover says what became of t, delivered to this pane before the
	// supervisor restarted. wake is as for Deliver.
	Recover(t schema.Task, wake func()) Recovery
	// Noticed says whether the notification of t reached this master
	// before the supervisor restarted, when the pane can tell (a cicy
	// pane's history can).
	Noticed(t schema.Task) Notice
}

// ErrRetry, wrapped in Deliver's error, says the pane could not take the
// task now but may later: it is queued again instead of failed.
var ErrRetry = errors.New("the worker could not take the task now")

// Retry is err wrapping ErrRetry with err's own text: the task queued
// again gives the reason "the worker could not take it: " + err.Error().
func Retry(err error) error { return retryError{err} }

type retryError struct{ err error }

func (e retryError) Error() string   { return e.err.Error() }
func (e retryError) Unwrap() []error { return []error{ErrRetry, e.err} }

// View is what the outbox knows of a pane at one step.
type View struct {
	// Running: its process or turn loop runs.
	Running bool
	// Idle: it takes a task now.
	Idle bool
	// Receptive: a notification can be given to it now (a cicy pane
	// queues it; a shell pane is typed into; a CLI agent takes it at
	// its idle prompt).
	Receptive bool
	// Reason is why it is in its state, for people (a failure's text).
	Reason string
	// Handoff says how a task is handed to it, for people: the reason
	// of the change to delivered ("typed into the idle worker").
	Handoff string
}

// Delivery is a task handed to a pane. Only the outbox goroutine calls
// its methods. The outbox lets go of it without a call when the task is
// settled or the outbox stops (the task stays delivered for the next
// start to recover).
type Delivery interface {
	// Check looks at the pane: has the task ended, and how? A delivery
	// whose pane did not take the task in time ends failed here. Once
	// ended, it keeps saying so (a settle the store did not record is
	// tried again).
	Check(now time.Time) Progress
	// Abandon lets go of the task: it was cancelled, or its pane is
	// gone or stopped (a cicy pane's running turn is cancelled).
	Abandon()
}

// Progress is what a pane says of a task delivered to it. A pane that
// stopped (View().Running is false) with the task not ended fails it
// with the outbox's words ("the worker's process ended: …"); a delivery
// that wants its own says Ended first.
type Progress struct {
	Ended bool
	// Failed: it ended failed, with Error; otherwise done, with Result.
	Failed bool
	Result string // the answer, when it ended done (a failed one may have output too)
	Error  string // the error, when it ended failed
	How    string // the change's reason, for people
	// Source is where the result or the failure came from (schema's
	// Source… values).
	Source string
	// Next is when Check wants to look again even if nothing happens
	// (a deadline, a second Enter); zero when only an event can matter.
	Next time.Time
}

// Verdict is what became of a task delivered before a restart.
type Verdict int

// The verdicts.
const (
	// Resumed: the pane outlived the supervisor (a tmux session); the
	// Recovery's Delivery tracks the task from here.
	Resumed Verdict = iota
	// Finished: the pane finished it before the restart (from its
	// history); Result holds the answer.
	Finished
	// Interrupted: the restart cut its work short; it may be delivered
	// again.
	Interrupted
	// Lost: the pane's process ended with the supervisor.
	Lost
)

// Recovery is a Pane's word on a task delivered before a restart.
type Recovery struct {
	Verdict  Verdict
	Result   string
	Delivery Delivery // with Resumed
}

// Notice is whether a master got a notification before a restart.
type Notice int

// The notices.
const (
	// NoticeUnknown: the pane cannot tell; the record stands.
	NoticeUnknown Notice = iota
	// NoticeSeen: the master has it, recorded or not.
	NoticeSeen
	// NoticeLost: recorded as sent, but the master never got it.
	NoticeLost
)
