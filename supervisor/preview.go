package supervisor

import (
	"context"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
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
func (s *Supervisor) Preview(ctx context.Context, id string, lines int, emit func(api.ScreenResponse) error) error {
	e, err := s.get(id)
	if err != nil {
		return err
	}
	// A restart replaces what runs the pane: the preview follows the new one.
	for ctx.Err() == nil {
		k := e.kind()
		replaced := func() bool {
			_, err := s.get(e.cfg.ID)
			return err != nil || e.kind() != k
		}
		if err := k.Preview(ctx, lines, emit, replaced); err != nil {
			return err
		}
		if _, err := s.get(e.cfg.ID); err != nil {
			return nil // the pane is gone
		}
		if e.kind() == k { // it stopped and is not replaced yet
			select {
			case <-ctx.Done():
			case <-time.After(previewBatch):
			}
		}
	}
	return nil
}

// previewAgent follows a cicy pane's turn: the message it answers, the
// reply as it streams, the tools it calls.
func (p *cicyKind) Preview(ctx context.Context, lines int, emit func(api.ScreenResponse) error, _ func() bool) error {
	id, a := p.cfg.ID, p.a
	ch, stop := a.Subscribe()
	defer stop()
	var view turnView
	view.answer = replyText(a.Reply())
	dirty := true
	flush := func() error {
		dirty = false
		return emit(api.ScreenResponse{ID: id, State: string(a.Status().State), Screen: lastLines(view.String(), lines)})
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
