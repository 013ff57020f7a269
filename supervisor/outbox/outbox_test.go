package outbox

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// fakePane is a pane the test drives: its view, what Deliver and Notify
// do, its word on a restart.
type fakePane struct {
	mu         sync.Mutex
	view       View
	deliverErr error
	afterErr   View // the view once Deliver failed (a closed pane is not idle)
	recovery   Recovery
	notice     Notice
	got        []schema.Task // delivered
	told       []string      // notifications
	deliveries map[int64]*fakeDelivery
	wake       func()
}

func (p *fakePane) View() View {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.view
}

func (p *fakePane) setView(v View) {
	p.mu.Lock()
	p.view = v
	p.mu.Unlock()
}

func (p *fakePane) Deliver(t schema.Task, wake func()) (Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, t)
	p.wake = wake
	if p.deliverErr != nil {
		p.view = p.afterErr
		return nil, p.deliverErr
	}
	d := &fakeDelivery{}
	if p.deliveries == nil {
		p.deliveries = map[int64]*fakeDelivery{}
	}
	p.deliveries[t.ID] = d
	return d, nil
}

func (p *fakePane) Notify(t schema.Task) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.told = append(p.told, Notification(t, true))
	return nil
}

func (p *fakePane) Recover(t schema.Task, wake func()) Recovery {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wake = wake
	return p.recovery
}

func (p *fakePane) Noticed(schema.Task) Notice {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notice
}

// delivery waits for the delivery of task id (the task is recorded
// delivered just before the pane gets it).
func (p *fakePane) delivery(t *testing.T, id int64) *fakeDelivery {
	t.Helper()
	var d *fakeDelivery
	eventually(t, "the pane to get the task", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		d = p.deliveries[id]
		return d != nil
	})
	return d
}

func (p *fakePane) counts() (got, told int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got), len(p.told)
}

func (p *fakePane) wakeUp() {
	p.mu.Lock()
	w := p.wake
	p.mu.Unlock()
	w()
}

// fakeDelivery ends when the test says.
type fakeDelivery struct {
	mu        sync.Mutex
	p         Progress
	every     time.Duration // Next = now + every while not ended
	checks    int
	abandoned bool
}

func (d *fakeDelivery) Check(now time.Time) Progress {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.checks++
	p := d.p
	if !p.Ended && d.every > 0 {
		p.Next = now.Add(d.every)
	}
	return p
}

func (d *fakeDelivery) Abandon() {
	d.mu.Lock()
	d.abandoned = true
	d.mu.Unlock()
}

func (d *fakeDelivery) end(p Progress) {
	d.mu.Lock()
	p.Ended = true
	d.p = p
	d.mu.Unlock()
}

func (d *fakeDelivery) state() (checks int, abandoned bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.checks, d.abandoned
}

// team is the registry the outbox looks panes up in.
type team struct {
	mu    sync.Mutex
	panes map[string]*fakePane
}

func (tm *team) pane(id string) (Pane, bool) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	p, ok := tm.panes[id]
	if !ok {
		return nil, false
	}
	return p, true
}

func (tm *team) remove(id string) {
	tm.mu.Lock()
	delete(tm.panes, id)
	tm.mu.Unlock()
}

// countingStore counts the reads and can fail MarkNotified.
type countingStore struct {
	*schema.Store
	reads    atomic.Int64
	markFail atomic.Bool
}

func (s *countingStore) TasksIn(ctx context.Context, status string) ([]schema.Task, error) {
	s.reads.Add(1)
	return s.Store.TasksIn(ctx, status)
}

func (s *countingStore) Unnotified(ctx context.Context) ([]schema.Task, error) {
	s.reads.Add(1)
	return s.Store.Unnotified(ctx)
}

func (s *countingStore) ListTasks(ctx context.Context, pane string) ([]schema.Task, error) {
	s.reads.Add(1)
	return s.Store.ListTasks(ctx, pane)
}

func (s *countingStore) MarkNotified(ctx context.Context, id int64) error {
	if s.markFail.Load() {
		return errors.New("disk I/O error")
	}
	return s.Store.MarkNotified(ctx, id)
}

// rig is an outbox on a real store with a fake team.
type rig struct {
	t       *testing.T
	store   *countingStore
	team    *team
	o       *Outbox
	hook    *logtest.Hook
	log     *logrus.Logger
	changes atomic.Int64 // OnTaskChange calls
}

func newRig(t *testing.T, ps map[string]*fakePane) *rig {
	t.Helper()
	t.Setenv("CICY_HOME", t.TempDir())
	st, err := schema.Open(context.Background(), filepath.Join(t.TempDir(), "db", "cicy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	r := &rig{t: t, store: &countingStore{Store: st}, team: &team{panes: ps}, hook: hook, log: logger}
	return r
}

// start runs the outbox; recovered is called after its first step.
func (r *rig) start(recovered func()) {
	r.startWith(Config{Recovered: recovered})
}

// startWith runs the outbox with cfg's Recovered and Finish.
func (r *rig) startWith(cfg Config) {
	r.o = New(Config{
		Store: r.store, Pane: r.team.pane, Log: logrus.NewEntry(r.log),
		OnTaskChange: func(int64) { r.changes.Add(1) }, Recovered: cfg.Recovered, Finish: cfg.Finish,
	})
	go r.o.Run()
	r.t.Cleanup(r.o.Stop)
}

// create queues a task as Dispatch does.
func (r *rig) create(from, to, text string) int64 {
	r.t.Helper()
	tk, err := r.store.CreateTask(context.Background(), from, to, text, "queued until "+to+" is idle")
	if err != nil {
		r.t.Fatal(err)
	}
	if r.o != nil {
		r.o.Queued(tk.ID)
	}
	return tk.ID
}

func (r *rig) get(id int64) schema.Task {
	r.t.Helper()
	tk, err := r.store.GetTask(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return tk
}

// move sets a task's status directly, as a previous supervisor left it.
func (r *rig) move(id int64, ch schema.TaskChange) {
	r.t.Helper()
	if ok, err := r.store.MoveTask(context.Background(), id, ch); err != nil || !ok {
		r.t.Fatalf("move task %d: %v, %v", id, ok, err)
	}
}

// waitStatus waits for a task to reach status.
func (r *rig) waitStatus(id int64, status string) schema.Task {
	r.t.Helper()
	var tk schema.Task
	eventually(r.t, "task to be "+status, func() bool {
		tk = r.get(id)
		return tk.Status == status
	})
	return tk
}

// look has the outbox take a step and waits for it to be over.
func (r *rig) look() {
	r.t.Helper()
	done := make(chan struct{})
	select {
	case r.o.look <- done:
	case <-time.After(20 * time.Second):
		r.t.Fatal("the outbox does not look")
	}
	<-done
}

// logged waits for a log entry at level whose message holds msg.
func (r *rig) logged(level logrus.Level, msg string) *logrus.Entry {
	r.t.Helper()
	var found *logrus.Entry
	eventually(r.t, "log entry "+msg, func() bool {
		for _, e := range r.hook.AllEntries() {
			if e.Level == level && strings.Contains(e.Message, msg) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

const handoff = "typed into the idle worker"

var (
	idleWorker = View{Running: true, Idle: true, Receptive: true, Handoff: handoff}
	master     = View{Running: true, Receptive: true}
)

func TestDeliverSettleNotifyOnce(t *testing.T) {
	m, w := &fakePane{view: master}, &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-1": m, "w-2": w})
	r.start(nil)
	id := r.create("w-1", "w-2", "say hi")
	eventually(t, "the delivery", func() bool { got, _ := w.counts(); return got == 1 })
	tk := r.waitStatus(id, api.TaskDelivered)
	if tk.Reason != handoff || tk.Attempts != 1 {
		t.Fatalf("delivered task: reason %q, attempts %d", tk.Reason, tk.Attempts)
	}
	if w.got[0].ID != id || w.got[0].Status != api.TaskDelivered || w.got[0].Attempts != 1 {
		t.Fatalf("the pane got %+v", w.got[0])
	}
	w.setView(View{Running: true, Handoff: handoff}) // busy with it
	w.delivery(t, id).end(Progress{Result: "hi", How: "the worker's turn ended with an answer"})
	w.wakeUp()
	tk = r.waitStatus(id, api.TaskDone)
	if tk.Result != "hi" || tk.Reason != "the worker's turn ended with an answer" {
		t.Fatalf("done task: %+v", tk)
	}
	eventually(t, "the notification recorded", func() bool { return r.get(id).NotifiedAt.Valid })
	r.look()
	r.look()
	if _, told := m.counts(); told != 1 || m.told[0] != "🔔 [w-2] task 1 → done: hi" {
		t.Fatalf("the master was told %q; want it once", m.told)
	}
	if n := r.changes.Load(); n < 3 { // queued, delivered, done
		t.Fatalf("OnTaskChange called %d times", n)
	}
}

// TestAwaitHoldsTheBell: while its master blocks on a task (a team wait),
// the task's end is not told; once the wait lets go, an untold task is
// told, and one the wait recorded as told is not.
func TestAwaitHoldsTheBell(t *testing.T) {
	m, w := &fakePane{view: master}, &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-1": m, "w-2": w})
	r.start(nil)
	a, b := r.create("w-1", "w-2", "a"), r.create("w-1", "w-2", "b")
	release := r.o.Await([]int64{a, b})
	for _, id := range []int64{a, b} {
		eventually(t, "the delivery", func() bool { return r.get(id).Status == api.TaskDelivered })
		w.delivery(t, id).end(Progress{Result: "ok", How: "h"})
		w.wakeUp()
		r.waitStatus(id, api.TaskDone)
	}
	r.look()
	r.look()
	if _, told := m.counts(); told != 0 {
		t.Fatalf("the master was told %q while it waited", m.told)
	}
	r.o.Told(a) // the wait showed a
	release()
	release() // twice is once
	eventually(t, "b told", func() bool { return r.get(b).NotifiedAt.Valid })
	r.look()
	if _, told := m.counts(); told != 1 || !strings.HasPrefix(m.told[0], "🔔 [w-2] task 2 → done") {
		t.Fatalf("after the wait the master was told %q; want task 2 once", m.told)
	}
}

func TestOneTaskAtATimeInOrder(t *testing.T) {
	w := &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-2": w})
	r.start(nil)
	a, b := r.create("user", "w-2", "first"), r.create("user", "w-2", "second")
	r.waitStatus(a, api.TaskDelivered)
	r.look()
	r.look()
	if got, _ := w.counts(); got != 1 || r.get(b).Status != api.TaskQueued {
		t.Fatalf("the worker got %d tasks while the first ran; the second is %s", got, r.get(b).Status)
	}
	w.delivery(t, a).end(Progress{Failed: true, Error: "boom", How: "the worker's turn failed"})
	w.wakeUp()
	tk := r.waitStatus(a, api.TaskFailed)
	if tk.Error != "boom" {
		t.Fatalf("failed task: %+v", tk)
	}
	r.waitStatus(b, api.TaskDelivered)
	eventually(t, "the user's task marked told", func() bool { return r.get(a).NotifiedAt.Valid })
}

func TestDeliveryErrors(t *testing.T) {
	w := &fakePane{view: idleWorker, deliverErr: Retry(errors.New("pane w-2 is closed"))}
	r := newRig(t, map[string]*fakePane{"w-2": w})
	r.start(nil)
	id := r.create("user", "w-2", "x")
	eventually(t, "a try", func() bool { got, _ := w.counts(); return got == 1 })
	tk := r.waitStatus(id, api.TaskQueued)
	eventually(t, "queued again", func() bool {
		tk = r.get(id)
		return tk.Reason == "the worker could not take it: pane w-2 is closed"
	})
	if tk.Attempts != 1 || tk.DeliveredAt.Valid {
		t.Fatalf("queued again: %+v", tk)
	}

	w.mu.Lock()
	w.deliverErr = errors.New("could not type into the worker: broken pipe")
	w.view = idleWorker
	w.mu.Unlock()
	r.o.PaneChanged()
	tk = r.waitStatus(id, api.TaskFailed)
	if tk.Error != "could not type into the worker: broken pipe" || tk.Reason != "delivery failed" {
		t.Fatalf("failed delivery: %+v", tk)
	}
}

func TestWorkerKilledAndCancel(t *testing.T) {
	w2, w3 := &fakePane{view: idleWorker}, &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-2": w2, "w-3": w3})
	r.start(nil)
	a, b := r.create("user", "w-2", "a"), r.create("user", "w-3", "b")
	queuedBehind := r.create("user", "w-2", "c")
	r.waitStatus(a, api.TaskDelivered)
	r.waitStatus(b, api.TaskDelivered)

	r.team.remove("w-2")
	r.o.Kick()
	tk := r.waitStatus(a, api.TaskFailed)
	if tk.Error != "the worker was killed before it finished" || tk.Reason != "worker w-2 was killed" {
		t.Fatalf("killed worker's task: %+v", tk)
	}
	if _, abandoned := w2.delivery(t, a).state(); !abandoned {
		t.Fatal("the killed worker's delivery was not abandoned")
	}
	if tk := r.waitStatus(queuedBehind, api.TaskFailed); tk.Error != "the worker no longer exists" {
		t.Fatalf("queued task of a killed worker: %+v", tk)
	}

	if !r.o.Move(b, schema.TaskChange{From: api.TaskDelivered, To: api.TaskCancelled, Reason: "cancelled by request"}) {
		t.Fatal("cancel did not move the task")
	}
	eventually(t, "the cancelled delivery abandoned", func() bool { _, ab := w3.delivery(t, b).state(); return ab })
}

func TestWorkerProcessEnded(t *testing.T) {
	w := &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-2": w})
	r.start(nil)
	id := r.create("user", "w-2", "a")
	r.waitStatus(id, api.TaskDelivered)
	w.setView(View{Reason: "exit status 2"})
	r.o.PaneChanged()
	tk := r.waitStatus(id, api.TaskFailed)
	if tk.Error != "the worker's process ended: exit status 2" || tk.Reason != "worker exited" {
		t.Fatalf("task of an exited worker: %+v", tk)
	}
}

// A delivery that wants a look at a time gets it from the timer alone.
func TestTimerLooksAgain(t *testing.T) {
	w := &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-2": w})
	r.start(nil)
	id := r.create("user", "w-2", "a")
	r.waitStatus(id, api.TaskDelivered)
	d := w.delivery(t, id)
	d.mu.Lock()
	d.every = 10 * time.Millisecond
	d.mu.Unlock()
	r.o.Kick() // one check learns the time
	eventually(t, "checks on the timer", func() bool { n, _ := d.state(); return n >= 5 })
	d.end(Progress{Result: "late", How: "the worker's output was quiet for the settle time"})
	r.waitStatus(id, api.TaskDone) // no wake: the timer found it
}

func TestNotifyWaitsForAReceptiveMaster(t *testing.T) {
	m, w := &fakePane{view: View{Running: true}}, &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-1": m, "w-2": w})
	r.start(nil)
	id := r.create("w-1", "w-2", "a")
	r.waitStatus(id, api.TaskDelivered)
	w.delivery(t, id).end(Progress{Result: "r", How: "h"})
	w.wakeUp()
	r.waitStatus(id, api.TaskDone)
	r.look()
	r.look()
	if _, told := m.counts(); told != 0 || r.get(id).NotifiedAt.Valid {
		t.Fatal("a busy master was told")
	}
	m.setView(master)
	r.o.PaneChanged() // the outbox is still open: a pane's change wakes it
	eventually(t, "the notification", func() bool { return r.get(id).NotifiedAt.Valid })
	if _, told := m.counts(); told != 1 {
		t.Fatalf("told %d times", told)
	}
}

func TestRecoveryAfterRestart(t *testing.T) {
	cicy := &fakePane{view: idleWorker, recovery: Recovery{Verdict: Interrupted}}
	pty := &fakePane{view: View{Reason: "lost"}, recovery: Recovery{Verdict: Lost}}
	resumed := &fakeDelivery{}
	tmux := &fakePane{view: View{Running: true}, recovery: Recovery{Verdict: Resumed, Delivery: resumed}}
	m := &fakePane{view: master, notice: NoticeSeen}
	r := newRig(t, map[string]*fakePane{"w-1": m, "w-2": cicy, "w-3": pty, "w-4": tmux})
	toDelivered := schema.TaskChange{From: api.TaskQueued, To: api.TaskDelivered, Reason: handoff}
	a, b, c, gone := r.create("w-1", "w-2", "a"), r.create("w-1", "w-3", "b"), r.create("w-1", "w-4", "c"), r.create("w-1", "w-9", "d")
	for _, id := range []int64{a, b, c, gone} {
		r.move(id, toDelivered)
	}
	seen := r.create("w-1", "w-3", "e") // ended before the restart; the master has its line
	r.move(seen, toDelivered)
	r.move(seen, schema.TaskChange{From: api.TaskDelivered, To: api.TaskDone, Result: "e"})

	var recoveredAt atomic.Int64
	r.start(func() {
		got, _ := cicy.counts()
		recoveredAt.Store(int64(got) + 1)
	})
	if tk := r.waitStatus(b, api.TaskFailed); tk.Error != "interrupted by a restart: the worker's process ended with the supervisor" || tk.Reason != "recovered after a restart" {
		t.Fatalf("lost task: %+v", tk)
	}
	if tk := r.waitStatus(gone, api.TaskFailed); tk.Error != "the worker no longer exists" {
		t.Fatalf("gone worker's task: %+v", tk)
	}
	// Interrupted once: queued again, then delivered again.
	eventually(t, "the interrupted task delivered again", func() bool { got, _ := cicy.counts(); return got == 1 })
	if tk := r.waitStatus(a, api.TaskDelivered); tk.Attempts != 2 {
		t.Fatalf("re-delivered task: %+v", tk)
	}
	if recoveredAt.Load() != 1 {
		t.Fatal("Recovered was not called before the first delivery")
	}
	eventually(t, "the resumed delivery checked", func() bool { n, _ := resumed.state(); return n > 0 })
	resumed.end(Progress{Result: "out", How: "the worker's output was quiet for the settle time"})
	tmux.wakeUp()
	if tk := r.waitStatus(c, api.TaskDone); tk.Result != "out" {
		t.Fatalf("resumed task: %+v", tk)
	}
	if !r.get(seen).NotifiedAt.Valid {
		t.Fatal("a notification the master had was not recorded")
	}
	eventually(t, "the other notifications", func() bool { _, told := m.counts(); return told == 3 }) // b, gone, c
	for _, line := range m.told {
		if strings.Contains(line, "task 5 ") {
			t.Fatalf("the master was told again of a task it knew: %q", m.told)
		}
	}
}

func TestResendLostNotification(t *testing.T) {
	m := &fakePane{view: master, notice: NoticeLost}
	r := newRig(t, map[string]*fakePane{"w-1": m, "w-2": {view: idleWorker}})
	id := r.create("w-1", "w-2", "a")
	r.move(id, schema.TaskChange{From: api.TaskQueued, To: api.TaskDelivered})
	r.move(id, schema.TaskChange{From: api.TaskDelivered, To: api.TaskFailed, Error: "boom"})
	if err := r.store.MarkNotified(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	r.start(nil)
	r.logged(logrus.InfoLevel, "Re-sent a notification lost with the previous supervisor")
	r.look()
	r.look()
	if _, told := m.counts(); told != 1 || m.told[0] != "🔔 [w-2] task 1 → failed: boom" {
		t.Fatalf("told %q", m.told)
	}
}

func TestStoreErrorIsLogged(t *testing.T) {
	r := newRig(t, map[string]*fakePane{})
	id := r.create("user", "w-2", "a")
	r.move(id, schema.TaskChange{From: api.TaskQueued, To: api.TaskDelivered})
	r.move(id, schema.TaskChange{From: api.TaskDelivered, To: api.TaskDone})
	r.store.markFail.Store(true)
	r.start(nil)
	e := r.logged(logrus.ErrorLevel, "Could not record a notification")
	if err, _ := e.Data[logrus.ErrorKey].(error); err == nil || err.Error() != "disk I/O error" || e.Data["task"] != id {
		t.Fatalf("logged %v", e.Data)
	}
	r.store.markFail.Store(false)
	r.o.Kick()
	eventually(t, "marked once the store works", func() bool { return r.get(id).NotifiedAt.Valid })
}

// An outbox with no task open runs no query when panes change.
func TestIdleOutboxRunsNoQuery(t *testing.T) {
	w := &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-2": w})
	r.start(nil)
	id := r.create("user", "w-2", "a")
	r.waitStatus(id, api.TaskDelivered)
	w.delivery(t, id).end(Progress{Result: "r", How: "h"})
	w.wakeUp()
	eventually(t, "the task closed", func() bool { return r.get(id).NotifiedAt.Valid })
	eventually(t, "the outbox closed, with no wake-up pending", func() bool {
		r.look()
		return !r.o.open.Load() && len(r.o.kick) == 0 && !r.o.force.Load()
	})
	before := r.store.reads.Load()
	for range 5 {
		n := r.o.wakes.Load()
		r.o.PaneChanged()
		eventually(t, "the wake-up", func() bool { return r.o.wakes.Load() > n })
	}
	r.look() // the last wake-up is over
	if after := r.store.reads.Load(); after != before+3 {
		t.Fatalf("pane changes with no task open ran %d queries (and a step 3)", after-before-3)
	}
	n := r.o.wakes.Load()
	r.o.Kick() // a Kick looks anyway
	eventually(t, "the wake-up", func() bool { return r.o.wakes.Load() > n })
	r.look()
	if after := r.store.reads.Load(); after != before+9 {
		t.Fatalf("a Kick and a step ran %d queries, want 6", after-before-3)
	}
}

func TestStop(t *testing.T) {
	r := newRig(t, map[string]*fakePane{"w-2": {view: idleWorker}})
	r.start(nil)
	id := r.create("user", "w-2", "a")
	r.waitStatus(id, api.TaskDelivered)
	r.o.Stop()
	r.o.Stop() // twice is fine
	r.team.panes["w-2"].wakeUp()
	r.o.Kick()
	r.o.PaneChanged()
	if tk := r.get(id); tk.Status != api.TaskDelivered {
		t.Fatalf("stopping changed the task: %+v", tk)
	}

	never := New(Config{Store: r.store, Pane: r.team.pane})
	never.Stop() // never run
	never.Run()  // returns at once
}

// TestFinishHoldsUpNoOtherTask: while one worker's finished task is
// committed (Finish, slow on a big repository), another worker's task is
// delivered, recorded done and told; the first is recorded done with its
// work once Finish returns, and Finish runs once.
func TestFinishHoldsUpNoOtherTask(t *testing.T) {
	m, a, b := &fakePane{view: master}, &fakePane{view: idleWorker}, &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-1": m, "w-2": a, "w-3": b})
	release := make(chan struct{})
	var calls atomic.Int64
	r.startWith(Config{Finish: func(tk schema.Task) (FinishedWork, error) {
		calls.Add(1)
		if tk.To == "w-2" {
			<-release
			return FinishedWork{Work: api.Work{Branch: "cicy/w-2", Base: "a", Head: "b", Commits: 1, Files: 2}, Note: "a note"}, nil
		}
		return FinishedWork{}, nil
	}})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let) // before Stop: an outbox stuck in Finish can stop
	slow := r.create("w-1", "w-2", "a big change")
	eventually(t, "the delivery to w-2", func() bool { got, _ := a.counts(); return got == 1 })
	a.setView(View{Running: true, Handoff: handoff})
	a.delivery(t, slow).end(Progress{Result: "changed", How: "turn ended"})
	a.wakeUp()
	eventually(t, "Finish of the slow task", func() bool { return calls.Load() == 1 })
	a.setView(idleWorker)
	quick := r.create("w-1", "w-3", "a small one")
	eventually(t, "the delivery to w-3", func() bool { got, _ := b.counts(); return got == 1 })
	b.setView(View{Running: true, Handoff: handoff})
	b.delivery(t, quick).end(Progress{Result: "done quickly", How: "turn ended"})
	b.wakeUp()
	r.waitStatus(quick, api.TaskDone)
	eventually(t, "the quick task told", func() bool { return r.get(quick).NotifiedAt.Valid })
	r.look()
	if st := r.get(slow).Status; st != api.TaskDelivered {
		t.Fatalf("the task being finished is %s; want delivered until Finish returns", st)
	}
	let()
	tk := r.waitStatus(slow, api.TaskDone)
	if tk.Result != "changed" || tk.Branch != "cicy/w-2" || tk.Commits != 1 || tk.Files != 2 || !strings.HasSuffix(tk.Reason, "; a note") {
		t.Fatalf("the slow task was recorded %+v", tk)
	}
	r.look()
	r.look()
	if n := calls.Load(); n != 2 {
		t.Fatalf("Finish ran %d times; want once per task", n)
	}
	if _, ab := a.delivery(t, slow).state(); ab {
		t.Fatal("the finished delivery was abandoned")
	}
}

// TestFinishFailedIsNoDone: a task whose work could not be committed
// (Finish's error) is recorded failed with that error, its result kept,
// never done without its work.
func TestFinishFailedIsNoDone(t *testing.T) {
	m, a := &fakePane{view: master}, &fakePane{view: idleWorker}
	r := newRig(t, map[string]*fakePane{"w-1": m, "w-2": a})
	r.startWith(Config{Finish: func(tk schema.Task) (FinishedWork, error) {
		return FinishedWork{}, errors.New("index.lock is held by process 42 (git)")
	}})
	id := r.create("w-1", "w-2", "a change")
	eventually(t, "the delivery to w-2", func() bool { got, _ := a.counts(); return got == 1 })
	a.setView(View{Running: true, Handoff: handoff})
	a.delivery(t, id).end(Progress{Result: "changed", How: "turn ended"})
	a.wakeUp()
	tk := r.waitStatus(id, api.TaskFailed)
	if tk.Result != "changed" || !strings.Contains(tk.Error, "index.lock is held") {
		t.Fatalf("the task was recorded %+v", tk)
	}
}
