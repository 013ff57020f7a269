package cicy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/memory"
	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/reaper"
)

// Provider streams one model call; cicy/provider implements it.
type Provider interface {
	Stream(ctx context.Context, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error)
}

// UsageRecord is the usage of one model call.
type UsageRecord struct {
	PaneID         string
	ConversationID string
	TurnID         string
	Aux            string
	Model          string
	Usage          wire.Usage
	Latency        time.Duration
}

// UsageSink stores usage records (the supervisor's database).
type UsageSink interface {
	RecordUsage(ctx context.Context, r UsageRecord) error
}

// TeamTools are a master's team tools, provided by the supervisor.
type TeamTools interface {
	Defs() []wire.Tool
	Run(ctx context.Context, paneID, name string, input json.RawMessage) (content string, isError bool)
}

// Env is what an agent needs from its surroundings.
type Env struct {
	Home string
	// NewProvider returns the named provider configured from the
	// environment, or an error sentence naming the variable to set.
	NewProvider func(name string) (Provider, error)
	Getenv      func(string) string
	Usage       UsageSink
	Team        TeamTools
	Log         *logrus.Entry
	Now         func() time.Time
	// Clock drives the memory triggers (default: real time).
	Clock Clock
	// OnStatus is called (on the agent's loop; it must not block) after
	// every state change.
	OnStatus func(Status)
	// OnWrite, if set, is called after each write of the history
	// (current.json, its journal, reply.json) with its error, nil when it
	// succeeded: the supervisor's view of a full disk. It must not block.
	OnWrite func(error)
	// Scrub takes the secrets out of the JSON of the history's files
	// before it is written (default: the credentials Getenv reads), so
	// that a key a tool printed or an upstream echoed is not on disk.
	Scrub func([]byte) []byte

	headMemories bool // see Prompt.headMemories
	// writeFault, if set, fails the history's writes it returns an error
	// for, before they are made (tests: a full disk).
	writeFault func(path string) error
	// crash, if set, is called at points of a tool call ("started": its
	// start is on disk; "ran": it ran, its result is not on disk yet);
	// tests end the turn's goroutine there (runtime.Goexit) as a kill -9
	// would.
	crash func(point, id string)
}

func (e Env) crashPoint(point, id string) {
	if e.crash != nil {
		e.crash(point, id)
	}
}

// PaneConfig is the agent_config of a cicy pane.
type PaneConfig struct {
	ID           string
	Workspace    string
	RoleTemplate string
	Provider     string
	Model        string
	// Guidance is the pane's guidance file when it is not the
	// workspace's AGENTS.md (a workspace that is a git worktree keeps it
	// in its .cicy folder, out of the work).
	Guidance string
}

// guidance is the pane's guidance file.
func (c PaneConfig) guidance() string {
	if c.Guidance != "" {
		return c.Guidance
	}
	return filepath.Join(c.Workspace, panetype.GuidanceFile(panetype.Default))
}

// Event is what viewers of a cicy pane see, in order.
type Event struct {
	Kind   string `json:"kind"` // user | text | tool | turn_end | queued | system
	Text   string `json:"text,omitempty"`
	Name   string `json:"name,omitempty"`
	Result string `json:"result,omitempty"`
	Status string `json:"status,omitempty"` // turn_end: completed | failed | cancelled
}

// TurnResult is how a turn ended, for a sender waiting on it.
type TurnResult struct {
	Status string // completed | failed | cancelled
	Answer string
	Error  string // one sentence when failed
	// Unsaved is one sentence when the turn's history or the usage of its
	// model calls could not be written ("disk full: …" when the disk is
	// the cause): the answer is kept in memory and written at the next
	// turn or retry, the usage queued by the ledger. "" when all was
	// written.
	Unsaved string
}

// Outcome markers: a failed or cancelled turn leaves one of these as the
// assistant's message, never the raw error.
const (
	markerCancelled   = "(no reply this turn · cancelled)"
	markerFailed      = "(no reply this turn · generation failed)"
	markerInterrupted = "(no reply this turn · interrupted)"
)

// item is something waiting to run on the agent: a message or a command.
type item struct {
	text    string // message text, already stamped with its sender
	command string // "/compact" or "/clear"
	waiter  chan TurnResult
}

// Agent is one cicy pane: a turn loop owned by one goroutine. The history
// belongs to the loop; while a turn or a compaction runs, it is lent to
// that job's goroutine and handed back with the job's result.
type Agent struct {
	cfg  PaneConfig
	env  Env
	log  *logrus.Entry
	cmds chan func()
	quit chan struct{}
	done chan struct{}
	jobs sync.WaitGroup // running turn and compaction goroutines
	// suspendCtx ends when Suspend is called: the running turn stops at
	// its next safe point, its model request at once.
	suspendCtx context.Context
	suspendNow context.CancelFunc

	// Owned by the loop goroutine.
	hist    []wire.Message
	convID  string
	model   string // the model of the last turn, named in current.json
	status  Status
	queue   []item
	running bool
	// lent is the history as lent to the running turn or compaction,
	// which only appends past its end: Mentions reads it meanwhile.
	lent   []wire.Message
	cancel context.CancelFunc
	// turnExited is closed when the running (or last) turn's goroutine
	// has returned.
	turnExited chan struct{}
	waiters    []chan TurnResult
	reply      Reply
	subs       map[chan Event]struct{}
	mem        memState

	store *memory.Store // long-term memory; safe for concurrent use
	// procs holds what the shell tool's calls left running (a server in
	// the background) until the pane closes; safe for concurrent use.
	procs reaper.Set

	restoredFrom time.Time // updated_at of the current.json this run started from

	// unsaved: the history in memory is not all on disk (a write failed);
	// saveTimer writes it again after saveBackoff (see unsaved.go).
	unsaved     bool
	saveTimer   Timer
	saveBackoff time.Duration
	// held are the messages of turns the history on disk does not hold
	// yet: the queue file keeps them until it does.
	held []item

	// noProvider is why the pane cannot make a model call (its provider
	// cannot be set up: no key, no script), "" when it can; checked at
	// Start and at every turn's setup. Safe for concurrent use.
	noProvider atomic.Pointer[string]

	// resumed is the turn a restart cut short, which Start takes up.
	resumed *resumed
	// turnText is the user text of the running (inTurn) or last turn;
	// ended is the result of the last turn that ended (Await).
	turnText string
	inTurn   bool
	ended    *TurnResult
}

// resumed is what restore prepared for the turn it resumes.
type resumed struct {
	writer historyWriter
	known  map[string]wire.Block
}

// Start restores the pane's conversation from disk and starts its loop. A
// turn that was in flight when the supervisor died is closed with an
// interrupted marker; its user message is kept.
func Start(cfg PaneConfig, env Env) (*Agent, error) {
	if env.Clock == nil {
		env.Clock = realClock{}
	}
	if env.Now == nil {
		env.Now = env.Clock.Now
	}
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Scrub == nil {
		env.Scrub = provider.NewScrubber(env.Getenv).Bytes
	}
	if env.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		env.Log = logrus.NewEntry(l)
	}
	a := &Agent{
		cfg: cfg, env: env, log: env.Log.WithField("pane", cfg.ID),
		cmds: make(chan func()), quit: make(chan struct{}), done: make(chan struct{}),
		subs: map[chan Event]struct{}{}, store: memory.Open(cfg.Workspace),
	}
	a.suspendCtx, a.suspendNow = context.WithCancel(context.Background())
	reason, err := a.restore()
	if err != nil {
		return nil, err
	}
	a.CheckProvider()
	a.status = Status{State: Idle, Cause: CauseRestored, Reason: reason, Since: env.Now()}
	a.restoreMemory()
	pending, err := a.restoreQueue()
	if err != nil {
		a.log.WithError(err).Error("Could not read the message queue; its file is kept aside")
	}
	go a.loop()
	if a.resumed != nil {
		a.do(a.resumeRun)
	}
	if pending > 0 {
		a.log.WithField("messages", pending).Info("Messages queued before the stop run now")
		a.do(a.next)
	}
	return a, nil
}

func (a *Agent) dir() string { return HistoryDir(a.cfg.Workspace) }

// restore loads current.json and reply.json.
func (a *Agent) restore() (string, error) {
	var cur Current
	ok, err := readJSON(filepath.Join(a.dir(), "current.json"), &cur)
	if err != nil {
		// A corrupt file is kept aside, never fatal to the pane.
		aside := filepath.Join(a.dir(), fmt.Sprintf("current.corrupt-%d.json", a.env.Now().Unix()))
		_ = os.Rename(filepath.Join(a.dir(), "current.json"), aside)
		a.convID = uuid.NewString()
		return "history was unreadable; kept as " + filepath.Base(aside) + ", started a new conversation", a.save()
	}
	if !ok {
		a.convID = uuid.NewString()
		return "ready", a.save()
	}
	a.convID, a.model, a.restoredFrom = cur.ConversationID, cur.Model, cur.UpdatedAt
	msgs, journaled, recs := applyJournal(a.dir(), cur.Messages)
	a.hist = fromHist(msgs)
	var rep Reply
	if ok, _ := readJSON(filepath.Join(a.dir(), "reply.json"), &rep); ok {
		a.reply = rep
	}
	// Fold the journal into current.json (which removes the journal),
	// unless a turn was in flight: restoreTurn writes the history with
	// what the journal says of its tool calls.
	fold := journaled && a.reply.Status != TurnWorking
	if a.convID == "" {
		// A history without an id (hand-made or older) keeps its messages
		// under a new id.
		a.convID = uuid.NewString()
		fold = true
	}
	if fold {
		if err := a.save(); err != nil {
			return "", err
		}
	}
	if a.reply.Status != TurnWorking {
		a.hist = balance(a.hist)
		return "restored", nil
	}
	if killLeftoverToolGroup(a.dir()) {
		a.log.Warn("Killed the tool process group the interrupted turn left running")
	}
	return a.restoreTurn(recs)
}

// restoreTurn takes up the turn that was in flight when the last run
// stopped (reply.json says working). One whose end is in the history is
// closed as it ended. Otherwise it goes on (Start resumes it): the calls
// of its last message that had started and have no recorded result are
// not run again but answered InterruptedByRestart, those that never
// started run, and the model is called again. A history this cannot make
// sense of is closed with the interrupted marker, as before.
func (a *Agent) restoreTurn(recs toolRecords) (string, error) {
	n := len(a.hist)
	last := wire.Message{}
	if n > 0 {
		last = a.hist[n-1]
	}
	switch {
	case n == 0:
	case last.Role == wire.RoleAssistant && len(last.ToolUses()) == 0:
		// The turn's end was written, its reply.json not yet.
		a.reply.Status, a.reply.UpdatedAt = TurnCompleted, a.env.Now()
		switch t := last.JoinedText(); {
		case t == markerCancelled:
			a.reply.Status, a.reply.Answer = TurnCancelled, ""
		case strings.HasPrefix(t, "(no reply this turn"):
			a.reply.Status, a.reply.Answer = TurnFailed, ""
		case t != "":
			a.reply.Answer = t
		}
		if err := a.writeReplyFile(a.reply); err != nil {
			return "", err
		}
		a.hist = balance(a.hist)
		return "restored", nil
	default:
		return a.resumeTurn(recs)
	}
	a.hist = append(balance(a.hist), wire.Message{Role: wire.RoleAssistant, Content: []wire.Block{wire.Text(markerInterrupted)}})
	a.reply.Status, a.reply.UpdatedAt = TurnFailed, a.env.Now()
	if err := a.save(); err != nil {
		return "", err
	}
	if err := a.writeReplyFile(a.reply); err != nil {
		return "", err
	}
	return "restored; the turn in flight at the last stop was interrupted", nil
}

// historyWriter writes the pane's history files of a conversation, keys
// scrubbed.
func (a *Agent) historyWriter(convID, model string) historyWriter {
	return historyWriter{dir: a.dir(), agentID: a.cfg.ID, convID: convID, model: model, fault: a.env.writeFault, scrub: a.env.Scrub}
}

// resumeTurn prepares the turn in flight to go on (see restoreTurn): its
// calls' known results are written before anything runs, so a second
// crash knows them too.
func (a *Agent) resumeTurn(recs toolRecords) (string, error) {
	w := a.historyWriter(a.convID, a.model)
	known := map[string]wire.Block{}
	interrupted := 0
	// Older calls without a result (an earlier crash) are closed first.
	last := a.hist[len(a.hist)-1]
	hist := balance(a.hist)
	if len(last.ToolUses()) > 0 {
		hist = append(balance(a.hist[:len(a.hist)-1]), last)
	}
	if last.Role == wire.RoleAssistant {
		for _, u := range last.ToolUses() {
			switch res, ok := recs.results[u.ID]; {
			case ok:
				known[u.ID] = res
			case recs.started[u.ID] || !a.reply.CallsRecorded:
				known[u.ID] = wire.ToolResult(u.ID, InterruptedByRestart, true)
				interrupted++
			}
		}
	}
	for _, u := range last.ToolUses() {
		if res, ok := known[u.ID]; ok {
			b, err := resultRecord(res)
			if err != nil {
				return "", err
			}
			w.recs = append(w.recs, b)
		}
	}
	if err := w.save(hist, a.env.Now()); err != nil {
		return "", err
	}
	a.hist = hist
	if a.reply.TurnID == "" {
		a.reply.TurnID = newTurnID()
	}
	a.reply.UpdatedAt = a.env.Now()
	a.reply.CallsRecorded = true
	a.resumed = &resumed{writer: w, known: known}
	reason := "restored; the turn in flight at the last stop goes on"
	switch interrupted {
	case 0:
	case 1:
		reason += " (1 tool call it had started is not run again: its effect is unknown)"
	default:
		reason += fmt.Sprintf(" (%d tool calls it had started are not run again: their effect is unknown)", interrupted)
	}
	return reason, nil
}

// save writes current.json from the history (the caller owns it).
func (a *Agent) save() error {
	return a.saveCurrent(a.convID, a.model, a.hist)
}

func (a *Agent) saveCurrent(convID, model string, hist []wire.Message) error {
	w := a.historyWriter(convID, model)
	return w.save(hist, a.env.Now())
}

func (a *Agent) loop() {
	defer close(a.done)
	for {
		select {
		case f := <-a.cmds:
			f()
		case <-a.quit:
			if a.cancel != nil {
				a.cancel()
			}
			if a.mem.timer != nil {
				a.mem.timer.Stop()
			}
			a.lastSave()
			for ch := range a.subs {
				close(ch)
			}
			return
		}
	}
}

// do runs f on the loop and waits; false when the agent is closed.
func (a *Agent) do(f func()) bool {
	done := make(chan struct{})
	select {
	case a.cmds <- func() { f(); close(done) }:
		<-done
		return true
	case <-a.done:
		return false
	}
}

// post runs f on the loop without waiting (used by job goroutines).
func (a *Agent) post(f func()) {
	select {
	case a.cmds <- f:
	case <-a.done:
	}
}

// Close stops the loop, cancelling a running turn (whose tools are
// killed), and returns once the turn has written its end to disk and
// every process the pane's shell calls left running has been ended.
func (a *Agent) Close() {
	select {
	case <-a.quit:
	default:
		close(a.quit)
	}
	<-a.done
	a.jobs.Wait()
	a.procs.End()
}

// Suspend stops the loop for a shutdown of the supervisor, leaving a
// running turn for the next start to take up (as after a crash, but at a
// safe point): its model request is dropped at once (the next start asks
// again); a running tool call is given grace to end, its result recorded
// and the turn stopped before the next call starts; one still running
// after grace is cut, and the next start tells the model it was
// interrupted with its effect unknown, never running it again. Nothing
// marks the turn ended, so its task is not sent again.
func (a *Agent) Suspend(grace time.Duration) {
	a.suspendNow()
	var exited chan struct{}
	a.do(func() {
		if a.inTurn {
			exited = a.turnExited
		}
	})
	if exited != nil {
		t := time.NewTimer(grace)
		select {
		case <-exited:
		case <-t.C:
			a.do(func() {
				if a.cancel != nil {
					a.cancel()
				}
			})
			<-exited
		}
		t.Stop()
	}
	a.Close()
}

// suspending reports whether Suspend was called.
func (a *Agent) suspending() bool { return a.suspendCtx.Err() != nil }

// Status is the pane's state.
func (a *Agent) Status() Status {
	var s Status
	if !a.do(func() { s = a.status }) {
		return Status{State: Closed, Reason: "closed", Since: time.Now()}
	}
	return s
}

// Reply is the current or last turn.
func (a *Agent) Reply() Reply {
	var r Reply
	a.do(func() { r = a.reply; r.ToolCalls = append([]ToolCall(nil), a.reply.ToolCalls...) })
	return r
}

// MessageCount is the length of the history (0 while a job holds it).
func (a *Agent) MessageCount() int {
	n := 0
	a.do(func() {
		if !a.running {
			n = len(a.hist)
		}
	})
	return n
}

// ConversationID is the current conversation.
func (a *Agent) ConversationID() string {
	var id string
	a.do(func() { id = a.convID })
	return id
}

// stampRe-free parsing: a relayed message starts with "📮 [w-N] ".
func stripStamp(text string) string {
	if rest, ok := strings.CutPrefix(text, "📮 ["); ok {
		if _, after, found := strings.Cut(rest, "] "); found {
			return after
		}
	}
	return text
}

// Send queues a user message (from another pane when from is set; it is
// then stamped 📮 [from]). /compact and /clear are commands. With wait,
// the returned channel gets the result of the turn that handles it.
func (a *Agent) Send(text, from string, wait bool) (<-chan TurnResult, error) {
	it := item{text: text}
	if cmd := strings.TrimSpace(stripStamp(text)); cmd == "/compact" || cmd == "/clear" {
		it = item{command: cmd}
	} else if from != "" {
		it.text = "📮 [" + from + "] " + text
	}
	if wait {
		it.waiter = make(chan TurnResult, 1)
	}
	var err error
	if !a.do(func() { err = a.enqueue(it) }) {
		return nil, fmt.Errorf("pane %s is closed", a.cfg.ID)
	}
	if err != nil {
		return nil, err
	}
	return it.waiter, nil
}

// enqueue queues it, on disk first (queue.json): a message Send accepted
// is in the queue file or the history from then on, whatever stops the
// process. One the disk does not take is refused.
func (a *Agent) enqueue(it item) error {
	if err := saveQueue(a.dir(), slices.Concat(a.held, a.queue, []item{it})); err != nil {
		// The supervisor hears of it (a full disk needs you) until a
		// write succeeds again, which the retry timer tries.
		a.wrote(err)
		if IsDiskFull(err) {
			a.markUnsaved(err)
		}
		return fmt.Errorf("pane %s could not keep the message: %w", a.cfg.ID, err)
	}
	a.queue = append(a.queue, it)
	if a.running {
		a.broadcast(Event{Kind: "queued", Text: it.text + it.command})
		return nil
	}
	a.next()
	return nil
}

// next starts the next job of the queue: consecutive messages run as one
// turn (joined by newlines), a command runs on its own.
func (a *Agent) next() {
	if a.running || len(a.queue) == 0 {
		return
	}
	defer a.keepQueue()
	if a.queue[0].command != "" {
		it := a.queue[0]
		a.queue = a.queue[1:]
		a.runCommand(it)
		return
	}
	var texts []string
	var waiters []chan TurnResult
	n := 0
	for n < len(a.queue) && a.queue[n].command == "" {
		texts = append(texts, a.queue[n].text)
		if a.queue[n].waiter != nil {
			waiters = append(waiters, a.queue[n].waiter)
		}
		n++
	}
	taken := a.queue[:n]
	a.queue = a.queue[n:]
	if !a.startTurn(strings.Join(texts, "\n"), waiters) {
		// The history on disk does not hold the messages: the queue file
		// keeps them until a write of the history succeeds.
		for _, it := range taken {
			a.held = append(a.held, item{text: it.text})
		}
	}
}

// keepQueue writes the queue file after messages left the queue (their
// turn has put them in the history, or they are held until it is
// written).
func (a *Agent) keepQueue() {
	if err := saveQueue(a.dir(), slices.Concat(a.held, a.queue)); err != nil {
		a.log.WithError(err).Error("Could not write the message queue")
	}
}

// Cancel stops the running turn (and the tools it runs). Queued messages
// still run after it. It reports whether a turn was running.
func (a *Agent) Cancel() bool {
	var was bool
	a.do(func() {
		if a.running && a.cancel != nil {
			a.cancel()
			was = true
		}
	})
	return was
}

// Subscribe returns the pane's event stream; cancel ends it.
func (a *Agent) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 256)
	if !a.do(func() { a.subs[ch] = struct{}{} }) {
		close(ch)
		return ch, func() {}
	}
	return ch, func() {
		a.do(func() {
			if _, ok := a.subs[ch]; ok {
				delete(a.subs, ch)
				close(ch)
			}
		})
	}
}

// broadcast sends an event to viewers; one that falls behind is dropped.
func (a *Agent) broadcast(e Event) {
	for ch := range a.subs {
		select {
		case ch <- e:
		default:
			delete(a.subs, ch)
			close(ch)
		}
	}
}

func (a *Agent) setStatus(s State, c Cause, reason string) {
	a.status = Status{State: s, Cause: c, Reason: reason, Since: a.env.Now()}
	if a.env.OnStatus != nil {
		a.env.OnStatus(a.status)
	}
}

// RestoredFrom is when the history this run started from was last
// written by the previous run (zero for a new conversation). Set once at
// Start, read-only after.
func (a *Agent) RestoredFrom() time.Time { return a.restoredFrom }

// Outcome of the turn that handled a message, read from the history.
const (
	OutcomeMissing = "missing" // no user message holds the text (never delivered, or lost)
	OutcomeRunning = "running" // a turn holds the history now
	OutcomeDone    = "done"
	OutcomeFailed  = "failed" // the turn ended with a marker (failed, cancelled or interrupted)
)

// MessageOutcome finds the last user message containing text and tells
// how the turn that handled it ended, with its answer. The supervisor uses
// it after a restart to settle tasks from the worker's history.
func (a *Agent) MessageOutcome(text string) (outcome, answer string) {
	outcome = OutcomeRunning
	a.do(func() {
		if a.running {
			return
		}
		outcome, answer = messageOutcome(a.hist, text)
	})
	return outcome, answer
}

func messageOutcome(h []wire.Message, text string) (string, string) {
	at := -1
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == wire.RoleUser && strings.Contains(h[i].JoinedText(), text) {
			at = i
			break
		}
	}
	if at < 0 {
		return OutcomeMissing, ""
	}
	answer := ""
	for _, m := range h[at+1:] {
		if m.Role == wire.RoleUser && m.JoinedText() != "" {
			break // the next turn
		}
		if m.Role == wire.RoleAssistant {
			if t := m.JoinedText(); t != "" {
				answer = t
			}
		}
	}
	if answer == "" || strings.HasPrefix(answer, "(no reply this turn") {
		return OutcomeFailed, answer
	}
	return OutcomeDone, answer
}

// Mentions reports whether a user message of the history, or one waiting
// in the queue, contains text.
func (a *Agent) Mentions(text string) bool {
	found := false
	a.do(func() {
		for _, it := range a.queue {
			if strings.Contains(it.text, text) {
				found = true
				return
			}
		}
		h := a.hist
		if a.running {
			// The history is lent to the job, which only appends past
			// what it was lent (the turn's own message included).
			h = a.lent
		}
		for _, m := range h {
			if m.Role == wire.RoleUser && strings.Contains(m.JoinedText(), text) {
				found = true
				return
			}
		}
	})
	return found
}

// Await returns a channel that gets the result of the turn that handles
// the message containing text, when this run has it: the running turn
// (a turn a restart cut short goes on), a message waiting in the queue,
// or the turn that ended last. False when none holds it. The supervisor
// uses it after a restart to follow a task its worker is still on.
func (a *Agent) Await(text string) (<-chan TurnResult, bool) {
	ch := make(chan TurnResult, 1)
	found := false
	a.do(func() {
		switch {
		case a.inTurn && strings.Contains(a.turnText, text):
			a.waiters = append(a.waiters, ch)
			found = true
			return
		case !a.inTurn && a.ended != nil && strings.Contains(a.turnText, text):
			ch <- *a.ended
			found = true
			return
		}
		for i := range a.queue {
			if a.queue[i].command == "" && a.queue[i].waiter == nil && strings.Contains(a.queue[i].text, text) {
				a.queue[i].waiter = ch
				found = true
				return
			}
		}
	})
	return ch, found
}
