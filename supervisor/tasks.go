package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The task outbox. One goroutine (run) decides deliveries and
// completions; it wakes on every pane state change (kick) and on a timer,
// so nothing waits forever. Every transition is a conditional update in
// SQLite (MoveTask), so a task reaches exactly one terminal state whoever
// decides it. Helper goroutines only wait for a cicy turn's result and
// report it.

// TaskStore is what the outbox needs of the database.
type TaskStore interface {
	CreateTask(ctx context.Context, from, to, text, reason string) (schema.Task, error)
	GetTask(ctx context.Context, id int64) (schema.Task, error)
	ListTasks(ctx context.Context, pane string) ([]schema.Task, error)
	TasksIn(ctx context.Context, status string) ([]schema.Task, error)
	Unnotified(ctx context.Context) ([]schema.Task, error)
	MoveTask(ctx context.Context, id int64, ch schema.TaskChange) (bool, error)
	MarkNotified(ctx context.Context, id int64) error
}

// MaxTaskText bounds a task's text.
const MaxTaskText = 64 << 10

// taskTick is how often the outbox looks even without a kick: a safety
// net, since every state change and every task change kicks it. Each
// wake-up of an idle supervisor costs CPU (0.15 % of a core at 500 ms).
const taskTick = 5 * time.Second

// shellVerify is how long a typed task may take to show on the screen.
const shellVerify = 5 * time.Second

type outbox struct {
	s     *Supervisor
	store TaskStore
	kick  chan struct{}
	quit  chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup // turn waiters and shell verifiers

	// open is false when no task is queued, delivered or untold: the
	// timer and panes' state changes then do not touch the database (an
	// idle supervisor stays idle, and a team of busy panes with no tasks
	// costs no queries); a dispatch or a task change wakes it anyway.
	open atomic.Bool
	// force: the next wake-up looks whatever open says (Kick).
	force atomic.Bool

	mu       sync.Mutex
	changed  chan struct{}     // closed and replaced on every task change
	watching map[int64]bool    // cicy tasks whose turn result is awaited
	shell    map[int64]shellTx // shell tasks typed and verified
	agent    map[int64]agentTx // tasks typed into CLI agents
}

// shellTx is a shell task on its worker's screen.
type shellTx struct {
	verified bool
	at       time.Time
	command  string // the text typed: the output follows it
}

func newOutbox(s *Supervisor, store TaskStore) *outbox {
	return &outbox{
		s: s, store: store, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		changed: make(chan struct{}), watching: map[int64]bool{}, shell: map[int64]shellTx{}, agent: map[int64]agentTx{},
	}
}

// Kick asks the outbox to look now (non-blocking; bursts merge).
func (o *outbox) Kick() {
	o.force.Store(true)
	o.poke()
}

// paneKick tells the outbox a pane's state changed: it looks if a task is
// open.
func (o *outbox) paneKick() { o.poke() }

func (o *outbox) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

func (o *outbox) run() {
	defer close(o.done)
	o.recover()
	o.s.replayHooks()
	o.open.Store(true)
	t := time.NewTicker(taskTick)
	defer t.Stop()
	for {
		select {
		case <-o.quit:
			return
		case <-o.kick:
			if !o.force.Swap(false) && !o.open.Load() {
				continue
			}
		case <-t.C:
			if !o.open.Load() {
				continue
			}
		}
		o.step()
	}
}

func (o *outbox) stop() {
	close(o.quit)
	<-o.done
	o.wg.Wait()
}

// notifyChange wakes whoever waits for a task to change.
func (o *outbox) notifyChange() {
	o.mu.Lock()
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
}

func (o *outbox) changes() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

func (o *outbox) move(id int64, ch schema.TaskChange) bool {
	ok, err := o.store.MoveTask(context.Background(), id, ch)
	if err != nil {
		o.s.log.WithError(err).WithField("task", id).Error("Could not record a task change")
		return false
	}
	if ok {
		o.s.log.WithFields(map[string]any{"task": id, "status": ch.To}).Info("Task " + ch.To + ": " + ch.Reason)
		o.s.taskChanged(id)
		o.notifyChange()
		o.Kick()
	}
	return ok
}

// taskMessage is what a worker receives (the 📮 stamp comes with it).
func taskMessage(t schema.Task) string { return fmt.Sprintf("task %d: %s", t.ID, t.Text) }

// step delivers what can be delivered, settles shell completions and
// tells masters. Runs on the outbox goroutine.
func (o *outbox) step() {
	ctx := context.Background()
	delivered, err := o.store.TasksIn(ctx, schema.TaskDelivered)
	if err != nil {
		o.s.log.WithError(err).Error("Could not read delivered tasks")
		return
	}
	busy := map[string]bool{}
	for _, t := range delivered {
		if _, err := o.s.get(t.To); err != nil {
			o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "the worker was killed before it finished", Reason: "worker " + t.To + " was killed"})
			continue
		}
		busy[t.To] = true
		if e, err := o.s.get(t.To); err == nil && isAgent(e.cfg.Type) {
			o.checkAgentDone(t, e)
			continue
		}
		o.checkShellDone(t)
	}
	queued, _ := o.store.TasksIn(ctx, schema.TaskQueued)
	o.open.Store(len(delivered)+len(queued) > 0)
	for _, t := range queued {
		if busy[t.To] {
			continue // one task at a time per worker, in order
		}
		busy[t.To] = true
		o.deliver(t)
	}
	o.notifyMasters()
}

// deliver hands a queued task to its idle worker.
func (o *outbox) deliver(t schema.Task) {
	e, err := o.s.get(t.To)
	if err != nil {
		o.move(t.ID, schema.TaskChange{From: schema.TaskQueued, To: schema.TaskFailed, Error: "the worker no longer exists", Reason: "worker " + t.To + " was killed"})
		return
	}
	st := e.status()
	if st.State != pane.Idle {
		return // delivered when it is idle; a state change kicks the outbox
	}
	e.op.Lock()
	a, p := e.agent, e.proc
	e.op.Unlock()
	switch {
	case a != nil:
		if !o.move(t.ID, schema.TaskChange{From: schema.TaskQueued, To: schema.TaskDelivered, Reason: "sent to the idle worker as a message"}) {
			return
		}
		o.watchTurn(t, a)
	case p != nil && isAgent(e.cfg.Type):
		if !o.move(t.ID, schema.TaskChange{From: schema.TaskQueued, To: schema.TaskDelivered, Reason: "typed into the idle " + e.cfg.Type + " agent"}) {
			return
		}
		o.sendAgentTask(t, e, p)
	case p != nil:
		if !o.move(t.ID, schema.TaskChange{From: schema.TaskQueued, To: schema.TaskDelivered, Reason: "typed into the idle worker"}) {
			return
		}
		o.typeTask(t, p)
	}
}

// watchTurn sends the task to a cicy worker and settles it when the turn
// it started ends.
func (o *outbox) watchTurn(t schema.Task, a *cicy.Agent) {
	ch, err := a.Send(taskMessage(t), t.From, true)
	if err != nil {
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskQueued, Reason: "the worker could not take it: " + err.Error()})
		return
	}
	o.mu.Lock()
	o.watching[t.ID] = true
	o.mu.Unlock()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		defer func() { o.mu.Lock(); delete(o.watching, t.ID); o.mu.Unlock() }()
		select {
		case r := <-ch:
			o.settleTurn(t.ID, r.Status, r.Answer, r.Error)
		case <-o.quit:
		}
	}()
}

// settleTurn marks a cicy task from how its turn ended.
func (o *outbox) settleTurn(id int64, status, answer, errText string) {
	switch status {
	case cicy.TurnCompleted:
		o.move(id, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskDone, Result: answer, Reason: "the worker's turn ended with an answer"})
	case cicy.TurnCancelled:
		o.move(id, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "the worker's turn was cancelled", Reason: "turn cancelled"})
	default:
		o.move(id, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: errText, Reason: "the worker's turn failed"})
	}
}

// typeTask types a task into a shell worker (bracketed paste when the
// program asked for it, then Enter) and verifies it shows on the screen.
func (o *outbox) typeTask(t schema.Task, p terminal) {
	first, _ := typedMarks(t.Text)
	if err := p.SendText(t.Text, true); err != nil {
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "could not type into the worker: " + err.Error(), Reason: "delivery failed"})
		return
	}
	at := time.Now()
	o.mu.Lock()
	o.shell[t.ID] = shellTx{at: at, command: t.Text}
	o.mu.Unlock()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		deadline := time.Now().Add(shellVerify)
		for time.Now().Before(deadline) {
			if strings.Contains(p.Screen(), first) {
				o.mu.Lock()
				o.shell[t.ID] = shellTx{verified: true, at: at, command: t.Text}
				o.mu.Unlock()
				o.Kick()
				return
			}
			select {
			case <-o.quit:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		o.mu.Lock()
		delete(o.shell, t.ID)
		o.mu.Unlock()
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "the typed task never showed on the worker's screen", Reason: "delivery not verified"})
	}()
}

// checkShellDone completes a verified shell task once the worker's output
// has been quiet for the settle time after the delivery.
func (o *outbox) checkShellDone(t schema.Task) {
	o.mu.Lock()
	tx, ok := o.shell[t.ID]
	o.mu.Unlock()
	if !ok || !tx.verified {
		return
	}
	e, err := o.s.get(t.To)
	if err != nil {
		return
	}
	st := e.status()
	switch {
	case !st.Running():
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "the worker's process ended: " + st.Reason, Reason: "worker exited"})
	case st.State == pane.Idle && st.Since.After(tx.at):
		e.op.Lock()
		p := e.proc
		e.op.Unlock()
		result := ""
		if p != nil {
			result = outputAfter(p.Screen(), tx.command)
		}
		o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskDone, Result: result, Reason: "the worker's output was quiet for the settle time"})
	default:
		return
	}
	o.mu.Lock()
	delete(o.shell, t.ID)
	o.mu.Unlock()
}

// typedMarks are what shows typed text on a screen: the start of its first
// line (seen once it was typed) and the end of it (a long line wraps on the
// screen; the output begins after its end, see outputAfter).
func typedMarks(text string) (head, tail string) {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	head, tail = first, first
	if len(head) > 40 {
		head = head[:40]
	}
	if len(tail) > 12 {
		tail = tail[len(tail)-12:]
	}
	return head, tail
}

// outputAfter is the screen after the typed text, without the prompt
// that came back at the end. The typed line is the last one holding the
// start of its first line (output that repeats the command's arguments
// holds their end, not the start); a long line wraps, so the output
// begins after the line holding its end. When the start has scrolled
// away, the last line holding the end marks it.
func outputAfter(screen, typed string) string {
	head, tail := typedMarks(typed)
	lines := strings.Split(screen, "\n")
	start := 0
	if i := lineWith(lines, head, true); i >= 0 {
		first, _, _ := strings.Cut(strings.TrimSpace(typed), "\n")
		wrap := lines[i:min(len(lines), i+len(first)/20+2)] // the rows it can wrap over
		start = i + 1
		if j := lineWith(wrap, tail, false); j >= 0 {
			start = i + j + 1
		}
	} else if j := lineWith(lines, tail, true); j >= 0 {
		start = j + 1
	}
	out := lines[start:]
	if n := len(out); n > 0 {
		if last := strings.TrimSpace(out[n-1]); strings.HasSuffix(last, "$") || strings.HasSuffix(last, "#") || strings.HasSuffix(last, ">") {
			out = out[:n-1]
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// lineWith is the index of the first (or with last, the last) line
// holding s; -1 when none does.
func lineWith(lines []string, s string, last bool) int {
	found := -1
	for i, l := range lines {
		if strings.Contains(l, s) {
			found = i
			if !last {
				break
			}
		}
	}
	return found
}

// notification is the line a master gets.
func notification(t schema.Task, full bool) string {
	head := fmt.Sprintf("🔔 [%s] task %d → %s", t.To, t.ID, t.Status)
	if !full {
		return head
	}
	body := t.Result
	if t.Status == schema.TaskFailed {
		body = t.Error
	}
	if r := []rune(body); len(r) > 2000 {
		body = string(r[:2000]) + "…"
	}
	return head + ": " + body
}

// notifyMasters tells each master of its finished tasks, once.
func (o *outbox) notifyMasters() {
	ts, err := o.store.Unnotified(context.Background())
	if err != nil {
		return
	}
	if len(ts) > 0 {
		o.open.Store(true)
	}
	for _, t := range ts {
		if t.From == "" || t.From == userSender {
			_ = o.store.MarkNotified(context.Background(), t.ID)
			continue
		}
		e, err := o.s.get(t.From)
		if err != nil {
			_ = o.store.MarkNotified(context.Background(), t.ID) // no master to tell
			continue
		}
		e.op.Lock()
		a, p := e.agent, e.proc
		e.op.Unlock()
		switch {
		case a != nil:
			if _, err := a.Send(notification(t, true), "", false); err != nil {
				continue
			}
		case p != nil && p.Status().Running():
			if isAgent(e.cfg.Type) && p.Status().State != pane.Idle {
				continue // an agent takes input at its idle prompt
			}
			if err := p.SendText(notification(t, false), true); err != nil {
				continue
			}
		default:
			continue // told when the master runs again
		}
		_ = o.store.MarkNotified(context.Background(), t.ID)
		o.notifyChange()
	}
}

// recover settles what a previous supervisor left (crash
// safety): a delivered cicy task whose worker answered is done from the
// worker's history; one whose turn was interrupted or never started is
// queued again (once; a second interruption fails it); a delivered shell
// task failed, since its process ended with the supervisor. A cicy master
// whose history already holds a notification is not told twice.
func (o *outbox) recover() {
	ctx := context.Background()
	delivered, _ := o.store.TasksIn(ctx, schema.TaskDelivered)
	for _, t := range delivered {
		e, err := o.s.get(t.To)
		if err != nil {
			o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "the worker no longer exists", Reason: "recovered after a restart"})
			continue
		}
		if e.agent == nil && e.proc != nil && e.proc.Status().Running() {
			// A tmux pane outlived the supervisor: its work goes on.
			at := schema.ParseTime(t.DeliveredAt.String)
			if isAgent(e.cfg.Type) {
				o.agent[t.ID] = agentTx{at: at, confirmed: true, confirmedAt: at, typed: taskMessage(t)}
			} else {
				o.shell[t.ID] = shellTx{verified: true, at: at, command: t.Text}
			}
			continue
		}
		if e.agent == nil {
			o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "the worker's process ended with the supervisor", Reason: "recovered after a restart"})
			continue
		}
		switch outcome, answer := e.agent.MessageOutcome(taskMessage(t)); {
		case outcome == cicy.OutcomeDone:
			o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskDone, Result: answer, Reason: "done before the restart (from the worker's history)"})
		case t.Attempts < 2:
			o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskQueued, Reason: "re-delivered: the restart interrupted its turn"})
		default:
			o.move(t.ID, schema.TaskChange{From: schema.TaskDelivered, To: schema.TaskFailed, Error: "interrupted twice by supervisor restarts", Reason: "recovered after a restart"})
		}
	}
	// Notifications sent but not recorded, and ones recorded as sent but
	// lost with a cicy master's queue: sent after its history was last
	// written, and not in it. (One sent before that write and absent from
	// the history was folded by /compact or dropped by /clear: not lost.)
	all, _ := o.store.ListTasks(ctx, "")
	for _, t := range all {
		if t.Status != schema.TaskDone && t.Status != schema.TaskFailed {
			continue
		}
		e, err := o.s.get(t.From)
		if err != nil || e.agent == nil {
			continue
		}
		if t.NotifiedAt.Valid && schema.ParseTime(t.NotifiedAt.String).Before(e.agent.RestoredFrom()) {
			continue
		}
		seen := e.agent.Mentions(notification(t, false))
		switch {
		case seen && !t.NotifiedAt.Valid:
			_ = o.store.MarkNotified(ctx, t.ID)
		case !seen && t.NotifiedAt.Valid:
			if _, err := e.agent.Send(notification(t, true), "", false); err == nil {
				o.s.log.WithField("task", t.ID).Info("Re-sent a notification lost with the previous supervisor")
			}
		}
	}
}

// callerMaster is the pane a command runs in, when it is a master (its
// dispatches come from it); "" otherwise.
func (s *Supervisor) callerMaster(caller string) string {
	e, err := s.resolvePane(caller)
	if err != nil || e.cfg.Role != topology.RoleMaster {
		return ""
	}
	return e.cfg.ID
}

// userSender is the from of a task dispatched by a person, not a master.
const userSender = "user"

// Dispatch validates and queues a task. from "" means the
// worker's master, or the user when it has none.
func (s *Supervisor) Dispatch(ctx context.Context, from, to, text string) (schema.Task, error) {
	if strings.TrimSpace(text) == "" {
		return schema.Task{}, usageErr("the task is empty")
	}
	if len(text) > MaxTaskText {
		return schema.Task{}, usageErr("the task is %d bytes; at most %d are accepted (put long input in a file and name it)", len(text), MaxTaskText)
	}
	if strings.ContainsRune(text, 0) {
		return schema.Task{}, usageErr("the task contains a NUL byte, which cannot be typed into a pane; remove it")
	}
	w, err := s.resolvePane(to)
	if err != nil {
		return schema.Task{}, err
	}
	switch {
	case w.cfg.Role == topology.RoleMaster:
		return schema.Task{}, usageErr("%s is a master; tasks go to workers", w.cfg.ID)
	case !topology.Tracked(w.cfg.Role):
		return schema.Task{}, usageErr("%s is untracked (role %q): tasks go to workers, whose completion is tracked; create it with --role worker", w.cfg.ID, w.cfg.Role)
	}
	if from == "" {
		from = userSender
		if m := s.masterOf(w); m != "" {
			from = m
		}
	} else {
		m, err := s.resolvePane(from)
		if err != nil {
			return schema.Task{}, err
		}
		if m.cfg.ID == w.cfg.ID {
			return schema.Task{}, usageErr("a pane cannot dispatch a task to itself")
		}
		if m.cfg.Role != topology.RoleMaster {
			return schema.Task{}, usageErr("--from %s is not a master (role %q)", m.cfg.ID, m.cfg.Role)
		}
		from = m.cfg.ID
	}
	t, err := s.store.CreateTask(ctx, from, w.cfg.ID, text, "queued until "+w.cfg.ID+" is idle")
	if err != nil {
		return schema.Task{}, err
	}
	s.tasks.open.Store(true)
	s.taskChanged(t.ID)
	s.tasks.notifyChange()
	s.tasks.Kick()
	return t, nil
}

// resolvePane finds a pane by id or, failing that, by title.
func (s *Supervisor) resolvePane(ref string) (*entry, error) {
	if id, err := ParsePaneID(ref); err == nil {
		return s.get(id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var found *entry
	for _, e := range s.panes {
		if e.cfg.Title == ref {
			if found != nil {
				return nil, usageErr("two panes are titled %q; name the pane by id", ref)
			}
			found = e
		}
	}
	if found == nil {
		return nil, &Error{Kind: KindNotFound, Message: fmt.Sprintf("no pane %s (see 'cicy-agent ls')", ref)}
	}
	return found, nil
}

// masterOf is the master a worker reports to, or "".
func (s *Supervisor) masterOf(w *entry) string {
	if w.cfg.Master.Valid {
		return w.cfg.Master.String
	}
	var masters []string
	s.mu.Lock()
	for _, e := range s.panes {
		if e.cfg.Role == topology.RoleMaster {
			masters = append(masters, e.cfg.ID)
		}
	}
	s.mu.Unlock()
	return topology.MasterOf(topology.Pane{}, masters)
}

// CancelTask cancels a queued or delivered task; a delivered cicy task's
// running turn is cancelled too.
func (s *Supervisor) CancelTask(ctx context.Context, id int64) (schema.Task, error) {
	t, err := s.GetTask(ctx, id)
	if err != nil {
		return t, err
	}
	if schema.Terminal(t.Status) {
		return t, failedErr("task %d is already %s", id, t.Status)
	}
	if s.tasks.move(id, schema.TaskChange{From: t.Status, To: schema.TaskCancelled, Reason: "cancelled by request"}) && t.Status == schema.TaskDelivered {
		if e, err := s.get(t.To); err == nil && e.agent != nil {
			e.agent.Cancel()
		}
	}
	return s.GetTask(ctx, id)
}

// GetTask returns one task.
func (s *Supervisor) GetTask(ctx context.Context, id int64) (schema.Task, error) {
	t, err := s.store.GetTask(ctx, id)
	if errors.Is(err, schema.ErrNotFound) {
		return t, &Error{Kind: KindNotFound, Message: fmt.Sprintf("no task %d (see 'cicy-agent tasks')", id)}
	}
	return t, err
}

// WaitTask blocks until the task ends or ctx does.
func (s *Supervisor) WaitTask(ctx context.Context, id int64) (schema.Task, error) {
	for {
		ch := s.tasks.changes()
		t, err := s.GetTask(ctx, id)
		if err != nil || schema.Terminal(t.Status) {
			return t, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return t, nil
		}
	}
}
