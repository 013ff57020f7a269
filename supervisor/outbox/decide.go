package outbox

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Snapshot is what one step decides from: the open tasks, the panes'
// views and what is in flight, at Now.
type Snapshot struct {
	Now time.Time
	// The tasks queued, delivered, and ended with their master not told
	// yet, each in id order.
	Queued, Delivered, Unnotified []schema.Task
	// Panes are the views of the panes the tasks name, by id; a pane
	// absent from it is gone.
	Panes map[string]View
	// Flights holds every task the outbox has a Delivery for: a
	// delivered one's Progress as just checked, the zero Progress for
	// one no longer delivered.
	Flights map[int64]Progress
	// Awaited are tasks whose master blocks on them (Await): their
	// notification waits.
	Awaited map[int64]bool

	// Recovering: the first step after a start, which only settles what
	// the previous supervisor left, from the fields below.
	Recovering bool
	// Recovery is each delivered task's pane's word on it (its worker
	// present).
	Recovery map[int64]Recovery
	// Ended are the done and failed tasks whose sender is a pane, with
	// that pane's word on the notification in Notices.
	Ended   []schema.Task
	Notices map[int64]Notice
}

// Op is what an action does.
type Op int

// The ops.
const (
	// OpMove applies Change to Task (a conditional update).
	OpMove Op = iota + 1
	// OpDeliver records Task delivered (Change), then hands it to its
	// worker.
	OpDeliver
	// OpAbandon lets go of Task's delivery (Delivery.Abandon).
	OpAbandon
	// OpTrack keeps the Delivery that Task's pane recovered.
	OpTrack
	// OpNotify tells Task's master it ended, then records that.
	OpNotify
	// OpResend tells Task's master again: it was recorded as told, but
	// the master never got it.
	OpResend
	// OpMark records Task's master as told (there is nobody to tell, or
	// it already knows).
	OpMark
)

var opNames = map[Op]string{OpMove: "move", OpDeliver: "deliver", OpAbandon: "abandon", OpTrack: "track",
	OpNotify: "notify", OpResend: "resend", OpMark: "mark"}

// Action is one thing a step does.
type Action struct {
	Op     Op
	Task   schema.Task
	Change schema.TaskChange // OpMove, OpDeliver
}

// String shows the action for logs and tests: "move 3 delivered→done
// result=… reason=…", "deliver 3 to w-2 reason=…", "notify 3 to w-1".
func (a Action) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d", opNames[a.Op], a.Task.ID)
	switch a.Op {
	case OpMove:
		fmt.Fprintf(&b, " %s→%s", a.Change.From, a.Change.To)
		if a.Change.Result != "" {
			fmt.Fprintf(&b, " result=%q", a.Change.Result)
		}
		if a.Change.Error != "" {
			fmt.Fprintf(&b, " error=%q", a.Change.Error)
		}
		fmt.Fprintf(&b, " reason=%q", a.Change.Reason)
	case OpDeliver:
		fmt.Fprintf(&b, " to %s reason=%q", a.Task.To, a.Change.Reason)
	case OpNotify, OpResend:
		fmt.Fprintf(&b, " to %s", a.Task.From)
	}
	return b.String()
}

// userSender is the from of a task a person dispatched: nobody is told.
const userSender = "user"

// Decide is one step of the outbox: the actions that follow from s, in
// order, and when to look again if nothing happens (zero: only an event
// can matter). It does no I/O.
func Decide(s Snapshot) ([]Action, time.Time) {
	if s.Recovering {
		return recovery(s), time.Time{}
	}
	d := decider{s: s, busy: map[string]bool{}}
	d.delivered()
	d.orphans()
	d.queued()
	d.notifications()
	return d.acts, d.next
}

// decider gathers one normal step's actions.
type decider struct {
	s    Snapshot
	busy map[string]bool // workers with a task delivered or chosen
	acts []Action
	next time.Time
}

func (d *decider) add(op Op, t schema.Task, ch schema.TaskChange) {
	d.acts = append(d.acts, Action{Op: op, Task: t, Change: ch})
}

// fail moves a delivered task to failed, abandoning its delivery first.
func (d *decider) fail(t schema.Task, why, reason string) {
	if _, ok := d.s.Flights[t.ID]; ok {
		d.add(OpAbandon, t, schema.TaskChange{})
	}
	d.add(OpMove, t, schema.TaskChange{From: api.TaskDelivered, To: api.TaskFailed, Error: why, Reason: reason})
}

// delivered settles the delivered tasks that ended or whose worker died;
// each keeps its worker busy.
func (d *decider) delivered() {
	for _, t := range d.s.Delivered {
		v, ok := d.s.Panes[t.To]
		if !ok {
			d.fail(t, "the worker was killed before it finished", "worker "+t.To+" was killed")
			continue
		}
		d.busy[t.To] = true // a delivered task is the worker's one task
		p, flying := d.s.Flights[t.ID]
		switch {
		case flying && p.Ended && p.Failed:
			d.add(OpMove, t, schema.TaskChange{From: api.TaskDelivered, To: api.TaskFailed, Result: p.Result, Error: p.Error, Reason: p.How, Source: p.Source})
		case flying && p.Ended:
			d.add(OpMove, t, schema.TaskChange{From: api.TaskDelivered, To: api.TaskDone, Result: p.Result, Reason: p.How, Source: p.Source})
		case !v.Running:
			d.fail(t, "the worker's process ended: "+v.Reason, "worker exited")
		case flying:
			d.wakeAt(p.Next)
		}
	}
}

// wakeAt keeps the earliest time a delivery wants a look, never before
// now.
func (d *decider) wakeAt(at time.Time) {
	if at.IsZero() {
		return
	}
	if at.Before(d.s.Now) {
		at = d.s.Now
	}
	if d.next.IsZero() || at.Before(d.next) {
		d.next = at
	}
}

// orphans lets go of deliveries whose task is no longer delivered
// (cancelled, or settled by another hand).
func (d *decider) orphans() {
	delivered := make(map[int64]bool, len(d.s.Delivered))
	for _, t := range d.s.Delivered {
		delivered[t.ID] = true
	}
	var ids []int64
	for id := range d.s.Flights {
		if !delivered[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		d.add(OpAbandon, schema.Task{ID: id}, schema.TaskChange{})
	}
}

// queued hands each worker its oldest queued task when it is idle, one
// at a time, and fails the tasks of workers that are gone.
func (d *decider) queued() {
	for _, t := range d.s.Queued {
		v, ok := d.s.Panes[t.To]
		if !ok {
			d.add(OpMove, t, schema.TaskChange{From: api.TaskQueued, To: api.TaskFailed,
				Error: "the worker no longer exists", Reason: "worker " + t.To + " was killed"})
			continue
		}
		if d.busy[t.To] {
			continue // one task at a time per worker, in order
		}
		d.busy[t.To] = true
		if v.Idle {
			d.add(OpDeliver, t, schema.TaskChange{From: api.TaskQueued, To: api.TaskDelivered, Reason: v.Handoff})
		}
	}
}

// notifications tells each master of its ended tasks, once: a task from
// nobody or from a person, or whose master is gone, is only marked; one
// whose master cannot take a line now, or is blocked on it, waits.
func (d *decider) notifications() {
	for _, t := range d.s.Unnotified {
		if d.s.Awaited[t.ID] {
			continue
		}
		if t.From == "" || t.From == userSender {
			d.add(OpMark, t, schema.TaskChange{})
			continue
		}
		v, ok := d.s.Panes[t.From]
		switch {
		case !ok:
			d.add(OpMark, t, schema.TaskChange{}) // no master to tell
		case v.Receptive:
			d.add(OpNotify, t, schema.TaskChange{})
		}
	}
}

// recovery settles what a previous supervisor left: each delivered task
// by its pane's verdict (a worker gone fails it), and each notification
// its master's history contradicts.
func recovery(s Snapshot) []Action {
	var acts []Action
	add := func(op Op, t schema.Task, ch schema.TaskChange) {
		acts = append(acts, Action{Op: op, Task: t, Change: ch})
	}
	failed := func(why string) schema.TaskChange {
		return schema.TaskChange{From: api.TaskDelivered, To: api.TaskFailed, Error: why, Reason: "recovered after a restart"}
	}
	for _, t := range s.Delivered {
		if _, ok := s.Panes[t.To]; !ok {
			add(OpMove, t, failed("the worker no longer exists"))
			continue
		}
		r, ok := s.Recovery[t.ID]
		if !ok {
			continue
		}
		switch {
		case r.Verdict == Resumed:
			add(OpTrack, t, schema.TaskChange{})
		case r.Verdict == Finished:
			add(OpMove, t, schema.TaskChange{From: api.TaskDelivered, To: api.TaskDone, Result: r.Result,
				Reason: "done before the restart (from the worker's history)", Source: schema.SourceTurn})
		case r.Verdict == Interrupted && t.Attempts < 2:
			add(OpMove, t, schema.TaskChange{From: api.TaskDelivered, To: api.TaskQueued,
				Reason: "re-delivered: the restart interrupted its turn"})
		case r.Verdict == Interrupted:
			add(OpMove, t, failed("interrupted twice by supervisor restarts"))
		case r.Verdict == Lost:
			add(OpMove, t, failed("interrupted by a restart: the worker's process ended with the supervisor"))
		}
	}
	for _, t := range s.Ended {
		if t.Status != api.TaskDone && t.Status != api.TaskFailed {
			continue
		}
		if _, ok := s.Panes[t.From]; !ok {
			continue
		}
		switch n := s.Notices[t.ID]; {
		case n == NoticeSeen && !t.NotifiedAt.Valid:
			add(OpMark, t, schema.TaskChange{})
		case n == NoticeLost && t.NotifiedAt.Valid:
			add(OpResend, t, schema.TaskChange{})
		}
	}
	return acts
}
