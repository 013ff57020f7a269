package supervisor

import (
	"context"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
)

// A pane's preview (GET /api/panes/{id}/preview): its screen now, then
// again each time it changes, for as long as someone looks. A PTY pane
// pushes its output; a cicy pane its turn's events (the reply streams in
// as it is written); a tmux pane is captured while it is previewed.

// previewBatch is the shortest time between two previews of one stream.
const previewBatch = 100 * time.Millisecond

// tmuxPreviewPoll is how often a previewed tmux pane is captured.
const tmuxPreviewPoll = 500 * time.Millisecond

// Preview calls emit with the pane's screen (the last lines if lines > 0)
// and then each time it changes, until ctx ends, the pane goes, or emit
// fails.
func (s *Supervisor) Preview(ctx context.Context, id string, lines int, emit func(ScreenResponse) error) error {
	e, err := s.get(id)
	if err != nil {
		return err
	}
	e.op.Lock()
	p, a := e.proc, e.agent
	e.op.Unlock()
	if a != nil {
		return s.previewAgent(ctx, e.cfg.ID, a, lines, emit)
	}
	var changed <-chan struct{}
	var poll <-chan time.Time
	switch t := p.(type) {
	case *pane.PTY:
		ch, stop := t.Watch()
		defer stop()
		changed = ch
	case *pane.TmuxPane:
		tick := time.NewTicker(tmuxPreviewPoll)
		defer tick.Stop()
		poll = tick.C
	}
	var last ScreenResponse
	send := func() error {
		sc, err := s.Screen(e.cfg.ID, lines)
		if err != nil {
			sc = ScreenResponse{ID: e.cfg.ID, State: string(e.status().State), Screen: ""}
		}
		if sc == last {
			return nil
		}
		last = sc
		return emit(sc)
	}
	if err := send(); err != nil {
		return err
	}
	stateTick := time.NewTicker(time.Second) // the state line, and a pane that is gone
	defer stateTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-changed: // let the output burst finish: one preview per batch
			if !ok {
				changed = nil // the output ended; the state tick still looks
				continue
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(previewBatch):
			}
		case <-poll:
		case <-stateTick.C:
			if _, err := s.get(e.cfg.ID); err != nil {
				return nil
			}
		}
		if err := send(); err != nil {
			return err
		}
	}
}

// previewAgent follows a cicy pane's turn: the message it answers, the
// reply as it streams, the tools it calls.
func (s *Supervisor) previewAgent(ctx context.Context, id string, a *cicy.Agent, lines int, emit func(ScreenResponse) error) error {
	ch, stop := a.Subscribe()
	defer stop()
	var view turnView
	view.answer = replyText(a.Reply())
	dirty := true
	flush := func() error {
		dirty = false
		return emit(ScreenResponse{ID: id, State: string(a.Status().State), Screen: lastLines(view.String(), lines)})
	}
	var timer <-chan time.Time
	for {
		if dirty && timer == nil {
			timer = time.After(previewBatch)
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				return nil // the pane stopped, or this viewer fell behind
			}
			view.apply(ev)
			dirty = true
		case <-timer:
			timer = nil
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// turnView is a cicy pane's current turn as a preview shows it.
type turnView struct {
	prompt string
	body   strings.Builder
	answer string // a finished turn's answer (replaces body)
}

func (v *turnView) apply(ev cicy.Event) {
	switch ev.Kind {
	case "user":
		v.prompt, v.answer = ev.Text, ""
		v.body.Reset()
	case "text":
		v.body.WriteString(ev.Text)
	case "tool":
		v.body.WriteString("\n⚙ " + ev.Name + " → " + ev.Result + "\n")
	case "turn_end":
		v.answer = ev.Text
		if ev.Status != cicy.TurnCompleted {
			v.answer = "(" + ev.Status + ") " + ev.Text
		}
	case "system":
		v.body.WriteString("\n" + ev.Text + "\n")
	}
}

func (v *turnView) String() string {
	var b strings.Builder
	if v.prompt != "" {
		b.WriteString("› " + v.prompt + "\n\n")
	}
	if v.answer != "" {
		b.WriteString(v.answer)
	} else {
		b.WriteString(v.body.String())
	}
	return b.String()
}
