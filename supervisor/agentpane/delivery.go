package agentpane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/shelltask"
	"github.com/cicy-ai/cicy-agent/supervisor/signals"
)

// A task or text typed into a CLI agent pane: typed at its idle prompt,
// taken up when its prompt-submit hook, a model request or a busy screen
// follows (Enter sent again, or the task typed once more, while it is
// not), and ended by its turn-end hook or its screen turning idle; the
// result is the turn's last model answer as the gateway saw it, else the
// hook's last message, else the transcript on its screen (package
// signals' Verdict). The supervisor's CLI kind (kind_cli.go) hands the
// outbox the Delivery.

// Term is what watching typed input needs of an agent pane's terminal.
type Term interface {
	Status() pane.Status
	Screen() string
	SendText(text string, enter bool) error
}

// Agent is a CLI agent pane as text typed into it is watched: its
// terminal, its type (package cliagent), its signals (the entry's: they
// outlive a restart) and its log.
type Agent struct {
	Term     Term
	Type     string
	Hooks    *signals.Hooks
	Answers  *signals.Answers
	Requests *signals.Requests
	Log      *logrus.Entry
}

// MenuOpen is whether the screen rules' last look found the agent idle
// under a menu, help panel or picker a person opened.
func MenuOpen(st pane.Status) bool {
	sig := st.Signals
	return sig.ScreenState == pane.Idle && sig.ScreenPart == pane.PartMenu
}

// agentConfirm is how long a typed task may take to be taken up (on a
// loaded machine opencode was seen to signal its prompt more than 20 s
// after the typing); agentReEnter is when a second Enter is sent (Codex
// can turn the first into a newline).
const (
	agentConfirm = 60 * time.Second
	agentReEnter = 3 * time.Second
	// agentRetype: a task typed into an agent that shows it nowhere (not
	// in its composer, not in its transcript) and has not taken it up
	// this long after is typed once more: the agent was not reading its
	// input yet (a CLI still drawing a resumed conversation drops keys).
	agentRetype = 15 * time.Second
)

// Task text longer than this is written to a file in the workspace; the
// agent gets a line pointing at it (Claude wraps long pastes in a
// <pasted_content> block it treats as data, not as the request).
const (
	agentInlineBytes = 1500
	agentInlineLines = 6
)

// Prompt is what is typed for a task.
func Prompt(t schema.Task, workspace string) (string, error) {
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

// Deliver types task t at the agent's idle prompt (a long one as a file
// in its workspace, see Prompt) and is its delivery.
func (a Agent) Deliver(t schema.Task, workspace string) (*Delivery, error) {
	msg, err := Prompt(t, workspace)
	if err != nil {
		return nil, err
	}
	at := time.Now()
	if err := a.Term.SendText(msg, true); err != nil {
		return nil, fmt.Errorf("could not type into the agent: %w", err)
	}
	return a.Track(at, msg, false), nil
}

// Recover goes on tracking a task whose tmux session outlived the
// supervisor, as taken up when it was delivered.
func (a Agent) Recover(t schema.Task) outbox.Recovery {
	if !a.Term.Status().Running() {
		return outbox.Recovery{Verdict: outbox.Lost}
	}
	at := schema.ParseTime(t.DeliveredAt.String)
	return outbox.Recovery{Verdict: outbox.Resumed, Delivery: a.Track(at, outbox.Message(t), true)}
}

// Track is the delivery of text typed at at; confirmed when it was taken
// up before a restart.
func (a Agent) Track(at time.Time, typed string, confirmed bool) *Delivery {
	d := &Delivery{a: a, at: at, typed: typed}
	if confirmed {
		d.confirmed, d.confirmedAt = true, at
	}
	return d
}

// Delivery is a task typed into a CLI agent (an outbox.Delivery).
type Delivery struct {
	a           Agent // the pane it was typed into
	at          time.Time
	confirmed   bool
	confirmedAt time.Time // when the agent was first seen taking it up
	reEnters    int       // the Enters sent again
	retyped     bool      // the task was typed once more (agentRetype)
	nextEnter   time.Time // when the next one is due
	typed       string    // what was typed, for the screen fallback's result
	settleBy    time.Time // how long an ended turn's last answer is waited for
	hookBy      time.Time // how long a turn-end hook is waited for once the screen says idle
}

// answerGrace is how long an ended turn waits for the gateway to finish
// recording the answer of a request still in flight: an agent's turn-end
// hook may run before the gateway has passed on the answer's last bytes.
const answerGrace = 2 * time.Second

// hookGrace is how long a task whose prompt hook came waits, once the
// agent's screen says idle, for its turn-end hook: the hook is a process
// the agent starts as it draws its prompt, and may arrive just after the
// screen was read.
const hookGrace = 3 * time.Second

// Check settles the task once the agent's turn ended — by its turn-end
// hook or, with no hook, by its screen turning idle after it took the task
// up — from what the gateway saw of the turn (see verdict); a task not
// taken up within agentConfirm fails.
func (d *Delivery) Check(now time.Time) outbox.Progress {
	end, hooked := d.a.Hooks.TurnEnd(d.at)
	how := "the agent's turn ended (hook)"
	if !hooked {
		st := d.a.Term.Status()
		if !st.Running() {
			return outbox.Progress{Ended: true, Failed: true, Error: "the agent's process ended: " + st.Reason, How: "worker exited"}
		}
		if !d.confirmed {
			if p, wait := d.confirm(st, now); wait {
				return p
			}
		}
		if st.State != pane.Idle || st.Cause != pane.CauseScreen || !st.Since.After(d.confirmedAt) {
			d.hookBy = time.Time{}
			return outbox.Progress{}
		}
		if d.a.Hooks.PromptSince(d.at) {
			// A hooked turn: its Stop hook is on its way.
			if d.hookBy.IsZero() {
				d.hookBy = now.Add(hookGrace)
			}
			if now.Before(d.hookBy) {
				return outbox.Progress{Next: now.Add(20 * time.Millisecond)}
			}
		}
		how = "the agent's screen showed it idle again (" + st.Reason + "); no turn-end hook had come by then"
	}
	if d.a.Requests.InFlight() > 0 {
		if d.settleBy.IsZero() {
			d.settleBy = now.Add(answerGrace)
		}
		if now.Before(d.settleBy) {
			return outbox.Progress{Next: now.Add(20 * time.Millisecond)}
		}
	}
	return d.verdict(end, how)
}

// verdict is how the task ended, its turn over (signals.Verdict), the
// transcript on the agent's screen when nothing else told.
func (d *Delivery) verdict(end signals.End, how string) outbox.Progress {
	return signals.Verdict(d.a.Answers, d.at, end, how, func() string { return transcriptAfter(d.a.Term.Screen(), d.a.Type, d.typed) })
}

// transcriptAfter is what follows the typed text in the transcript part of
// an agent's screen (never its composer, status or footer).
func transcriptAfter(screen, typ, typed string) string {
	l := pane.NewLayout(screen, cliagent.Layout(typ))
	s, ok := l.Find(pane.PartTranscript)
	if !ok {
		return ""
	}
	return shelltask.OutputAfter(strings.Join(l.Lines[s.From:s.To], "\n"), typed)
}

// confirm looks for the agent taking the typed task up: its prompt-submit
// hook, a model request since, a permission question, or a busy screen —
// the state, or any look of the screen rules since the typing that said
// busy, whatever the pane's state then (an agent that draws its busy
// screen at once stays busy by the typed input). wait is false once it
// was taken up: the caller goes on to look for the turn's end.
func (d *Delivery) confirm(st pane.Status, now time.Time) (_ outbox.Progress, wait bool) {
	if at, ok := d.takenAt(st); ok {
		d.confirmed, d.confirmedAt = true, at
		return outbox.Progress{}, false
	}
	if !now.Before(d.at.Add(agentConfirm)) {
		return outbox.Progress{Ended: true, How: "delivery failed",
			Failed: true, Error: fmt.Sprintf("the agent did not take the typed task within %s (no prompt-submit signal, no model request, no busy screen)", agentConfirm)}, true
	}
	d.reEnter(now)
	// A busy look leaves no state change to wake the outbox: look again.
	return outbox.Progress{Next: now.Add(250 * time.Millisecond)}, true
}

// reEnter sends Enter again every agentReEnter, resubmitTries times at
// most, while the task is not taken up, and only while the composer
// still holds the end of the typed text (Codex can turn the first Enter
// into a newline; a loaded Claude Code was seen to keep a typed task,
// Enter and all, in its composer). An Enter into an empty composer would
// be wrong: a loaded agent that took the task may show nothing of it for
// seconds, and an Enter then started a second request. A screen with no
// composer yet (an agent still drawing its first screen), or one that
// does not show the text yet before the first Enter again (a loaded
// machine draws late), is waited for; text gone from a composer after an
// Enter again stops it: an Enter could answer a dialog.
func (d *Delivery) reEnter(now time.Time) {
	if d.nextEnter.IsZero() {
		d.nextEnter = d.at.Add(agentReEnter)
	}
	if d.reEnters >= resubmitTries || now.Before(d.nextEnter) {
		return
	}
	screen := d.a.Term.Screen()
	shown, holds := composerHolds(screen, d.a.Type, d.typed)
	switch {
	case shown && !holds && d.reEnters == 0 && d.lost(screen, now):
		d.retyped = true
		d.a.Log.Warn("Typed task shown nowhere and not taken up; typing it once more")
		if err := d.a.Term.SendText(d.typed, true); err != nil {
			d.a.Log.WithError(err).Warn("Could not type the task again")
		}
		return
	case !shown || !holds && d.reEnters == 0:
		return
	case !holds:
		d.a.Log.Info("Typed task gone from the agent's composer but not taken up; no more Enters")
		d.reEnters = resubmitTries
		return
	}
	d.reEnters++
	d.nextEnter = now.Add(agentReEnter)
	d.a.Log.WithField("try", d.reEnters).Info("Typed task not taken up; sending Enter again")
	if err := d.a.Term.SendText("", true); err != nil {
		d.a.Log.WithError(err).Warn("Could not send Enter again for a typed task")
	}
}

// lost reports whether the typed task is, by now, nowhere on the screen
// (neither the composer nor the transcript shows its end) although
// agentRetype went by: the agent dropped the keys. Once only.
func (d *Delivery) lost(screen string, now time.Time) bool {
	if d.retyped || now.Before(d.at.Add(agentRetype)) {
		return false
	}
	tail := typedTail(d.typed)
	return tail != "" && !strings.Contains(composerText(screen), tail)
}

// takenAt is when the agent was first seen taking the typed task up.
func (d *Delivery) takenAt(st pane.Status) (time.Time, bool) {
	return signals.TakenUp(d.a.Hooks, d.a.Answers, st, d.at, cliagent.ReportsPrompts(d.a.Type))
}

func (d *Delivery) Abandon() {}

// AtPrompt is whether the agent waits at its prompt: idle, or busy only
// by its own output or typed input (a redraw), not by a turn.
func AtPrompt(st pane.Status) bool {
	switch {
	case st.State == pane.Idle:
		return true
	case st.State != pane.Busy:
		return false
	}
	switch st.Cause {
	case pane.CauseOutput, pane.CauseInput, pane.CauseStarted, pane.CauseAdopted, pane.CauseQuiet:
		return st.Signals.InFlight == 0
	}
	return false
}

// resubmitTries is how many more Enters typed text gets at most.
const resubmitTries = 3

// Resubmit sends Enter again each agentReEnter while the agent has not
// taken the text up (takenUp: no prompt hook, model request or busy look
// since it was typed) and its composer still shows the end of text,
// resubmitTries times at most. It returns once the agent took it up, or
// when the composer no longer holds it (a dialog replaced it). A composer
// that does not show the text yet (a loaded machine draws late) is waited
// for.
func (a Agent) Resubmit(ctx context.Context, text string, typed time.Time) {
	if composerText(text) == "" {
		return
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for try, deadline := 0, time.Now().Add(agentReEnter); try < resubmitTries; {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, taken := signals.TakenUp(a.Hooks, a.Answers, a.Term.Status(), typed, cliagent.ReportsPrompts(a.Type)); taken {
			return
		}
		// Before the first Enter again the composer may not show the text
		// yet; after it, one that no longer does took it.
		if (try > 0 || !time.Now().Before(deadline)) && !inComposer(a.Term.Screen(), a.Type, text) {
			return
		}
		if time.Now().Before(deadline) {
			continue
		}
		try++
		a.Log.WithField("try", try).Info("Typed text still in the agent's composer; sending Enter again")
		if err := a.Term.SendText("", true); err != nil {
			a.Log.WithError(err).Warn("Could not send Enter again for typed text")
			return
		}
		deadline = time.Now().Add(agentReEnter)
	}
}

// inComposer reports whether the composer of an agent's screen shows the
// end of text (its last 16 characters, however wrapped).
func inComposer(screen, typ, text string) bool {
	_, holds := composerHolds(screen, typ, text)
	return holds
}

// composerHolds reports whether an agent's screen shows a composer, and
// whether that composer shows the end of text.
func composerHolds(screen, typ, text string) (shown, holds bool) {
	tail := typedTail(text)
	l := pane.NewLayout(screen, cliagent.Layout(typ))
	s, ok := l.Find(pane.PartComposer)
	if !ok {
		return false, false
	}
	return true, tail != "" && strings.Contains(composerText(strings.Join(l.Lines[s.From:s.To], "")), tail)
}

// typedTail is the end of typed text as a screen shows it (composerText),
// its last 16 runes: what is looked for of it, however it was wrapped.
func typedTail(text string) string {
	tail := []rune(composerText(text))
	return string(tail[max(len(tail)-16, 0):])
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
