package supervisor

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cicypanes"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
)

// cicyKind is a cicy pane: a headless turn loop in this process. Input is
// a user message; its screen is its latest reply; a task is a message
// whose turn's answer is the result.
type cicyKind struct {
	cfg schema.Pane
	a   *cicy.Agent
	log *logrus.Entry
	// stopWhy is why Stop ended the loop, for the task it carried.
	stopWhy atomic.Pointer[string]
}

func (p *cicyKind) agent() *cicy.Agent { return p.a }

// Status is the turn loop's, in the words of pane states.
func (p *cicyKind) Status() pane.Status { return paneStatus(p.a.Status()) }

func paneStatus(st cicy.Status) pane.Status {
	return pane.Status{State: pane.State(st.State), Reason: st.Reason, Since: st.Since}
}

func (p *cicyKind) Screen() (string, error) { return screens.ReplyText(p.a.Reply()), nil }

// Preview follows the turn: the message it answers, the reply as it
// streams, the tools it calls (screens.FollowTurn).
func (p *cicyKind) Preview(ctx context.Context, lines int, emit func(api.ScreenResponse) error, _ func() bool) error {
	return screens.FollowTurn(ctx, p.cfg.ID, p.a, lines, emit)
}

// Send queues a user message; with Wait it returns the result of the
// turn that handles it.
func (p *cicyKind) Send(ctx context.Context, req api.SendRequest) (*api.SendResult, error) {
	if len(req.Keys) > 0 {
		return nil, api.Usagef("--key sends keys to terminal panes; %s is a cicy pane", p.cfg.ID)
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, api.Usagef("nothing to send")
	}
	return cicypanes.Send(ctx, p.a, req.Text, req.Wait)
}

func (p *cicyKind) Stop(_ time.Duration, why string) pane.Status {
	p.stopWhy.Store(&why)
	p.a.Close()
	return pane.Status{State: pane.Exited, Reason: why, Since: time.Now()}
}

// Detach stops the loop for the supervisor's shutdown: a cicy pane comes
// back with the next supervisor, its conversation restored from disk and
// a running turn taken up where it stopped (its tool calls not run
// again, its task not sent again).
func (p *cicyKind) Detach(grace time.Duration, why string) pane.Status {
	p.stopWhy.Store(&why)
	p.a.Suspend(grace)
	return pane.Status{State: pane.Exited, Reason: why, Since: time.Now()}
}

func (p *cicyKind) Describe(pi *api.PaneInfo) {
	pi.Messages = p.a.MessageCount()
	pi.Compactable = pi.Messages > cicy.CompactThreshold
	pi.ProviderError = p.a.ProviderProblem()
}

func (p *cicyKind) Explain(x *api.Explanation) {
	x.Rules.Note = "cicy panes have no screen: their state is their turn's"
	switch p.a.Status().Cause {
	case cicy.CauseTurn:
		x.Signal.Kind = "turn"
	case cicy.CauseCommand, cicy.CauseRestored:
		x.Signal.Kind = "command"
	}
	r := p.a.Reply()
	x.Turn = &api.TurnSeen{ID: r.TurnID, Status: r.Status, StartedAt: r.StartedAt, UpdatedAt: r.UpdatedAt,
		ToolCalls: len(r.ToolCalls), Messages: p.a.MessageCount()}
}

func (p *cicyKind) View() outbox.View {
	st := p.a.Status()
	running := st.State != cicy.Closed
	// A message waits in the loop's queue: a master takes a notification
	// whatever its turn is doing.
	return outbox.View{Running: running, Idle: st.State == cicy.Idle, Receptive: running, Reason: st.Reason,
		Handoff: "sent to the idle worker as a message"}
}

// The outbox's side of a cicy worker is cicypanes.Worker's.
func (p *cicyKind) worker() cicypanes.Worker {
	return cicypanes.Worker{Agent: p.a, StopWhy: func() string {
		if w := p.stopWhy.Load(); w != nil {
			return *w
		}
		return ""
	}}
}

func (p *cicyKind) Deliver(t schema.Task, wake func()) (outbox.Delivery, error) {
	return p.worker().Deliver(t, wake)
}
func (p *cicyKind) Notify(t schema.Task) error { return p.worker().Notify(t) }
func (p *cicyKind) Recover(t schema.Task, wake func()) outbox.Recovery {
	return p.worker().Recover(t, wake)
}
func (p *cicyKind) Noticed(t schema.Task) outbox.Notice { return p.worker().Noticed(t) }
