package cicy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// summaryPrefix marks the user message that holds a /compact summary.
const summaryPrefix = "[Summary of the earlier conversation, made by /compact; the most recent messages follow.]\n\n"

// compactPrompt is the system prompt of the summary call (see docs/requests-and-caching.md).
const compactPrompt = `You compact a conversation between a user and an AI agent so the agent can continue the work without the earlier messages. Write the summary in the conversation's language, with these sections:
1. User goals and requests: every goal and request the user made.
2. Key decisions: decisions and conclusions reached.
3. Tasks: every task with its owner and status (done, in progress, blocked, not started).
4. Files and code touched: paths and what changed.
5. Errors and fixes: errors met and how they were fixed, including every correction the user made.
6. Constraints: constraints and prohibitions, quoting the user's own words.
7. Current work: what was being done at the end, down to the file and step.
8. Next step: the immediate next step, in line with the user's latest explicit request.
Recent information beats old. Output only the summary.`

// runCommand runs /compact or /clear. Runs on the loop.
func (a *Agent) runCommand(it item) {
	switch it.command {
	case "/clear":
		res := a.clear()
		a.broadcast(Event{Kind: "system", Text: res.Answer + res.Error})
		reply(it.waiter, res)
		a.next()
	case "/compact":
		a.startCompact(it.waiter)
	}
}

func reply(w chan TurnResult, r TurnResult) {
	if w != nil {
		w <- r
	}
}

// clear archives the conversation, rotates its id and empties it.
// AGENTS.md and .cicy/memory are untouched.
func (a *Agent) clear() TurnResult {
	// The buffered turns are recognised first; the recognition runs on its
	// own and is not tied to the conversation being cleared.
	a.flushMemory()
	if err := archive(a.dir(), a.env.Now()); err != nil {
		return TurnResult{Status: TurnFailed, Error: fmt.Sprintf("could not archive the conversation, so it was not cleared: %v", err)}
	}
	old := a.convID
	a.convID, a.hist = uuid.NewString(), nil
	a.reply = Reply{ConversationID: a.convID, Status: TurnCompleted, StartedAt: a.env.Now(), UpdatedAt: a.env.Now(), ToolCalls: []ToolCall{}}
	err := a.save()
	if err == nil {
		err = a.writeReplyFile(a.reply)
	}
	a.wrote(err)
	a.markUnsaved(err)
	if err != nil {
		return TurnResult{Status: TurnFailed, Error: err.Error()}
	}
	a.setStatus(Idle, CauseCommand, "cleared")
	a.log.WithFields(map[string]any{"from": old, "to": a.convID}).Info("Conversation cleared")
	return TurnResult{Status: TurnCompleted, Answer: "conversation cleared; new conversation " + a.convID}
}

// startCompact lends the history to a compaction goroutine. Runs on the
// loop.
func (a *Agent) startCompact(w chan TurnResult) {
	if len(a.hist) == 0 {
		res := TurnResult{Status: TurnCompleted, Answer: "the conversation is empty: nothing to compact"}
		a.broadcast(Event{Kind: "system", Text: res.Answer})
		reply(w, res)
		a.next()
		return
	}
	if len(a.hist) == 1 && isSummary(a.hist[0]) {
		res := TurnResult{Status: TurnCompleted, Answer: "the conversation is already one summary: nothing to compact"}
		a.broadcast(Event{Kind: "system", Text: res.Answer})
		reply(w, res)
		a.next()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	hist, convID := a.hist, a.convID
	a.hist, a.running, a.cancel, a.lent = nil, true, cancel, hist
	a.setStatus(Busy, CauseCommand, "compacting")
	a.jobs.Add(1)
	go func() {
		defer a.jobs.Done()
		defer cancel()
		newHist, res := a.compact(ctx, hist, convID)
		a.post(func() {
			a.hist, a.running, a.cancel, a.lent = newHist, false, nil, nil
			if res.Status == TurnCompleted {
				a.setStatus(Idle, CauseCommand, "compacted")
			} else {
				a.setStatus(Idle, CauseCommand, "compact failed: "+res.Error)
			}
			a.broadcast(Event{Kind: "system", Text: res.Answer + res.Error})
			reply(w, res)
			a.next()
		})
	}()
}

// compact archives, then folds the history into one summary message: all
// of it, or above CompactThreshold all but the CompactKeep most recent
// messages. On any failure the history comes back unchanged.
func (a *Agent) compact(ctx context.Context, hist []wire.Message, convID string) ([]wire.Message, TurnResult) {
	fail := func(msg string) ([]wire.Message, TurnResult) {
		a.log.Warnf("Compact failed: %s", msg)
		return hist, TurnResult{Status: TurnFailed, Error: msg}
	}
	if err := archive(a.dir(), a.env.Now()); err != nil {
		return fail(err.Error())
	}
	cut := CompactCut(hist)
	s, err := a.resolve()
	if err != nil {
		return fail(err.Error())
	}
	req := &wire.Request{
		Model: s.model, MaxTokens: 4096, PaneID: a.cfg.ID, Aux: "compact",
		System:   []wire.Block{wire.Text(compactPrompt)},
		Messages: []wire.Message{{Role: wire.RoleUser, Content: []wire.Block{wire.Text(transcript(hist[:cut]))}}},
	}
	ctx, stop := context.WithTimeout(ctx, 3*time.Minute)
	defer stop()
	start := time.Now()
	resp, err := s.prov.Stream(ctx, req, nil)
	if err != nil {
		return fail(describe(err))
	}
	a.recordUsage(UsageRecord{PaneID: a.cfg.ID, ConversationID: convID, Aux: "compact", Model: s.model, Usage: resp.Usage, Latency: time.Since(start)})
	summary := strings.TrimSpace(wire.Message{Content: resp.Content}.JoinedText())
	if summary == "" {
		return fail("the summary came back empty")
	}
	out := append([]wire.Message{{Role: wire.RoleUser, Content: []wire.Block{wire.Text(summaryPrefix + summary)}}}, hist[cut:]...)
	if err := a.saveCurrent(convID, s.model, out); err != nil {
		return fail(err.Error())
	}
	return out, TurnResult{Status: TurnCompleted, Answer: fmt.Sprintf("compacted: %d messages folded into a summary, %d kept", cut, len(hist)-cut)}
}

// isSummary: m is the message a /compact left, the summary and nothing
// else.
func isSummary(m wire.Message) bool {
	return m.Role == wire.RoleUser && len(m.Content) == 1 && m.Content[0].Type == wire.TypeText &&
		strings.HasPrefix(m.Content[0].Text, summaryPrefix)
}

// CompactCut is where /compact cuts: everything when the history has at
// most CompactThreshold messages, else len-CompactKeep, moved forward past
// messages holding tool results (so no result loses its call).
func CompactCut(h []wire.Message) int {
	if len(h) <= CompactThreshold {
		return len(h)
	}
	cut := len(h) - CompactKeep
	for cut < len(h) && hasToolResult(h[cut]) {
		cut++
	}
	return cut
}

// transcript renders history for the summary call: text as "role: text",
// tool calls and results shortened, outcome markers skipped.
func transcript(h []wire.Message) string {
	var b strings.Builder
	for _, m := range h {
		for _, blk := range m.Content {
			switch blk.Type {
			case wire.TypeText:
				if strings.HasPrefix(blk.Text, "(no reply this turn") {
					continue
				}
				fmt.Fprintf(&b, "%s: %s\n", m.Role, blk.Text)
			case wire.TypeToolUse:
				fmt.Fprintf(&b, "%s [calls %s %s]\n", m.Role, blk.Name, clip.Bytes(string(blk.Input), 300))
			case wire.TypeToolResult:
				fmt.Fprintf(&b, "tool result: %s\n", clip.Bytes(blk.Content, 400))
			}
		}
	}
	return b.String()
}
