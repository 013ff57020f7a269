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

// Deliver sends the task as a message; the turn that handles it settles it.
func (p *cicyKind) Deliver(t schema.Task, wake func()) (outbox.Delivery, error) {
	ch, err := p.a.Send(outbox.Message(t), t.From, true)
	if err != nil {
		return nil, outbox.Retry(err)
	}
	d := &cicyDelivery{k: p, quit: make(chan struct{})}
	go d.await(ch, wake)
	return d, nil
}

// Notify queues the full notification as a message.
func (p *cicyKind) Notify(t schema.Task) error {
	_, err := p.a.Send(outbox.Notification(t, true), "", false)
	return err
}

// Recover follows a task the worker is still on (its turn, cut short by
// the restart, goes on; or its message waits in the queue), else reads
// the worker's history: a task it answered is finished; one whose turn
// was closed as interrupted, or never started, may run again.
func (p *cicyKind) Recover(t schema.Task, wake func()) outbox.Recovery {
	if ch, ok := p.a.Await(outbox.Message(t)); ok {
		d := &cicyDelivery{k: p, quit: make(chan struct{})}
		go d.await(ch, wake)
		return outbox.Recovery{Verdict: outbox.Resumed, Delivery: d}
	}
	outcome, answer := p.a.MessageOutcome(outbox.Message(t))
	if outcome == cicy.OutcomeDone {
		return outbox.Recovery{Verdict: outbox.Finished, Result: answer}
	}
	return outbox.Recovery{Verdict: outbox.Interrupted}
}

// Noticed reads the master's history for the notification of t: one sent
// after the history was last written and not in it was lost with the
// previous supervisor (one sent before that and absent was folded by
// /compact or dropped by /clear: not lost).
func (p *cicyKind) Noticed(t schema.Task) outbox.Notice {
	if t.NotifiedAt.Valid && schema.ParseTime(t.NotifiedAt.String).Before(p.a.RestoredFrom()) {
		return outbox.NoticeUnknown
	}
	if p.a.Mentions(outbox.Notification(t, false)) {
		return outbox.NoticeSeen
	}
	if t.NotifiedAt.Valid {
		return outbox.NoticeLost
	}
	return outbox.NoticeUnknown
}

// cicyDelivery is a task sent to a cicy worker as a message.
type cicyDelivery struct {
	k    *cicyKind
	got  atomic.Pointer[cicy.TurnResult] // the turn's result, once it came
	quit chan struct{}                   // closed by Abandon
}

// await keeps the turn's result and wakes the outbox; it ends with the
// result, the loop's stop, or Abandon.
func (d *cicyDelivery) await(ch <-chan cicy.TurnResult, wake func()) {
	select {
	case r := <-ch:
		d.got.Store(&r)
	case <-d.k.a.Done():
	case <-d.quit:
		return
	}
	wake()
}

func (d *cicyDelivery) Check(time.Time) outbox.Progress {
	r := d.got.Load()
	if r == nil {
		select {
		case <-d.k.a.Done():
			return d.stopped()
		default:
			return outbox.Progress{}
		}
	}
	switch r.Status {
	case cicy.TurnCompleted:
		return outbox.Progress{Ended: true, Result: r.Answer, How: "the worker's turn ended with an answer", Source: schema.SourceTurn}
	case cicy.TurnCancelled:
		return outbox.Progress{Ended: true, Failed: true, Error: "the worker's turn was cancelled", How: "turn cancelled", Source: schema.SourceTurn}
	default:
		return outbox.Progress{Ended: true, Failed: true, Error: r.Error, How: "the worker's turn failed", Source: schema.SourceTurn}
	}
}

// stopped is the word on a task whose worker's loop stopped before its
// turn ended (a killed worker is gone to the outbox, which fails its task
// as killed whatever this says).
func (d *cicyDelivery) stopped() outbox.Progress {
	why := "stopped"
	if w := d.k.stopWhy.Load(); w != nil {
		why = *w
	}
	return outbox.Progress{Ended: true, Failed: true, Error: "the worker's turn loop was " + why + " before its turn ended", How: "worker exited"}
}

// Abandon cancels the running turn when the task's own turn has not ended
// (the task was cancelled, or its worker killed; a stopped loop has no
// turn to cancel).
func (d *cicyDelivery) Abandon() {
	select {
	case <-d.quit:
		return
	default:
		close(d.quit)
	}
	if d.got.Load() == nil {
		d.k.a.Cancel()
	}
}
