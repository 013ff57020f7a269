package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
	"github.com/cicy-ai/cicy-agent/supervisor/shelltask"
)

// terminal is a terminal pane's running program: a PTY of ours
// (*pane.PTY) or a session of the private tmux server (*pane.TmuxPane).
type terminal interface {
	Status() pane.Status
	Screen() string
	SendText(text string, enter bool) error
	SendKeys(b []byte) error
	Resize(rows, cols uint16) error
	Stop(grace time.Duration, why string)
	Close()
}

// termKind is what the shell and CLI-agent adapters share: a program in a
// terminal.
type termKind struct {
	cfg  schema.Pane
	proc terminal
	// keeps: the program runs in a tmux session, which outlives the
	// supervisor (Detach leaves it running).
	keeps bool
	log   *logrus.Entry
}

func (p *termKind) Status() pane.Status { return p.proc.Status() }

func (p *termKind) Screen() (string, error) { return p.proc.Screen(), nil }

// Send types text (then Enter unless NoEnter) and keys; with Wait it
// returns the output that followed once the pane is idle again.
func (p *termKind) Send(ctx context.Context, req api.SendRequest) (*api.SendResult, error) {
	return p.send(ctx, req, nil)
}

// send is Send with typed, if set, called once the text and keys are in
// (with when the typing began).
func (p *termKind) send(ctx context.Context, req api.SendRequest, typed func(context.Context, api.SendRequest, time.Time)) (*api.SendResult, error) {
	sent := time.Now()
	if err := p.typeIn(req); err != nil {
		return nil, err
	}
	if typed != nil {
		typed(ctx, req, sent)
	}
	if !req.Wait {
		return nil, nil
	}
	return p.waitQuiet(ctx, req.Text, sent)
}

func (p *termKind) typeIn(req api.SendRequest) error {
	var keys []byte
	for _, k := range req.Keys {
		b, err := pane.KeyBytes(k)
		if err != nil {
			return api.Usagef("%v", err)
		}
		keys = append(keys, b...)
	}
	if req.Text != "" || !req.NoEnter {
		if err := p.proc.SendText(req.Text, !req.NoEnter); err != nil {
			return p.inputErr(err)
		}
	}
	if len(keys) > 0 {
		if err := p.proc.SendKeys(keys); err != nil {
			return p.inputErr(err)
		}
	}
	return nil
}

func (p *termKind) inputErr(err error) error {
	if errors.Is(err, pane.ErrExited) {
		return api.Failedf("pane %s has exited (%s); 'cicy-agent restart %s' starts it again", p.cfg.ID, p.proc.Status().Reason, p.cfg.ID)
	}
	return err
}

// waitQuiet is `send --wait` on a terminal pane: it returns the output
// that followed the typed text once the pane is idle again (its output
// quiet for the settle time), or when the program exits.
func (p *termKind) waitQuiet(ctx context.Context, text string, sent time.Time) (*api.SendResult, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st := p.proc.Status()
		if !st.Running() {
			return &api.SendResult{Status: cicy.TurnFailed, Answer: shelltask.OutputAfter(p.proc.Screen(), text), Error: "the program " + st.Reason}, nil
		}
		if st.State == pane.Idle && st.Since.After(sent) {
			return &api.SendResult{Status: cicy.TurnCompleted, Answer: shelltask.OutputAfter(p.proc.Screen(), text)}, nil
		}
		select {
		case <-ctx.Done():
			return nil, api.Failedf("timed out waiting for the output to settle; see 'cicy-agent screen %s'", p.cfg.ID)
		case <-tick.C:
		}
	}
}

func (p *termKind) Stop(grace time.Duration, why string) pane.Status {
	p.proc.Stop(grace, why)
	st := p.proc.Status()
	p.proc.Close()
	return st
}

func (p *termKind) Detach(grace time.Duration, why string) pane.Status {
	if !p.keeps {
		return p.Stop(grace, why)
	}
	st := p.proc.Status()
	p.proc.Close()
	return st
}

func (p *termKind) Describe(*api.PaneInfo) {}

// Notify types the notification's first line into the master.
func (p *termKind) Notify(t schema.Task) error {
	return p.proc.SendText(outbox.Notification(t, false), true)
}

// attachable is the pane's PTY for `cicy-agent attach`; a tmux pane is
// attached with tmux.
func (p *termKind) attachable() (*pane.PTY, bool) {
	t, ok := p.proc.(*pane.PTY)
	return t, ok
}

// StyledScreen is the terminal's screen with its colours; false when the
// program's backend cannot give them.
func (p *termKind) StyledScreen() ([]pane.StyledLine, bool) {
	s, ok := p.proc.(interface{ StyledScreen() []pane.StyledLine })
	if !ok {
		return nil, false
	}
	return s.StyledScreen(), true
}

// Preview follows the screen: a PTY says when it changed; a tmux pane is
// captured every screens.TmuxPoll.
func (p *termKind) Preview(ctx context.Context, lines int, emit func(api.ScreenResponse) error, gone func() bool) error {
	var changed <-chan struct{}
	var poll <-chan time.Time
	if w, ok := p.proc.(interface {
		Watch() (<-chan struct{}, func())
	}); ok {
		ch, stop := w.Watch()
		defer stop()
		changed = ch
	} else {
		tick := time.NewTicker(screens.TmuxPoll)
		defer tick.Stop()
		poll = tick.C
	}
	screen := func() api.ScreenResponse {
		return api.ScreenResponse{ID: p.cfg.ID, State: string(p.proc.Status().State), Screen: screens.LastLines(p.proc.Screen(), lines)}
	}
	return screens.Loop(ctx, screen, changed, poll, emit, gone)
}
