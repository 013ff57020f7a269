package screens

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/supervisor/signals"
)

// A pane's preview (GET /api/panes/{id}/preview): its screen now, then
// again each time it changes, for as long as someone looks. A PTY pane
// pushes its output; a cicy pane its turn's events (the reply streams in
// as it is written); a tmux pane is captured while it is previewed.

// Batch is the shortest time between two previews of one stream.
const Batch = 100 * time.Millisecond

// TmuxPoll is how often a previewed tmux pane is captured.
const TmuxPoll = 500 * time.Millisecond

// Preview calls emit with the pane's screen (the last lines if lines > 0)
// and then each time it changes, until ctx ends, the pane goes, or emit
// fails.
func (r *Room) Preview(ctx context.Context, id string, lines int, emit func(api.ScreenResponse) error) error {
	p, err := r.core.Pane(id)
	if err != nil {
		return err
	}
	// A restart replaces what runs the pane: the preview follows the new one.
	for ctx.Err() == nil {
		k := p.Kind()
		replaced := func() bool {
			return p.Gone() || p.Kind() != k
		}
		if err := k.Preview(ctx, lines, emit, replaced); err != nil {
			return err
		}
		if p.Gone() {
			return nil // the pane is gone
		}
		if p.Kind() == k { // it stopped and is not replaced yet
			select {
			case <-ctx.Done():
			case <-time.After(Batch):
			}
		}
	}
	return nil
}

// Loop emits the screen when it differs from the last one emitted: at
// once, after each change (a burst of output gives one preview), at each
// poll, and every second for the state line — until ctx ends or the pane
// is gone.
func Loop(ctx context.Context, screen func() api.ScreenResponse, changed <-chan struct{}, poll <-chan time.Time, emit func(api.ScreenResponse) error, gone func() bool) error {
	var last api.ScreenResponse
	send := func() error {
		sc := screen()
		if sc.ID == last.ID && sc.State == last.State && sc.Screen == last.Screen && sc.Dialog == last.Dialog {
			return nil
		}
		last = sc
		return emit(sc)
	}
	if err := send(); err != nil {
		return err
	}
	stateTick := time.NewTicker(time.Second)
	defer stateTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-changed:
			if !ok {
				changed = nil // the output ended; the state tick still looks
				continue
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(Batch):
			}
		case <-poll:
		case <-stateTick.C:
			if gone() {
				return nil
			}
		}
		if err := send(); err != nil {
			return err
		}
	}
}

// FollowTurn is a cicy pane's preview: the message its turn answers, the
// reply as it streams, the tools it calls.
func FollowTurn(ctx context.Context, id string, a *cicy.Agent, lines int, emit func(api.ScreenResponse) error) error {
	ch, stop := a.Subscribe()
	defer stop()
	var view turnView
	view.answer = ReplyText(a.Reply())
	dirty := true
	flush := func() error {
		dirty = false
		return emit(api.ScreenResponse{ID: id, State: string(a.Status().State), Screen: LastLines(view.String(), lines)})
	}
	var timer <-chan time.Time
	for {
		if dirty && timer == nil {
			timer = time.After(Batch)
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

// ReplyText is what `screen` shows of a cicy pane: the latest answer, or
// while a turn works with no answer yet, its progress.
func ReplyText(r cicy.Reply) string {
	if r.Answer != "" || r.Status != cicy.TurnWorking {
		return r.Answer
	}
	return fmt.Sprintf("… working (turn %s, %s so far)", r.TurnID, signals.ToolCalls(len(r.ToolCalls)))
}

// LastLines is s's last n lines (all of s when n <= 0).
func LastLines(s string, n int) string {
	if n <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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
