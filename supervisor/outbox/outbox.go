package outbox

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Store is what the outbox needs of the database. Every change of a
// task's status is MoveTask's conditional update, so a task ends exactly
// once whoever decides it.
type Store interface {
	ListTasks(ctx context.Context, pane string) ([]schema.Task, error)
	TasksIn(ctx context.Context, status string) ([]schema.Task, error)
	Unnotified(ctx context.Context) ([]schema.Task, error)
	MoveTask(ctx context.Context, id int64, ch schema.TaskChange) (bool, error)
	MarkNotified(ctx context.Context, id int64) error
}

// Config is what an Outbox works with.
type Config struct {
	Store Store
	// Pane finds a pane by id; false when it is gone.
	Pane func(id string) (Pane, bool)
	Log  *logrus.Entry
	// OnTaskChange is told of every change of a task's status (the
	// event hub); optional.
	OnTaskChange func(id int64)
	// Recovered is called on the outbox goroutine once the first step
	// settled what the previous supervisor left, before any delivery
	// (the spooled hooks are replayed then); optional.
	Recovered func()
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Finish is called right before a delivered task is recorded done:
	// the work it left (its worker's change, committed) goes into the
	// same record. It runs on a goroutine of its own, so one worker's
	// commit does not hold up the other tasks; its task is left alone
	// until it is recorded. Called again for a task whose record a crash
	// cut short, so it must not do its work twice. An error (its work
	// could not be committed) records the task failed with it instead:
	// a task never ends done without its work. Optional.
	Finish func(t schema.Task) (FinishedWork, error)
	// Scrub removes secrets from a task's result and error before they
	// are recorded (a command that printed a key); none when nil.
	Scrub func(string) string
}

// safety is how often the outbox looks while a task is open even when
// nothing wakes it. Every pane state change and task change wakes it;
// with no task open it never looks on its own.
const safety = 5 * time.Second

// minWait keeps a delivery that wants a look "now" from spinning the
// loop.
const minWait = 5 * time.Millisecond

// Outbox moves tasks from masters to workers and tells masters when they
// end. One goroutine (Run) reads the open tasks, asks Decide and executes
// the actions; it wakes on Kick, PaneChanged and a delivery's wake, and on
// one timer.
type Outbox struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}
	quit   chan struct{}
	done   chan struct{}

	// open is false when no task is queued, delivered or untold: a pane's
	// state change then does not touch the database (an idle supervisor
	// stays idle, and a team of busy panes with no tasks costs no
	// queries); a dispatch or a Kick wakes it anyway.
	open atomic.Bool
	// force: the next wake-up looks whatever open says.
	force atomic.Bool
	// For tests: look takes a step on request and closes the channel
	// sent once it is over; wakes counts wake-ups, steps or not.
	look  chan chan struct{}
	wakes atomic.Int64

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every task change
	started bool
	stopped bool
	awaited map[int64]int // tasks a master is blocked on (Await), and by how many waits

	// finished carries the end of a Finish goroutine back to Run;
	// finishers counts them for Stop.
	finished  chan finishedTask
	finishers sync.WaitGroup

	// Owned by the Run goroutine.
	flights   map[int64]Delivery
	finishing map[int64]bool // tasks whose Finish runs: no other action touches them
	recovered bool
}

// FinishedWork is what Finish found of a task's end: the work it left, and
// a note of what its commit left out (added to the task's reason).
type FinishedWork struct {
	Work api.Work
	Note string
}

// finishedTask is a Finish goroutine's word that task id's record is
// over; moved: it was recorded done.
type finishedTask struct {
	id    int64
	moved bool
}

// New returns an outbox; Run starts it.
func New(cfg Config) *Outbox {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		cfg.Log = logrus.NewEntry(l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Outbox{
		cfg: cfg, ctx: ctx, cancel: cancel,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		changed: make(chan struct{}), flights: map[int64]Delivery{}, look: make(chan chan struct{}),
		awaited: map[int64]int{}, finished: make(chan finishedTask, 16), finishing: map[int64]bool{},
	}
	o.open.Store(true) // until the first step knows
	return o
}

// Kick asks the outbox to look now (non-blocking; bursts merge).
func (o *Outbox) Kick() {
	o.force.Store(true)
	o.poke()
}

// PaneChanged tells the outbox a pane's state changed: it looks if a task
// is open.
func (o *Outbox) PaneChanged() { o.poke() }

// wake is a delivery's word that it progressed.
func (o *Outbox) wake() { o.Kick() }

func (o *Outbox) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Queued announces a task just created (queued): the outbox looks now.
func (o *Outbox) Queued(id int64) {
	o.open.Store(true)
	o.announce(id)
	o.Kick()
}

// Noted is the database's word that task id changed, whichever node
// changed it: the waiters and the event stream are told, and with look
// the outbox looks (the task is its node's business).
func (o *Outbox) Noted(id int64, look bool) {
	o.announce(id)
	if look {
		o.open.Store(true)
		o.Kick()
	}
}

// Await holds back the notifications of tasks ids while their master
// blocks on them (the team tool wait, which shows the results itself and
// records the master told): no 🔔 line races the wait's answer. The
// returned release ends the hold; a task still untold then is notified
// as usual.
func (o *Outbox) Await(ids []int64) (release func()) {
	o.mu.Lock()
	for _, id := range ids {
		o.awaited[id]++
	}
	o.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			for _, id := range ids {
				if o.awaited[id]--; o.awaited[id] <= 0 {
					delete(o.awaited, id)
				}
			}
			o.mu.Unlock()
			o.open.Store(true)
			o.Kick()
		})
	}
}

// Told records that task id's master saw its end another way (the team
// tool wait showed it), so no 🔔 line follows; the waiters and the event
// stream are told. Safe from any goroutine.
func (o *Outbox) Told(id int64) {
	if err := o.cfg.Store.MarkNotified(o.ctx, id); err != nil {
		o.logErr(err, "Could not record that a master waited for a task", logrus.Fields{"task": id})
		return
	}
	o.announce(id)
}

// Changes is closed at the next change of any task (a move, a
// notification recorded): WaitTask-ers take it, read, then wait on it.
func (o *Outbox) Changes() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

func (o *Outbox) changedNow() {
	o.mu.Lock()
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
}

func (o *Outbox) announce(id int64) {
	if o.cfg.OnTaskChange != nil {
		o.cfg.OnTaskChange(id)
	}
	o.changedNow()
}

// Move applies a change to a task if it is still in ch.From and reports
// whether it did; a change is logged, announced, and wakes the outbox and
// the waiters. Safe from any goroutine (CancelTask moves a task too; the
// outbox then lets go of its delivery).
func (o *Outbox) Move(id int64, ch schema.TaskChange) bool {
	if o.cfg.Scrub != nil {
		ch.Result, ch.Error, ch.Reason = o.cfg.Scrub(ch.Result), o.cfg.Scrub(ch.Error), o.cfg.Scrub(ch.Reason)
	}
	ok, err := o.cfg.Store.MoveTask(o.ctx, id, ch)
	if err != nil {
		o.logErr(err, "Could not record a task change", logrus.Fields{"task": id, "status": ch.To})
		return false
	}
	if ok {
		o.cfg.Log.WithFields(logrus.Fields{"task": id, "status": ch.To}).Info("Task " + ch.To + ": " + ch.Reason)
		o.announce(id)
		o.Kick()
	}
	return ok
}

// logErr logs a store error; one caused by Stop is no failure.
func (o *Outbox) logErr(err error, msg string, f logrus.Fields) {
	l := o.cfg.Log.WithError(err).WithFields(f)
	if o.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		l.Debug(msg + " (the outbox is stopping)")
		return
	}
	l.Error(msg)
}

// Run is the outbox goroutine: its first step settles what the previous
// supervisor left, then it delivers, settles and notifies until Stop.
func (o *Outbox) Run() {
	o.mu.Lock()
	if o.stopped || o.started {
		o.mu.Unlock()
		return
	}
	o.started = true
	o.mu.Unlock()
	defer close(o.done)
	timer := time.NewTimer(0) // the first step at once
	defer timer.Stop()
	for {
		select {
		case <-o.quit:
			return
		case <-o.kick:
			o.wakes.Add(1)
			if !o.force.Swap(false) && !o.open.Load() {
				continue
			}
		case <-timer.C:
		case done := <-o.look:
			o.arm(timer, o.step())
			close(done)
			continue
		case f := <-o.finished:
			o.settled(f)
		}
		select {
		case <-o.quit: // a wake-up racing Stop
			return
		default:
		}
		o.arm(timer, o.step())
	}
}

// arm sets the one timer: at next, and at the latest after the safety
// period while a task is open; stopped when nothing is open or due.
func (o *Outbox) arm(timer *time.Timer, next time.Time) {
	var wait time.Duration
	if !next.IsZero() {
		wait = max(next.Sub(o.cfg.Now()), minWait)
	}
	if o.open.Load() && (wait == 0 || wait > safety) {
		wait = safety
	}
	if wait == 0 {
		timer.Stop()
		return
	}
	timer.Reset(wait)
}

// Stop ends Run and waits for it. Delivered tasks stay delivered: the
// next start recovers them.
func (o *Outbox) Stop() {
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return
	}
	o.stopped = true
	started := o.started
	o.mu.Unlock()
	close(o.quit)
	o.cancel()
	if started {
		<-o.done
	}
	o.finishers.Wait()
}

// step is one look: it returns when to look again.
func (o *Outbox) step() time.Time {
	if !o.recovered {
		o.recoverTasks()
		return time.Time{}
	}
	s, err := o.snapshot()
	if err != nil {
		o.logErr(err, "Could not read the open tasks", nil)
		o.open.Store(true) // the safety timer tries again
		return time.Time{}
	}
	acts, next := Decide(s)
	o.open.Store(len(s.Queued)+len(s.Delivered)+len(s.Unnotified)+len(o.flights) > 0)
	for _, a := range acts {
		o.exec(a, nil)
	}
	return next
}

// snapshot reads the open tasks and looks at their panes and deliveries.
func (o *Outbox) snapshot() (Snapshot, error) {
	s := Snapshot{Now: o.cfg.Now(), Panes: map[string]View{}, Flights: map[int64]Progress{}, Awaited: map[int64]bool{}}
	o.mu.Lock()
	for id := range o.awaited {
		s.Awaited[id] = true
	}
	o.mu.Unlock()
	var err error
	if s.Delivered, err = o.cfg.Store.TasksIn(o.ctx, api.TaskDelivered); err != nil {
		return s, err
	}
	if s.Queued, err = o.cfg.Store.TasksIn(o.ctx, api.TaskQueued); err != nil {
		return s, err
	}
	if s.Unnotified, err = o.cfg.Store.Unnotified(o.ctx); err != nil {
		return s, err
	}
	// The deliveries are checked before any pane is looked at: one that
	// saw its pane stop is then settled by a view that is as new (a pane
	// being killed is already gone, and its task fails as killed).
	for _, t := range s.Delivered {
		if d, ok := o.flights[t.ID]; ok {
			s.Flights[t.ID] = d.Check(s.Now)
		}
	}
	for id := range o.flights {
		if _, ok := s.Flights[id]; !ok {
			s.Flights[id] = Progress{}
		}
	}
	for _, t := range s.Delivered {
		o.view(s.Panes, t.To)
	}
	for _, t := range s.Queued {
		o.view(s.Panes, t.To)
	}
	for _, t := range s.Unnotified {
		if t.From != "" && t.From != userSender {
			o.view(s.Panes, t.From)
		}
	}
	return s, nil
}

// view adds pane id's view to views, once; a gone pane stays absent. It
// returns the pane.
func (o *Outbox) view(views map[string]View, id string) (Pane, bool) {
	p, ok := o.cfg.Pane(id)
	if !ok {
		return nil, false
	}
	if _, seen := views[id]; !seen {
		views[id] = p.View()
	}
	return p, true
}

// recoverTasks is the first step: what the previous supervisor left is
// settled from each pane's word. Tried again on the next step when the
// store cannot be read.
func (o *Outbox) recoverTasks() {
	delivered, err := o.cfg.Store.TasksIn(o.ctx, api.TaskDelivered)
	if err != nil {
		o.logErr(err, "Could not read the delivered tasks to recover them", nil)
		return
	}
	all, err := o.cfg.Store.ListTasks(o.ctx, "")
	if err != nil {
		o.logErr(err, "Could not read the tasks to recover their notifications", nil)
		return
	}
	s := Snapshot{Now: o.cfg.Now(), Recovering: true, Delivered: delivered, Panes: map[string]View{},
		Recovery: map[int64]Recovery{}, Notices: map[int64]Notice{}}
	resumed := map[int64]Delivery{}
	for _, t := range delivered {
		if p, ok := o.view(s.Panes, t.To); ok {
			r := p.Recover(t, o.wake)
			s.Recovery[t.ID] = r
			if r.Delivery != nil {
				resumed[t.ID] = r.Delivery
			}
		}
	}
	for _, t := range all {
		if (t.Status != api.TaskDone && t.Status != api.TaskFailed) || t.From == "" || t.From == userSender {
			continue
		}
		if p, ok := o.view(s.Panes, t.From); ok {
			s.Ended = append(s.Ended, t)
			s.Notices[t.ID] = p.Noticed(t)
		}
	}
	acts, _ := Decide(s)
	for _, a := range acts {
		o.exec(a, resumed)
	}
	o.recovered = true
	if o.cfg.Recovered != nil {
		o.cfg.Recovered()
	}
	o.Kick() // the first normal step
}

// exec carries out one action.
func (o *Outbox) exec(a Action, resumed map[int64]Delivery) {
	id := a.Task.ID
	if o.finishing[id] {
		return // its end is being recorded
	}
	switch a.Op {
	case OpMove:
		if a.Change.To == api.TaskDone && a.Change.From == api.TaskDelivered && o.cfg.Finish != nil {
			o.finish(a.Task, a.Change)
			return
		}
		if o.Move(id, a.Change) && a.Change.From == api.TaskDelivered {
			delete(o.flights, id) // settled: its pane is done with it
		}
	case OpDeliver:
		o.deliver(a.Task, a.Change)
	case OpAbandon:
		if d, ok := o.flights[id]; ok {
			d.Abandon()
			delete(o.flights, id)
		}
	case OpTrack:
		if d := resumed[id]; d != nil {
			o.flights[id] = d
		}
	case OpNotify:
		o.notify(a.Task, true)
	case OpResend:
		o.notify(a.Task, false)
	case OpMark:
		o.mark(id)
	}
}

// finish records delivered task t done on a goroutine of its own, with
// the work Finish found; Run hears of the end (settled).
func (o *Outbox) finish(t schema.Task, ch schema.TaskChange) {
	o.finishing[t.ID] = true
	o.finishers.Add(1)
	go func() {
		defer o.finishers.Done()
		f, err := o.cfg.Finish(t)
		if err != nil {
			ch.To, ch.Error, ch.Reason = api.TaskFailed, err.Error(), "its work could not be committed"
		}
		if f.Note != "" {
			ch.Reason = strings.TrimPrefix(ch.Reason+"; "+f.Note, "; ")
		}
		ch.Work = f.Work
		moved := o.Move(t.ID, ch)
		select {
		case o.finished <- finishedTask{id: t.ID, moved: moved}:
		case <-o.quit: // Run is gone; the next start recovers an unrecorded task
		}
	}()
}

// settled is a Finish goroutine's end, on the Run goroutine: a task
// recorded done lets go of its delivery; one that was not is decided
// anew at the step that follows.
func (o *Outbox) settled(f finishedTask) {
	delete(o.finishing, f.id)
	if f.moved {
		delete(o.flights, f.id)
	}
}

// deliver records t delivered, then hands it to its worker: a Retry error
// queues it again, another fails it.
func (o *Outbox) deliver(t schema.Task, ch schema.TaskChange) {
	p, ok := o.cfg.Pane(t.To)
	if !ok {
		return // gone since the snapshot: the next step fails the task
	}
	if !o.Move(t.ID, ch) {
		return
	}
	t.Status = api.TaskDelivered
	t.Attempts++
	d, err := p.Deliver(t, o.wake)
	switch {
	case errors.Is(err, ErrRetry):
		o.Move(t.ID, schema.TaskChange{From: api.TaskDelivered, To: api.TaskQueued, Reason: "the worker could not take it: " + err.Error()})
	case err != nil:
		o.Move(t.ID, schema.TaskChange{From: api.TaskDelivered, To: api.TaskFailed, Error: err.Error(), Reason: "delivery failed"})
	case d != nil:
		o.flights[t.ID] = d
	}
}

// notify tells t's master that t ended; with mark, records it. A master
// that could not take the line is told at a later step.
func (o *Outbox) notify(t schema.Task, mark bool) {
	p, ok := o.cfg.Pane(t.From)
	if !ok {
		return // gone since the snapshot: the next step marks it
	}
	if err := p.Notify(t); err != nil {
		o.cfg.Log.WithError(err).WithFields(logrus.Fields{"task": t.ID, "master": t.From}).Warn("Could not tell the master a task ended")
		return
	}
	if !mark {
		o.cfg.Log.WithField("task", t.ID).Info("Re-sent a notification lost with the previous supervisor")
		return
	}
	o.mark(t.ID)
}

// mark records that t's master was told (or has nobody to tell).
func (o *Outbox) mark(id int64) {
	if err := o.cfg.Store.MarkNotified(o.ctx, id); err != nil {
		o.logErr(err, "Could not record a notification", logrus.Fields{"task": id})
		return
	}
	o.changedNow()
}
