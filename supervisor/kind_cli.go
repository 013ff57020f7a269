package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// cliKind is a CLI agent — Claude Code, Codex or opencode — in a terminal
// (see docs/hooks.md). Its state comes from its own hooks and, when they
// are quiet, from its screen rules. A task is typed at its idle prompt,
// confirmed by its prompt-submit hook or a busy screen, and ended by its
// turn-end hook, whose last assistant message is the result; with no hook,
// its screen turning idle ends it.
type cliKind struct {
	termKind
	hooks *hookLog // the entry's: it outlives a restart
	home  string   // for the screen rules explain reads afresh
	quiet time.Duration
}

// SetState applies a hook's state to the program's pane.
func (p *cliKind) SetState(s pane.State, reason string) {
	if ss, ok := p.proc.(hookTarget); ok {
		ss.SetState(s, reason)
	}
}

func (p *cliKind) View() outbox.View {
	st := p.proc.Status()
	idle := st.State == pane.Idle
	// An agent takes a notification at its idle prompt.
	return outbox.View{Running: st.Running(), Idle: idle, Receptive: st.Running() && idle, Reason: st.Reason,
		Handoff: "typed into the idle " + p.cfg.Type + " agent"}
}

func (p *cliKind) Explain(x *api.Explanation) {
	x.LastHook = p.hooks.seen(p.quiet)
	x.Rules = rulesVerdict(p.home, p.cfg.Type, x.Screen)
	if st := p.proc.Status(); st.Pending != "" {
		x.Rules.Pending = string(st.Pending)
		x.Rules.Note += fmt.Sprintf("; the pane's last look said %s, and it turns %s if the next look says so too", st.Pending, st.Pending)
	}
}

// agentConfirm is how long a typed task may take to be taken up (on a
// loaded machine opencode was seen to signal its prompt more than 20 s
// after the typing); agentReEnter is when a second Enter is sent (Codex
// can turn the first into a newline).
const (
	agentConfirm = 60 * time.Second
	agentReEnter = 3 * time.Second
)

// Task text longer than this is written to a file in the workspace; the
// agent gets a line pointing at it (Claude wraps long pastes in a
// <pasted_content> block it treats as data, not as the request).
const (
	agentInlineBytes = 1500
	agentInlineLines = 6
)

// agentPrompt is what is typed for a task.
func agentPrompt(t schema.Task, workspace string) (string, error) {
	msg := outbox.Message(t)
	if len(msg) <= agentInlineBytes && strings.Count(msg, "\n") < agentInlineLines {
		return msg, nil
	}
	path := filepath.Join(workspace, ".cicy", "tasks", fmt.Sprintf("task-%d.md", t.ID))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create the task folder: %w", err)
	}
	if err := os.WriteFile(path, []byte(t.Text+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the task file: %w", err)
	}
	return fmt.Sprintf("task %d: read the file %s and do what it says.", t.ID, path), nil
}

// Deliver types the task at the agent's idle prompt.
func (p *cliKind) Deliver(t schema.Task, _ func()) (outbox.Delivery, error) {
	msg, err := agentPrompt(t, p.cfg.Workspace)
	if err != nil {
		return nil, err
	}
	at := time.Now()
	if err := p.proc.SendText(msg, true); err != nil {
		return nil, fmt.Errorf("could not type into the agent: %w", err)
	}
	return &cliDelivery{p: p.proc, hooks: p.hooks, at: at, typed: msg, log: p.log}, nil
}

// Recover goes on tracking a task whose tmux session outlived the
// supervisor, as taken up when it was delivered.
func (p *cliKind) Recover(t schema.Task, _ func()) outbox.Recovery {
	if !p.proc.Status().Running() {
		return outbox.Recovery{Verdict: outbox.Lost}
	}
	at := schema.ParseTime(t.DeliveredAt.String)
	return outbox.Recovery{Verdict: outbox.Resumed,
		Delivery: &cliDelivery{p: p.proc, hooks: p.hooks, at: at, confirmed: true, confirmedAt: at, typed: outbox.Message(t), log: p.log}}
}

func (p *cliKind) Noticed(schema.Task) outbox.Notice { return outbox.NoticeUnknown }

// cliDelivery is a task typed into a CLI agent.
type cliDelivery struct {
	p           terminal
	hooks       *hookLog
	at          time.Time
	confirmed   bool
	confirmedAt time.Time
	reEntered   bool
	typed       string // what was typed, for the screen fallback's result
	log         *logrus.Entry
}

// Check settles the task by the agent's turn-end hook or, with no hook,
// by its screen turning idle after it took the task up; a task not taken
// up within agentConfirm fails.
func (d *cliDelivery) Check(now time.Time) outbox.Progress {
	if result, failed, ok := d.hooks.turnEnd(d.at); ok {
		if failed != "" {
			return outbox.Progress{Ended: true, Failed: true, Error: failed, How: "the agent's turn failed (hook)"}
		}
		return outbox.Progress{Ended: true, Result: result, How: "the agent's turn ended (hook)"}
	}
	st := d.p.Status()
	if !st.Running() {
		return outbox.Progress{Ended: true, Failed: true, Error: "the agent's process ended: " + st.Reason, How: "worker exited"}
	}
	if !d.confirmed {
		return d.confirm(st, now)
	}
	if st.State == pane.Idle && st.Cause == pane.CauseScreen && st.Since.After(d.confirmedAt) {
		return outbox.Progress{Ended: true, Result: outputAfter(d.p.Screen(), d.typed),
			How: "the agent's screen shows it idle again (" + st.Reason + "; no hook came)"}
	}
	return outbox.Progress{}
}

// confirm looks for the agent taking the typed task up: its prompt-submit
// hook, a permission question, or a busy screen it drew after the typing.
func (d *cliDelivery) confirm(st pane.Status, now time.Time) outbox.Progress {
	taken := d.hooks.promptSince(d.at) || st.State == pane.Waiting ||
		(st.State == pane.Busy && st.Cause != pane.CauseInput && !st.Since.Before(d.at))
	if taken {
		d.confirmed, d.confirmedAt = true, now
		return outbox.Progress{}
	}
	if !now.Before(d.at.Add(agentConfirm)) {
		return outbox.Progress{Ended: true, How: "delivery failed",
			Failed: true, Error: fmt.Sprintf("the agent did not take the typed task within %s (no prompt-submit signal, no busy screen)", agentConfirm)}
	}
	if !d.reEntered && !now.Before(d.at.Add(agentReEnter)) {
		d.reEntered = true
		if err := d.p.SendText("", true); err != nil {
			d.log.WithError(err).Warn("Could not send a second Enter for a typed task")
		}
	}
	if !d.reEntered {
		return outbox.Progress{Next: d.at.Add(agentReEnter)}
	}
	return outbox.Progress{Next: d.at.Add(agentConfirm)}
}

func (d *cliDelivery) Abandon() {}

// Send types into the agent as a terminal pane does, and makes sure typed
// text with Enter at an idle prompt was submitted: when the agent's
// composer still holds it a moment later (a paste guard turned the Enter
// into a newline, seen with Claude Code on a busy machine), Enter is sent
// once more.
func (p *cliKind) Send(ctx context.Context, req api.SendRequest) (*api.SendResult, error) {
	if idle := p.proc.Status().State == pane.Idle; !idle || req.Text == "" || req.NoEnter {
		return p.send(ctx, req, nil)
	}
	return p.send(ctx, req, func(ctx context.Context, req api.SendRequest) { p.resubmit(ctx, req.Text) })
}

// resubmit sends a second Enter when the composer still shows the end of
// text after agentReEnter; it returns as soon as the composer no longer
// holds it (taken up, or replaced by a dialog).
func (p *cliKind) resubmit(ctx context.Context, text string) {
	tail := []rune(composerText(text))
	if len(tail) > 16 {
		tail = tail[len(tail)-16:]
	}
	if len(tail) == 0 {
		return
	}
	parse := cliagent.Layout(p.cfg.Type)
	deadline := time.Now().Add(agentReEnter)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l := pane.NewLayout(p.proc.Screen(), parse)
		s, ok := l.Find(pane.PartComposer)
		if !ok || !strings.Contains(composerText(strings.Join(l.Lines[s.From:s.To], "")), string(tail)) {
			return
		}
		if time.Now().After(deadline) {
			if err := p.proc.SendText("", true); err != nil {
				p.log.WithError(err).Warn("Could not send a second Enter for typed text")
			}
			return
		}
	}
}

// composerText is s without spaces and box-drawing borders, so text can
// be found in a composer however it was wrapped.
func composerText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '┃' || r == '│' {
			return -1
		}
		return r
	}, s)
}
