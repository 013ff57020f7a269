package signals

import (
	"fmt"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// TakenUp is when an agent was first seen taking up what was typed at
// at: its prompt-submit hook, a model request since, a question it asks,
// or a busy look of its screen since (st is its pane's status). An agent
// whose hooks tell each prompt (prompts), once its hooks have been heard,
// is not taken at its screen's word: right after a turn's end hook its
// screen may still say busy (the hook running) while the keys typed then
// are lost. One whose hooks are silent is read from its screen.
func TakenUp(hooks *Hooks, answers *Answers, st pane.Status, at time.Time, prompts bool) (time.Time, bool) {
	if t := hooks.LastPrompt(); !t.Before(at) {
		return t, true
	}
	if a, ok := answers.Since(at); ok {
		return a.Started, true
	}
	sig := st.Signals
	switch {
	case sig.InFlight > 0 && !sig.GatewayAt.Before(at):
		return sig.GatewayAt, true
	case st.State == pane.Waiting:
		return st.Since, true
	case prompts && hooks.Heard():
		// Only its hooks or its model requests say so.
	case st.State == pane.Busy && st.Cause != pane.CauseInput && !st.Since.Before(at):
		return st.Since, true
	case !sig.ScreenBusyAt.Before(at):
		return sig.ScreenBusyAt, true
	}
	return time.Time{}, false
}

// Verdict is how a task typed at at ended, its turn over (how says what
// told so; end is the hooks' turn end, if any): failed when its last model
// request failed upstream (or the gateway refused it for the budget) or
// the agent's hook says the turn failed; else done, with the turn's last
// model answer as the gateway saw it, else the hook's last message, else
// screen, the transcript on the agent's screen.
func Verdict(answers *Answers, at time.Time, end End, how string, screen func() string) outbox.Progress {
	a, seen := answers.Since(at)
	failed := func(src, why string) outbox.Progress {
		return outbox.Progress{Ended: true, Failed: true, Error: why, How: how, Source: src}
	}
	done := func(src, result string) outbox.Progress {
		return outbox.Progress{Ended: true, Result: result, How: how, Source: src}
	}
	switch {
	case end.Failed != "" && end.FailedBy == schema.SourceGateway:
		return failed(schema.SourceGateway, end.Failed)
	case seen && a.Failed():
		return failed(schema.SourceGateway, "the agent's last model request failed: "+a.Error)
	case end.Failed != "":
		return failed(schema.SourceHook, end.Failed)
	case seen && strings.TrimSpace(a.Text) != "":
		result := strings.TrimSpace(a.Text)
		if a.Cut > 0 {
			result += fmt.Sprintf("\n… (%d more bytes of the answer are not kept)", a.Cut)
		}
		return done(schema.SourceGateway, result)
	case end.Result != "":
		return done(schema.SourceHook, end.Result)
	case seen && !a.Cancelled:
		return done(schema.SourceGateway, "(the agent's last answer had no text: "+ToolCalls(a.ToolCalls)+")")
	}
	return done(schema.SourceScreen, screen())
}

// ToolCalls is "1 tool call", "3 tool calls".
func ToolCalls(n int) string {
	if n == 1 {
		return "1 tool call"
	}
	return fmt.Sprintf("%d tool calls", n)
}
