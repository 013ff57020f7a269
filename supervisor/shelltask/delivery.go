package shelltask

import (
	"fmt"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// Shell is the worker's program as a run's delivery sees it: whether it
// still runs, and its keyboard (Ctrl-C).
type Shell interface {
	Status() pane.Status
	SendKeys(b []byte) error
}

// Watch is the delivery (outbox.Delivery) of a run typed at at into the
// shell p, its files watched until they say it ended: wake wakes the
// outbox on each change, gone is closed when the program is let go of,
// scrub takes the credentials out of its output, and ended is told when
// the shell is seen back at its prompt.
func Watch(r Run, p Shell, at time.Time, scrub func(string) string, gone <-chan struct{}, ended func(), wake func()) *Delivery {
	d := &Delivery{p: p, run: r, at: at, scrub: scrub, quit: make(chan struct{}), gone: gone, ended: ended}
	go d.watch(wake)
	return d
}

// Delivery is a task run by a POSIX shell worker through its
// script: it ends when the script writes the exit status (or the shell
// goes, or Ctrl-C stops the script before it could).
type Delivery struct {
	p     Shell
	run   Run
	at    time.Time
	scrub func(string) string
	quit  chan struct{}
	stop  sync.Once
	gone  <-chan struct{}
	ended func() // tells the kind the shell is back at its prompt
	// Seen by Check (the outbox goroutine only): when the exit status,
	// and tee's end without one, were first seen.
	endAt, teedAt time.Time
}

// watch wakes the outbox each time the run's files change, until the
// exit status is there, the program is gone, or the task is abandoned.
// A stat of three files every Poll is its whole cost.
func (d *Delivery) watch(wake func()) {
	tick := time.NewTicker(Poll)
	defer tick.Stop()
	var last End
	var endAt time.Time
	for {
		select {
		case <-d.quit:
			return
		case <-d.gone:
			return
		case <-tick.C:
		}
		e := d.run.Look()
		if e != last {
			last = e
			wake()
		}
		if e.Ended && endAt.IsZero() {
			endAt = time.Now()
		}
		// Ended, and tee passed the output on (or had its time to).
		if (e.Ended && (e.Teed || time.Since(endAt) > TeeWait)) || !d.p.Status().Running() {
			wake()
			return
		}
	}
}

func (d *Delivery) Check(now time.Time) outbox.Progress {
	e := d.run.Look()
	if e.Ended {
		if d.endAt.IsZero() {
			d.endAt = now
		}
		if !e.Teed && now.Before(d.endAt.Add(TeeWait)) {
			return outbox.Progress{Next: d.endAt.Add(TeeWait)} // the last output is on its way
		}
		d.ended()
		how := fmt.Sprintf("the worker's shell reported the command's exit status %d", e.Code)
		if e.Code == 0 {
			return outbox.Progress{Ended: true, Result: d.output(), How: how, Source: schema.SourceShell}
		}
		return outbox.Progress{Ended: true, Failed: true, Result: d.output(), Error: fmt.Sprintf("exit status %d", e.Code), How: how, Source: schema.SourceShell}
	}
	if st := d.p.Status(); !st.Running() {
		return outbox.Progress{Ended: true, Failed: true, Result: d.output(), Error: "the worker's process ended: " + st.Reason, How: "worker exited", Source: schema.SourceShell}
	}
	if !e.Started {
		if !now.Before(d.at.Add(StartWait)) {
			return outbox.Progress{Ended: true, Failed: true, How: "delivery not verified", Source: schema.SourceShell,
				Error: fmt.Sprintf("the worker's shell did not start the typed task within %s (is a program other than the shell in the foreground?)", StartWait)}
		}
		return outbox.Progress{Next: d.at.Add(StartWait)}
	}
	if e.Teed {
		if d.teedAt.IsZero() {
			d.teedAt = now
		}
		if !now.Before(d.teedAt.Add(InterruptWait)) {
			return outbox.Progress{Ended: true, Failed: true, Result: d.output(), How: "the command's output ended without an exit status", Source: schema.SourceShell,
				Error: "the command was interrupted before it ended (no exit status)"}
		}
		return outbox.Progress{Next: d.teedAt.Add(InterruptWait)}
	}
	return outbox.Progress{}
}

// output is the run's output for the task's result, credentials taken
// out — of the output file as well, which then holds them no more; a
// failure to read it is said in its place.
func (d *Delivery) output() string {
	// A file that could not be rewritten (a full disk) is removed with
	// the task's other files; the result is scrubbed all the same.
	_ = d.run.scrubOutput(d.scrub)
	out, err := d.run.output()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return d.scrub(out)
}

// Abandon lets go of the task (cancelled, or its pane stopped): a command
// still running is interrupted with Ctrl-C, as a person would, so that the
// worker's shell is free for the next task.
func (d *Delivery) Abandon() {
	d.stop.Do(func() {
		close(d.quit)
		if e := d.run.Look(); e.Started && !e.Ended && d.p.Status().Running() {
			_ = d.p.SendKeys([]byte{0x03}) // a pane gone meanwhile has nothing to interrupt
		}
	})
}
