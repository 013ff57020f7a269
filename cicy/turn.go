package cicy

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cicy/tools"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// DefaultMaxToolRounds is the round cap when meta.yaml sets none.
const DefaultMaxToolRounds = 200

// defaultMaxTokens is max_tokens when meta.yaml sets none.
const defaultMaxTokens = 8192

// turnJob is one running turn. It owns the lent history until it ends.
type turnJob struct {
	a      *Agent
	ctx    context.Context
	id     string
	convID string
	text   string
	hist   []wire.Message
	reply  Reply
	writer historyWriter
	// saveErr is how the last write of the history failed (nil once one
	// succeeded); usageErr how the last of usageLost usage records did.
	saveErr   error
	usageErr  error
	usageLost int
	// resume, for a turn a restart cut short, holds the results of the
	// calls of its last message already known (restored, or interrupted
	// by the restart): the turn answers its calls first, running only
	// those that never started.
	resume map[string]wire.Block
	// stopped: the supervisor's shutdown stopped the turn at a safe point
	// (see Agent.Suspend); nothing more of it is written.
	stopped bool
	exited  chan struct{} // closed when the turn's goroutine returns
}

func newTurnID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "t" + hex.EncodeToString(b)
}

// startTurn lends the history to a new turn goroutine; it reports
// whether the history on disk holds the turn's message (else the queue
// file must keep it). Runs on the loop.
func (a *Agent) startTurn(text string, waiters []chan TurnResult) bool {
	ctx, cancel := context.WithCancel(context.Background())
	now := a.env.Now()
	j := &turnJob{a: a, ctx: ctx, id: newTurnID(), convID: a.convID, text: text, hist: a.hist}
	j.writer = a.historyWriter(a.convID, a.model)
	j.reply = Reply{TurnID: j.id, ConversationID: a.convID, Status: TurnWorking, StartedAt: now, UpdatedAt: now, ToolCalls: []ToolCall{}, CallsRecorded: true}
	// The message goes into the history on disk before the turn starts:
	// from here on, the history holds it, not the queue file. This full
	// write also puts on disk what an earlier turn could not write.
	j.hist = balance(appendUser(a.hist, wire.Text(text)))
	j.saveErr = j.writer.save(j.hist, now)
	if j.saveErr != nil {
		a.log.WithError(j.saveErr).Error("Could not write current.json")
	}
	a.wrote(j.saveErr)
	a.markUnsaved(j.saveErr)
	a.broadcast(Event{Kind: "user", Text: text})
	a.launch(j, cancel, waiters)
	return j.saveErr == nil
}

// launch runs j in its own goroutine, lending it the history. Runs on the
// loop.
func (a *Agent) launch(j *turnJob, cancel context.CancelFunc, waiters []chan TurnResult) {
	a.hist, a.running, a.cancel, a.waiters, a.lent = nil, true, cancel, waiters, j.hist
	a.turnText, a.inTurn, a.ended = j.text, true, nil
	a.reply = j.reply
	a.setStatus(Busy, CauseTurn, "turn "+j.id)
	j.exited = make(chan struct{})
	a.turnExited = j.exited
	a.jobs.Add(1)
	go func() {
		defer a.jobs.Done()
		defer close(j.exited)
		res := j.run()
		cancel()
		if j.stopped {
			return // the turn stays lent: the loop is closing
		}
		a.post(func() { a.finishTurn(j, res) })
	}()
}

// resumeRun takes up the turn a restart cut short (see restoreTurn), on
// the loop, before any queued message.
func (a *Agent) resumeRun() {
	r := a.resumed
	a.resumed = nil
	ctx, cancel := context.WithCancel(context.Background())
	j := &turnJob{a: a, ctx: ctx, id: a.reply.TurnID, convID: a.convID, hist: a.hist, reply: a.reply,
		writer: r.writer, resume: r.known}
	j.writer.fault = a.env.writeFault
	if j.reply.ToolCalls == nil {
		j.reply.ToolCalls = []ToolCall{}
	}
	for i := len(a.hist) - 1; i >= 0; i-- {
		if t := a.hist[i].JoinedText(); a.hist[i].Role == wire.RoleUser && t != "" {
			j.text = t // the turn's message, for the memory loop
			break
		}
	}
	a.log.WithField("turn", j.id).Info("The turn in flight at the last stop goes on")
	a.launch(j, cancel, nil)
}

// finishTurn takes the history back and tells the waiters. Runs on the loop.
func (a *Agent) finishTurn(j *turnJob, res TurnResult) {
	a.hist, a.running, a.cancel, a.model, a.lent = j.hist, false, nil, j.writer.model, nil
	a.reply = j.reply
	a.markUnsaved(j.saveErr)
	unsaved := ""
	if res.Unsaved != "" {
		unsaved = "; not saved: " + res.Unsaved
	}
	switch res.Status {
	case TurnCompleted:
		a.setStatus(Idle, CauseTurn, "turn "+j.id+" done"+unsaved)
	case TurnCancelled:
		a.setStatus(Idle, CauseTurn, "turn "+j.id+" cancelled"+unsaved)
	default:
		a.setStatus(Idle, CauseTurn, "turn "+j.id+" failed: "+res.Error+unsaved)
	}
	a.broadcast(Event{Kind: "turn_end", Status: res.Status, Text: res.Answer})
	if res.Status == TurnCompleted {
		a.harvest(j.text, res.Answer, j.reply.ToolCalls)
	}
	for _, w := range a.waiters {
		w <- res
	}
	a.waiters, a.inTurn, a.ended = nil, false, &res
	a.next()
}

// setup is what a turn resolved from disk and the environment.
type setup struct {
	prov      Provider
	model     string
	maxTokens int
	maxRounds int
	system    string
	skills    string
	role      string
	memories  string
	tools     []wire.Tool
	enabled   map[string]bool
}

func (j *turnJob) run() TurnResult {
	j.writeReply()
	s, err := j.a.resolve()
	if err != nil {
		return j.fail(err.Error())
	}
	j.writer.model = s.model
	if j.resume != nil {
		n := len(j.hist)
		if n > 0 && j.hist[n-1].Role == wire.RoleAssistant {
			// The calls of the last message first: their known
			// results, and the calls that never started.
			j.answerTools(s, j.hist[n-1].ToolUses(), false)
		}
		if j.stopped {
			return j.suspended()
		}
		if j.ctx.Err() != nil {
			return j.cancelled()
		}
	}
	for round := 0; round < s.maxRounds; round++ {
		final := round == s.maxRounds-1
		if j.a.suspending() {
			return j.suspended()
		}
		resp, err := j.call(s, final)
		if err != nil {
			if j.a.suspending() {
				return j.suspended()
			}
			if j.ctx.Err() != nil {
				return j.cancelled()
			}
			return j.fail(describe(err))
		}
		if len(resp.Content) == 0 {
			return j.fail("the model sent an empty response")
		}
		j.hist = append(j.hist, wire.Message{Role: wire.RoleAssistant, Content: resp.Content})
		if t := (wire.Message{Content: resp.Content}).JoinedText(); t != "" {
			j.reply.Answer = t
		}
		uses := wire.Message{Content: resp.Content}.ToolUses()
		if len(uses) == 0 {
			return j.complete()
		}
		j.persistRound() // the calls are on disk before they run
		j.answerTools(s, uses, final)
		if j.stopped {
			return j.suspended()
		}
		if final {
			return j.complete()
		}
		if j.ctx.Err() != nil {
			return j.cancelled()
		}
	}
	return j.complete() // unreachable: the last round returns above
}

// call makes one round's request and records its usage.
func (j *turnJob) call(s *setup, final bool) (*wire.Response, error) {
	s.memories = j.a.memories()
	req := Assemble(Prompt{
		Model: s.model, MaxTokens: s.maxTokens, PaneID: j.a.cfg.ID, TurnID: j.id,
		System: s.system, Skills: s.skills, Tools: s.tools, Role: s.role, Memories: s.memories,
		History: j.hist, Final: final, Encoded: j.writer.enc, headMemories: j.a.env.headMemories,
	})
	if j.a.env.Getenv("CICY_DEBUG_REQUESTS") != "" {
		j.a.dumpRequest(req)
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(j.ctx)
	defer cancel()
	defer context.AfterFunc(j.a.suspendCtx, cancel)() // a shutdown does not wait for the model
	resp, err := s.prov.Stream(ctx, req, func(e wire.Event) {
		switch e.Type {
		case "text_delta":
			j.a.post(func() { j.a.broadcast(Event{Kind: "text", Text: e.Text}) })
		}
	})
	if err != nil {
		return nil, err
	}
	j.reply.Usage.Add(resp.Usage)
	if err := j.a.recordUsage(UsageRecord{PaneID: j.a.cfg.ID, ConversationID: j.convID, TurnID: j.id, Model: s.model, Usage: resp.Usage, Latency: time.Since(start)}); err != nil {
		j.usageErr = err
		j.usageLost++
	}
	return resp, nil
}

// recordUsage hands a model call's usage to the ledger; an error means
// the ledger does not hold it (yet).
func (a *Agent) recordUsage(r UsageRecord) error {
	if a.env.Usage == nil {
		return nil
	}
	err := a.env.Usage.RecordUsage(context.Background(), r)
	if err != nil {
		a.log.WithError(err).Warn("Could not record usage")
	}
	return err
}

// answerTools answers the calls of the history's last message and puts
// the answers in the history, on disk.
func (j *turnJob) answerTools(s *setup, uses []wire.Block, final bool) {
	results := j.runTools(s, uses, final)
	if j.stopped {
		return
	}
	j.hist = append(j.hist, wire.Message{Role: wire.RoleUser, Content: results})
	j.writer.recs = nil // the results are in the history now
	j.persistRound()
}

// InterruptedByRestart is the result of a call that had started when the
// supervisor died and whose result was not recorded: it is not run
// again, and the model is told its effect is unknown.
const InterruptedByRestart = "error: this call was interrupted by a restart of the supervisor before its result was recorded; " +
	"it may or may not have taken effect (check before running it again)"

// runTools answers every tool_use, in order, whatever happens. Before a
// call runs, its start is on disk (with the results of the calls before
// it): a restart never runs a call again (see toolRecord). A shutdown
// (Agent.Suspend) stops it before a call starts, the results so far on
// disk, or when it cut a running call, whose start alone is: the next
// start runs the calls that never started and tells the model of the
// cut one what a crash would (j.stopped).
func (j *turnJob) runTools(s *setup, uses []wire.Block, final bool) []wire.Block {
	results := make([]wire.Block, 0, len(uses))
	var unrecorded [][]byte // results not yet in the journal
	for _, u := range uses {
		res, known := j.resume[u.ID]
		if !known {
			content, isErr, run := j.checkTool(s, u, final)
			if run && j.a.suspending() {
				j.stopped = true
				j.recordResults(unrecorded)
				return nil
			}
			if run {
				if err := j.recordStart(unrecorded, u.ID); err != nil {
					content, isErr = fmt.Sprintf("error: the call was not run: its start could not be recorded (%s)", WriteProblem(err)), true
				} else {
					unrecorded = nil
					j.a.env.crashPoint("started", u.ID)
					content, isErr = j.runTool(s, u)
					j.a.env.crashPoint("ran", u.ID)
					if j.a.suspending() && j.ctx.Err() != nil {
						j.stopped = true // cut by the shutdown: its effect is unknown
						return nil
					}
				}
			}
			res = wire.ToolResult(u.ID, content, isErr)
		}
		results = append(results, res)
		if rec, err := resultRecord(res); err == nil {
			unrecorded = append(unrecorded, rec)
		}
		content := res.Content
		j.reply.ToolCalls = append(j.reply.ToolCalls, ToolCall{Name: u.Name, Input: u.Input, Result: content})
		ev := Event{Kind: "tool", Name: u.Name, Text: string(u.Input), Result: firstLine(content)}
		j.a.post(func() { j.a.broadcast(ev) })
	}
	j.resume = nil
	return results
}

// recordResults puts on disk (synced) the results not yet there, before
// the turn stops for a shutdown.
func (j *turnJob) recordResults(results [][]byte) {
	if len(results) == 0 {
		return
	}
	err := j.writer.record(j.hist, j.a.env.Now(), results...)
	if err != nil {
		j.a.log.WithError(err).Error("Could not record the results of the calls that ran before the shutdown; the next start tells the model they were interrupted")
	}
	j.a.wrote(err)
}

// suspended is the end of a turn a shutdown stopped at a safe point:
// nothing more is written (on disk the turn is still working), so the
// next start takes it up where it stopped, as after a crash.
func (j *turnJob) suspended() TurnResult {
	j.stopped = true
	j.a.log.WithField("turn", j.id).Info("The turn stops for the shutdown; the next start takes it up")
	return TurnResult{Status: TurnWorking}
}

// recordStart puts on disk (synced) the results before it and that the
// call id starts; a call whose start is not on disk is not run.
func (j *turnJob) recordStart(results [][]byte, id string) error {
	err := j.writer.record(j.hist, j.a.env.Now(), append(results, startedRecord(id))...)
	if err != nil {
		j.a.log.WithError(err).Error("Could not record the start of a tool call; it is not run")
		j.saveErr = err
		j.writer.recs = j.writer.recs[:len(j.writer.recs)-1] // it did not start
	}
	j.a.wrote(err)
	return err
}

// checkTool answers a call that is not to run (run false).
func (j *turnJob) checkTool(s *setup, u wire.Block, final bool) (content string, isErr, run bool) {
	switch {
	case final:
		return "error: the tool budget of this turn is spent; answer without calling tools", true, false
	case j.ctx.Err() != nil:
		return "error: cancelled", true, false
	case u.BadInput:
		return "error: the tool input was cut off or is not valid JSON; call the tool again with complete input", true, false
	case !s.enabled[u.Name]:
		if knownTool(u.Name) {
			return fmt.Sprintf("error: tool %s is not enabled for this agent", u.Name), true, false
		}
		return fmt.Sprintf("error: unknown tool %s", u.Name), true, false
	}
	return "", false, true
}

func (j *turnJob) runTool(s *setup, u wire.Block) (string, bool) {
	switch u.Name {
	case "shell":
		run := newToolRun(j.a.dir())
		defer run.done()
		return tools.ShellWatched(j.ctx, j.a.cfg.Workspace, u.Input, tools.Watch{Env: run.env(), Started: run.started, Keep: &j.a.procs})
	case "skill":
		return tools.Skill(filepath.Join(j.a.env.Home, "skills"), u.Input)
	default:
		return j.a.env.Team.Run(j.ctx, j.a.cfg.ID, u.Name, u.Input)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return clip.Bytes(line, 200)
}

// persist writes current.json in full and reply.json: the turn's end. A
// write failure does not stop the turn; it is in the turn's result
// (Unsaved) and the loop writes the history again later.
func (j *turnJob) persist() {
	j.saved(j.writer.save(j.hist, j.a.env.Now()), "Could not write current.json")
}

// persistRound puts a round's messages on disk (the journal) and
// reply.json; a failure waits for the turn's end, which writes it all.
func (j *turnJob) persistRound() {
	j.saved(j.writer.appendRound(j.hist, j.a.env.Now()), "Could not write the round to the history journal")
}

// saved logs a failed write of the history (err, told as msg), writes
// reply.json and records how both went.
func (j *turnJob) saved(err error, msg string) {
	if err != nil {
		j.a.log.WithError(err).Error(msg)
	}
	j.saveErr = errors.Join(err, j.writeReply())
	j.a.wrote(j.saveErr)
}

func (j *turnJob) writeReply() error {
	j.reply.UpdatedAt = j.a.env.Now()
	err := j.a.writeReplyFile(j.reply)
	if err != nil {
		j.a.log.WithError(err).Error("Could not write reply.json")
	}
	r := j.reply
	r.ToolCalls = append([]ToolCall(nil), j.reply.ToolCalls...)
	j.a.post(func() { j.a.reply = r })
	return err
}

// result is r with what of the turn was not written.
func (j *turnJob) result(r TurnResult) TurnResult {
	r.Unsaved = unsavedText(j.a.cfg.ID, j.saveErr, j.usageLost, j.usageErr)
	return r
}

func (j *turnJob) complete() TurnResult {
	j.reply.Status = TurnCompleted
	j.persist()
	return j.result(TurnResult{Status: TurnCompleted, Answer: j.reply.Answer})
}

// fail ends the turn with the failed marker; the detail goes to the log,
// the status and a waiting sender, never into the history.
func (j *turnJob) fail(detail string) TurnResult {
	j.a.log.WithField("turn", j.id).Warnf("Turn failed: %s", detail)
	j.endWith(markerFailed, TurnFailed)
	return j.result(TurnResult{Status: TurnFailed, Error: detail})
}

func (j *turnJob) cancelled() TurnResult {
	j.endWith(markerCancelled, TurnCancelled)
	return j.result(TurnResult{Status: TurnCancelled, Error: "cancelled"})
}

func (j *turnJob) endWith(marker, status string) {
	if n := len(j.hist); j.resume != nil && n > 0 && j.hist[n-1].Role == wire.RoleAssistant {
		// A resumed turn that ends before answering its calls keeps
		// what it knew of them (balance fills the rest).
		var results []wire.Block
		for _, u := range j.hist[n-1].ToolUses() {
			res, ok := j.resume[u.ID]
			if !ok {
				res = wire.ToolResult(u.ID, interruptedResult, true)
			}
			results = append(results, res)
		}
		j.hist = append(j.hist, wire.Message{Role: wire.RoleUser, Content: results})
	}
	j.hist = append(balance(j.hist), wire.Message{Role: wire.RoleAssistant, Content: []wire.Block{wire.Text(marker)}})
	j.writer.enc, j.writer.recs = nil, nil // balance may have changed a message already written
	j.reply.Status, j.reply.Answer = status, ""
	j.persist()
}

// appendUser adds user content, merging into a trailing user message so
// roles keep alternating.
func appendUser(h []wire.Message, blocks ...wire.Block) []wire.Message {
	if n := len(h); n > 0 && h[n-1].Role == wire.RoleUser {
		last := h[n-1]
		h[n-1] = wire.Message{Role: wire.RoleUser, Content: append(append([]wire.Block(nil), last.Content...), blocks...)}
		return h
	}
	return append(h, wire.Message{Role: wire.RoleUser, Content: blocks})
}

// describe turns a provider error into one sentence for the status line.
func describe(err error) string {
	var ae *wire.APIError
	if errors.As(err, &ae) {
		return "the model call failed: " + ae.Error()
	}
	return err.Error()
}

// knownTool reports whether name is a tool this runtime can run.
func knownTool(name string) bool {
	switch name {
	case "shell", "skill", "dispatch", "workers", "task_status", "diff", "merge":
		return true
	}
	return false
}

// resolve reads the template, lite-config, AGENTS.md and memory, and picks
// the provider and model, every turn (edits take effect without restart).
func (a *Agent) resolve() (*setup, error) {
	t, err := LoadTemplate(a.env.Home, a.cfg.RoleTemplate)
	if err != nil {
		return nil, err
	}
	name, prov, err := a.provider(t)
	if err != nil {
		return nil, err
	}
	s := &setup{prov: prov, system: t.System, maxRounds: t.Meta.MaxToolRounds, maxTokens: t.Meta.MaxTokens}
	s.model = cmp.Or(a.cfg.Model, t.Meta.Model, a.env.Getenv("CICY_MODEL"), defaultModel(name))
	if s.model == "" {
		return nil, fmt.Errorf("no model for the %s provider: set --model, model: in the template's meta.yaml, or CICY_MODEL", name)
	}
	if s.maxRounds == 0 {
		s.maxRounds = DefaultMaxToolRounds
	}
	if s.maxTokens == 0 {
		s.maxTokens = defaultMaxTokens
	}
	if err := a.resolveTools(s, t.Meta.Tools); err != nil {
		return nil, err
	}
	if s.role, err = RoleBodyAt(a.cfg.guidance()); err != nil {
		return nil, err
	}
	return s, nil
}

// provider picks the pane's provider (its own, its template's,
// CICY_PROVIDER, anthropic) and sets it up, recording whether it could
// (ProviderProblem).
func (a *Agent) provider(t *Template) (string, Provider, error) {
	name := cmp.Or(a.cfg.Provider, t.Meta.Provider, a.env.Getenv("CICY_PROVIDER"), "anthropic")
	prov, err := a.env.NewProvider(name)
	why := ""
	if err != nil {
		why = err.Error()
	}
	a.noProvider.Store(&why)
	return name, prov, err
}

// CheckProvider sets up the pane's provider as a turn would, and records
// whether it could (ProviderProblem): a pane whose provider has no key is
// known before its first turn fails.
func (a *Agent) CheckProvider() {
	if a.env.NewProvider == nil {
		return
	}
	t, err := LoadTemplate(a.env.Home, a.cfg.RoleTemplate)
	if err != nil {
		return // a turn says so
	}
	_, _, _ = a.provider(t)
}

// ProviderProblem is why the pane cannot make a model call (its provider
// cannot be set up: "the anthropic provider needs ANTHROPIC_API_KEY …"),
// as last checked; "" when it can.
func (a *Agent) ProviderProblem() string {
	if p := a.noProvider.Load(); p != nil {
		return *p
	}
	return ""
}

func (a *Agent) resolveTools(s *setup, want []string) error {
	lc, err := LoadLiteConfig(a.env.Home)
	if err != nil {
		return err
	}
	names, err := lc.Expand(want)
	if err != nil {
		return err
	}
	s.enabled = map[string]bool{}
	var team map[string]wire.Tool
	if a.env.Team != nil {
		team = map[string]wire.Tool{}
		for _, d := range a.env.Team.Defs() {
			team[d.Name] = d
		}
	}
	for _, n := range names {
		switch n {
		case "shell":
			s.tools = append(s.tools, tools.ShellDef())
		case "skill":
			s.tools = append(s.tools, tools.SkillDef())
			s.skills = tools.SkillListing(filepath.Join(a.env.Home, "skills"))
		default:
			d, ok := team[n]
			if !ok {
				continue // team tools exist only where the supervisor provides them
			}
			s.tools = append(s.tools, d)
		}
		s.enabled[n] = true
	}
	for n := range s.enabled {
		if n != "shell" && n != "skill" && team[n].Name == "" {
			delete(s.enabled, n)
		}
	}
	return nil
}

// defaultModel is the model of a provider when nothing names one.
func defaultModel(provider string) string {
	switch provider {
	case "anthropic":
		return "claude-sonnet-4-5"
	case "script":
		return "script"
	}
	return ""
}

// dumpRequest writes the body of the round's request to
// .cicy/history/last-request.json (CICY_DEBUG_REQUESTS set), to inspect
// exactly what a model received. The body never holds credentials.
func (a *Agent) dumpRequest(req *wire.Request) {
	body, err := req.Body()
	if err == nil {
		err = os.WriteFile(filepath.Join(a.dir(), "last-request.json"), body, 0o600)
	}
	if err != nil {
		a.log.WithError(err).Warn("Could not write last-request.json")
	}
}
