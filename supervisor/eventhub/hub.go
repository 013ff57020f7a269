package eventhub

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

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

// Team is the daemon as the stream reads it.
type Team interface {
	// List is every pane of the team, this node's and the others';
	// ListLocal only this node's.
	List(ctx context.Context) []api.PaneInfo
	ListLocal() []api.PaneInfo
	// LocalStatus is the status of this node's pane id and the id it is
	// registered with; ok is false when this node has no such pane.
	LocalStatus(id string) (paneID string, st pane.Status, ok bool)
	// LocalInfo is the document of this node's pane id (ok false: none).
	LocalInfo(id string) (api.PaneInfo, bool)
	// OtherNode is another node's pane id as it is now (ok false: no
	// node of the cluster has it).
	OtherNode(id string) (api.PaneInfo, bool)
	// Home is what needs a person about the home as a whole.
	Home() api.HomeInfo
	// TaskInfo is a task as the API shows it.
	TaskInfo(t schema.Task) api.TaskInfo
}

// Store is the tasks as the stream reads them.
type Store interface {
	GetTask(ctx context.Context, id int64) (schema.Task, error)
	RecentTasks(ctx context.Context, n int) ([]schema.Task, error)
	TaskCounts(ctx context.Context) (map[string]map[string]int, error)
	FailedLast(ctx context.Context) ([]schema.Task, error)
	TasksIn(ctx context.Context, status string) ([]schema.Task, error)
}

// Hub fans dirty keys out to the subscribers, and builds each stream's
// events from the team and the store.
type Hub struct {
	team  Team
	store Store
	log   *logrus.Entry

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

// New is the hub of a team whose tasks store holds.
func New(team Team, store Store, log *logrus.Entry) *Hub {
	return &Hub{team: team, store: store, log: log, subs: map[*subscriber]struct{}{}}
}

func (h *Hub) subscribe() (*subscriber, func()) {
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
func (h *Hub) publish(keys ...string) {
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

// PaneChanged publishes a pane's change (state, usage, creation, removal).
func (h *Hub) PaneChanged(id string) { h.publish(keyPane + id) }

// StateChanged publishes a terminal pane's state change.
func (h *Hub) StateChanged(id string) { h.publish(keyState + id) }

// TaskChanged publishes a task's change, and so the summary's.
func (h *Hub) TaskChanged(id int64) {
	h.publish(keyTask+strconv.FormatInt(id, 10), keySummary)
}

// HomeChanged publishes the home's change (a full disk, the sinks' states).
func (h *Hub) HomeChanged() { h.publish(keyHome) }

// Watch wakes on each change of the team; take empties what changed
// since; stop ends the watch (the notifier's watch of needs-you).
func (h *Hub) Watch() (wake <-chan struct{}, take func(), stop func()) {
	sub, stop := h.subscribe()
	return sub.wake, func() { sub.take() }, stop
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
func (h *Hub) Stream(ctx context.Context, local bool, emit func([]api.Event) error) error {
	sub, stop := h.subscribe()
	defer stop()
	// Subscribed first: a change racing the snapshot comes again after it.
	snap, err := h.Snapshot(ctx)
	if err != nil {
		return err
	}
	if local {
		snap.Panes = h.team.ListLocal()
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
		evs := h.build(ctx, sub.take(), local)
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
func (h *Hub) build(ctx context.Context, keys []string, local bool) []api.Event {
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
		if ev, ok := h.event(ctx, k, full, local, now); ok {
			out = append(out, ev)
		}
	}
	return out
}

// event is the current value of one dirty key, if it has one to send.
func (h *Hub) event(ctx context.Context, k string, full map[string]bool, local bool, now time.Time) (api.Event, bool) {
	switch {
	case strings.HasPrefix(k, keyState):
		id := k[len(keyState):]
		if full[id] {
			return api.Event{}, false
		}
		paneID, st, ok := h.team.LocalStatus(id)
		if !ok {
			return h.elsewhere(id, local, now)
		}
		if !st.Running() {
			st.PID = 0 // as ls shows it
		}
		return api.Event{Type: "state", At: now, ID: paneID, State: wireStatus(st)}, true
	case k == keyHome:
		home := h.team.Home()
		return api.Event{Type: "home", At: now, Home: &home}, true
	case k == keySummary:
		sum, err := h.Summary(ctx)
		if err != nil {
			h.log.WithError(err).Warn("Could not sum the tasks for the event stream")
			return api.Event{}, false
		}
		return api.Event{Type: "summary", At: now, Summary: &sum}, true
	case strings.HasPrefix(k, keyPane):
		id := k[len(keyPane):]
		pi, ok := h.team.LocalInfo(id)
		if !ok {
			return h.elsewhere(id, local, now)
		}
		return api.Event{Type: "pane", At: now, Pane: &pi}, true
	case strings.HasPrefix(k, keyTask):
		return h.taskEvent(ctx, k, now)
	}
	return api.Event{}, false
}

// taskEvent is the event of a task's key.
func (h *Hub) taskEvent(ctx context.Context, k string, now time.Time) (api.Event, bool) {
	n, _ := strconv.ParseInt(k[len(keyTask):], 10, 64)
	t, err := h.store.GetTask(ctx, n)
	if err != nil {
		if !errors.Is(err, schema.ErrNotFound) {
			h.log.WithError(err).Warn("Could not read a task for the event stream")
		}
		return api.Event{}, false
	}
	ti := h.team.TaskInfo(t)
	return api.Event{Type: "task", At: now, Task: &ti}, true
}

// elsewhere is the event for a pane that is not this node's: another
// node's pane as it is now (none in a local stream), or its removal.
func (h *Hub) elsewhere(id string, local bool, now time.Time) (api.Event, bool) {
	if pi, ok := h.team.OtherNode(id); ok {
		if local {
			return api.Event{}, false
		}
		return api.Event{Type: "pane", At: now, Pane: &pi}, true
	}
	return api.Event{Type: "pane_removed", At: now, ID: id}, true
}

// Snapshot is the whole team now: panes, recent tasks, task summary.
func (h *Hub) Snapshot(ctx context.Context) (api.Snapshot, error) {
	snap := api.Snapshot{Panes: h.team.List(ctx), Tasks: []api.TaskInfo{}, Home: h.team.Home()}
	tasks, err := h.store.RecentTasks(ctx, api.RecentTasks)
	if err != nil {
		return api.Snapshot{}, err
	}
	for _, t := range tasks {
		snap.Tasks = append(snap.Tasks, h.team.TaskInfo(t))
	}
	if snap.Summary, err = h.Summary(ctx); err != nil {
		return api.Snapshot{}, err
	}
	return snap, nil
}

// Status is the topology view of panes (all the team's, or those a
// caller chose): with the task summary, the open tasks and the home.
func (h *Hub) Status(ctx context.Context, panes []api.PaneInfo) (api.StatusResponse, error) {
	sum, err := h.Summary(ctx)
	if err != nil {
		return api.StatusResponse{}, err
	}
	delivered, err := h.store.TasksIn(ctx, api.TaskDelivered)
	if err != nil {
		return api.StatusResponse{}, err
	}
	queued, err := h.store.TasksIn(ctx, api.TaskQueued)
	if err != nil {
		return api.StatusResponse{}, err
	}
	tasks := make([]api.TaskInfo, 0, len(delivered)+len(queued))
	for _, t := range append(delivered, queued...) {
		tasks = append(tasks, h.team.TaskInfo(t))
	}
	return api.TeamStatus(panes, tasks, sum, h.team.Home(), time.Now()), nil
}

// Summary is the task counts per master and the standing failures.
func (h *Hub) Summary(ctx context.Context) (api.TaskSummary, error) {
	counts, err := h.store.TaskCounts(ctx)
	if err != nil {
		return api.TaskSummary{}, err
	}
	failed, err := h.store.FailedLast(ctx)
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
