package supervisor

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The team's event stream (GET /api/events): a snapshot on connect, then
// what changed. Publishers (pane loops, the outbox, the API) never block
// and never build documents: they mark a key dirty in every subscriber
// ("pane:w-3", "task:12", "summary"). Each subscriber's writer wakes,
// takes its dirty set and builds the current value of each key once. Its
// writes are paced by a bucket: up to eventBurst batches at once after a
// quiet spell (ten panes that change together are each told at once),
// then one per eventBatch. So a pane flipping state a thousand times a
// second costs about ten lines a second, and cannot crowd out the others:
// every dirty key gets its line in the next batch.

// eventBatch is the time the bucket takes to earn one batch: under
// sustained change, at most 10 writes (and client redraws) a second
// whatever the team does; eventBurst is how many batches it holds.
const (
	eventBatch = 100 * time.Millisecond
	eventBurst = 10
)

// hub fans dirty keys out to the subscribers.
type hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

// subscriber is one stream's dirty set, in the order keys first became
// dirty.
type subscriber struct {
	mu    sync.Mutex
	dirty map[string]struct{}
	order []string
	wake  chan struct{}
}

func newHub() *hub { return &hub{subs: map[*subscriber]struct{}{}} }

func (h *hub) subscribe() (*subscriber, func()) {
	sub := &subscriber{dirty: map[string]struct{}{}, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[sub] = struct{}{}
	h.mu.Unlock()
	return sub, func() {
		h.mu.Lock()
		delete(h.subs, sub)
		h.mu.Unlock()
	}
}

// publish marks keys dirty in every stream; it never blocks.
func (h *hub) publish(keys ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		sub.mark(keys)
	}
}

func (sub *subscriber) mark(keys []string) {
	sub.mu.Lock()
	for _, k := range keys {
		if _, ok := sub.dirty[k]; !ok {
			sub.dirty[k] = struct{}{}
			sub.order = append(sub.order, k)
		}
	}
	sub.mu.Unlock()
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// take empties the dirty set.
func (sub *subscriber) take() []string {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	keys := sub.order
	sub.order = nil
	clear(sub.dirty)
	return keys
}

const (
	keyState   = "state:"
	keyPane    = "pane:"
	keyTask    = "task:"
	keySummary = "summary"
	keyHome    = "home"
)

// paneChanged publishes a pane's change (state, usage, creation, removal).
func (s *Supervisor) paneChanged(id string) { s.events.publish(keyPane + id) }

// stateChanged publishes a terminal pane's state change.
func (s *Supervisor) stateChanged(id string) { s.events.publish(keyState + id) }

// taskChanged publishes a task's change, and so the summary's.
func (s *Supervisor) taskChanged(id int64) {
	s.events.publish(keyTask+strconv.FormatInt(id, 10), keySummary)
}

// pacer is a stream's bucket of batches (see eventBatch).
type pacer struct {
	tokens float64
	last   time.Time
}

func newPacer(now time.Time) pacer { return pacer{tokens: eventBurst, last: now} }

func (p *pacer) refill(now time.Time) {
	if now.After(p.last) {
		p.tokens = min(eventBurst, p.tokens+float64(now.Sub(p.last))/float64(eventBatch))
		p.last = now
	}
}

// wait is how long a batch due at now waits for its turn.
func (p *pacer) wait(now time.Time) time.Duration {
	p.refill(now)
	return time.Duration(max(0, 1-p.tokens) * float64(eventBatch))
}

// take spends a batch sent at now.
func (p *pacer) take(now time.Time) {
	p.refill(now)
	p.tokens = max(0, p.tokens-1)
}

// Stream calls emit with the snapshot, then with each batch of changes,
// until ctx ends or emit fails. With local, only this node's panes are in
// it (what the other nodes' peer watchers follow).
func (s *Supervisor) Stream(ctx context.Context, local bool, emit func([]api.Event) error) error {
	sub, stop := s.events.subscribe()
	defer stop()
	// Subscribed first: a change racing the snapshot comes again after it.
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return err
	}
	if local {
		snap.Panes = s.ListLocal()
	}
	if err := emit([]api.Event{{Type: "snapshot", At: time.Now(), Snapshot: &snap}}); err != nil {
		return err
	}
	pace := newPacer(time.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.wake:
		}
		if wait := pace.wait(time.Now()); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		pace.take(time.Now())
		evs := s.build(ctx, sub.take(), local)
		if len(evs) == 0 {
			continue
		}
		if err := emit(evs); err != nil {
			return err
		}
	}
}

// build turns dirty keys into events holding current values; with local,
// other nodes' panes are left out.
func (s *Supervisor) build(ctx context.Context, keys []string, local bool) []api.Event {
	now := time.Now()
	out := make([]api.Event, 0, len(keys))
	full := map[string]bool{} // panes whose whole document goes out anyway
	for _, k := range keys {
		if strings.HasPrefix(k, keyPane) {
			full[k[len(keyPane):]] = true
		}
	}
	for _, k := range keys {
		if local && (k == keySummary || k == keyHome || strings.HasPrefix(k, keyTask)) {
			continue // the other nodes read the tasks from the database, and have homes of their own
		}
		if ev, ok := s.event(ctx, k, full, local, now); ok {
			out = append(out, ev)
		}
	}
	return out
}

// event is the current value of one dirty key, if it has one to send.
func (s *Supervisor) event(ctx context.Context, k string, full map[string]bool, local bool, now time.Time) (api.Event, bool) {
	switch {
	case strings.HasPrefix(k, keyState):
		id := k[len(keyState):]
		if full[id] {
			return api.Event{}, false
		}
		e, err := s.get(id)
		if err != nil {
			return s.elsewhere(id, local, now)
		}
		st := e.status()
		if !st.Running() {
			st.PID = 0 // as ls shows it
		}
		return api.Event{Type: "state", At: now, ID: e.cfg.ID, State: wireStatus(st)}, true
	case k == keyHome:
		home := s.Home()
		return api.Event{Type: "home", At: now, Home: &home}, true
	case k == keySummary:
		sum, err := s.taskSummary(ctx)
		if err != nil {
			s.log.WithError(err).Warn("Could not sum the tasks for the event stream")
			return api.Event{}, false
		}
		return api.Event{Type: "summary", At: now, Summary: &sum}, true
	case strings.HasPrefix(k, keyPane):
		id := k[len(keyPane):]
		e, err := s.get(id)
		if err != nil {
			return s.elsewhere(id, local, now)
		}
		pi := s.describe(e)
		return api.Event{Type: "pane", At: now, Pane: &pi}, true
	case strings.HasPrefix(k, keyTask):
		return s.taskEvent(ctx, k, now)
	}
	return api.Event{}, false
}

// taskEvent is the event of a task's key.
func (s *Supervisor) taskEvent(ctx context.Context, k string, now time.Time) (api.Event, bool) {
	n, _ := strconv.ParseInt(k[len(keyTask):], 10, 64)
	t, err := s.store.GetTask(ctx, n)
	if err != nil {
		if !errors.Is(err, schema.ErrNotFound) {
			s.log.WithError(err).Warn("Could not read a task for the event stream")
		}
		return api.Event{}, false
	}
	ti := s.taskInfo(t)
	return api.Event{Type: "task", At: now, Task: &ti}, true
}

// elsewhere is the event for a pane that is not this node's: another
// node's pane as it is now (none in a local stream), or its removal.
func (s *Supervisor) elsewhere(id string, local bool, now time.Time) (api.Event, bool) {
	if pi, ok := s.cl.Info(id); ok {
		if local {
			return api.Event{}, false
		}
		return api.Event{Type: "pane", At: now, Pane: &pi}, true
	}
	return api.Event{Type: "pane_removed", At: now, ID: id}, true
}

// Snapshot is the whole team now: panes, recent tasks, task summary.
func (s *Supervisor) Snapshot(ctx context.Context) (api.Snapshot, error) {
	snap := api.Snapshot{Panes: s.List(ctx), Tasks: []api.TaskInfo{}, Home: s.Home()}
	tasks, err := s.store.RecentTasks(ctx, api.RecentTasks)
	if err != nil {
		return api.Snapshot{}, err
	}
	for _, t := range tasks {
		snap.Tasks = append(snap.Tasks, s.taskInfo(t))
	}
	if snap.Summary, err = s.taskSummary(ctx); err != nil {
		return api.Snapshot{}, err
	}
	return snap, nil
}

func (s *Supervisor) taskSummary(ctx context.Context) (api.TaskSummary, error) {
	counts, err := s.store.TaskCounts(ctx)
	if err != nil {
		return api.TaskSummary{}, err
	}
	failed, err := s.store.FailedLast(ctx)
	if err != nil {
		return api.TaskSummary{}, err
	}
	sum := api.TaskSummary{Counts: counts, Failed: []topology.FailedTask{}}
	for _, t := range failed {
		sum.Failed = append(sum.Failed, topology.FailedTask{ID: t.ID, Worker: t.To, Error: t.Error})
	}
	return sum, nil
}

// wireStatus is a pane's status as a state event carries it.
func wireStatus(st pane.Status) *api.PaneStatus {
	return &api.PaneStatus{State: string(st.State), Reason: st.Reason, Since: st.Since, PID: st.PID, ExitCode: st.ExitCode}
}
