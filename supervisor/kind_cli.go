package supervisor

import (
	"context"
	"fmt"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/agentpane"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
	"github.com/cicy-ai/cicy-agent/supervisor/signals"
)

// cliKind is a CLI agent (package cliagent) in a terminal
// (see docs/hooks.md). Its state comes from the gateway's requests in
// flight, its own hooks and, when both are quiet, its screen rules. A task
// is typed at its idle prompt, taken up when its prompt-submit hook, a
// model request or a busy screen follows, and ended by its turn-end hook
// or its screen turning idle; the result is the turn's last model answer
// as the gateway saw it, else the hook's last message, else the
// transcript on its screen.
type cliKind struct {
	termKind
	hooks    *signals.Hooks   // the entry's: it outlives a restart
	answers  *signals.Answers // the entry's: what the gateway saw
	requests *signals.Requests
	home     string // for the screen rules explain reads afresh
	quiet    time.Duration
}

// SetState applies a hook's state to the program's pane.
func (p *cliKind) SetState(s pane.State, reason string) {
	if ss, ok := p.proc.(hookTarget); ok {
		ss.SetState(s, reason)
	}
}

func (p *cliKind) View() outbox.View {
	st := p.proc.Status()
	// An agent takes a task or a notification at its idle prompt, not
	// while a menu a person opened over it (a model picker, a help panel)
	// shows: its Enter would pick an option.
	idle := st.State == pane.Idle && !agentpane.MenuOpen(st)
	return outbox.View{Running: st.Running(), Idle: idle, Receptive: st.Running() && idle, Reason: st.Reason,
		Handoff: "typed into the idle " + p.cfg.Type + " agent"}
}

func (p *cliKind) Explain(x *api.Explanation) {
	x.LastHook = p.hooks.Seen(p.quiet)
	x.LastIgnored = p.hooks.IgnoredSeen()
	x.Rules = screens.RulesVerdict(p.home, p.cfg.Type, x.Screen)
	st := p.proc.Status()
	if st.Pending != "" {
		x.Rules.Pending = string(st.Pending)
		x.Rules.Note += fmt.Sprintf("; the pane's last look said %s, and it turns %s if the next look says so too", st.Pending, st.Pending)
	}
	if n := st.Signals.InFlight; n > 0 && st.Running() && x.Rules.State != string(pane.Busy) {
		x.Rules.Overruled = fmt.Sprintf("%d model request(s) of the agent are in flight at the gateway: the pane is busy whatever its screen says, and the screen rules may not call it %s until they end", n, x.Rules.State)
	}
}

// agent is the pane as a task typed into it is watched (package
// agentpane).
func (p *cliKind) agent() agentpane.Agent {
	return agentpane.Agent{Term: p.proc, Type: p.cfg.Type, Hooks: p.hooks, Answers: p.answers, Requests: p.requests, Log: p.log}
}

// Deliver types the task at the agent's idle prompt.
func (p *cliKind) Deliver(t schema.Task, _ func()) (outbox.Delivery, error) {
	d, err := p.agent().Deliver(t, p.cfg.Workspace)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Recover goes on tracking a task whose tmux session outlived the
// supervisor, as taken up when it was delivered.
func (p *cliKind) Recover(t schema.Task, _ func()) outbox.Recovery { return p.agent().Recover(t) }

func (p *cliKind) Noticed(schema.Task) outbox.Notice { return outbox.NoticeUnknown }

// Send types into the agent as a terminal pane does, and makes sure typed
// text with Enter at the prompt was submitted: while the agent's composer
// still holds it a moment later (a paste guard turned the Enter into a
// newline, or the agent was still drawing its first screen — both seen
// with Claude Code on a busy machine), Enter is sent again, a few times.
// Text typed while a turn is under way (a hook, the gateway or a screen
// rule says busy) is left as the agent takes it.
func (p *cliKind) Send(ctx context.Context, req api.SendRequest) (*api.SendResult, error) {
	if !agentpane.AtPrompt(p.proc.Status()) || req.Text == "" || req.NoEnter {
		return p.send(ctx, req, nil)
	}
	return p.send(ctx, req, func(ctx context.Context, req api.SendRequest, sent time.Time) {
		p.agent().Resubmit(ctx, req.Text, sent)
	})
}
