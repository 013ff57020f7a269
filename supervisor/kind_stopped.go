package supervisor

import (
	"context"
	"errors"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/comeback"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
)

// stopped is a pane with nothing running: never started by this
// supervisor, ended, killed, or failed to start. It keeps the last status.
type stopped struct {
	cfg schema.Pane
	st  pane.Status
	// noRoom: its restore failed for lack of space; it is tried again
	// when there is room (Supervisor.retryRestore).
	noRoom bool
	// gone: found gone at the start, it waits to come back by its
	// restart policy (package comeback).
	gone bool
	// back is the entry of a CLI agent found gone that comes back in its
	// recorded session: a task it was working on waits for it (nil
	// otherwise).
	back *entry
	// cannotBack is why it could not come back when the disk had no room
	// (nil otherwise): it is tried again when there is room
	// (Supervisor.bringBackAgain), and stays a full disk's error for the
	// watch that retries it.
	cannotBack error
}

func (p *stopped) Status() pane.Status { return p.st }

// notRunning is the error for input to a stopped pane.
func (p *stopped) notRunning() error {
	return api.Failedf("pane %s is not running (%s); 'cicy-agent restart %s' starts it again", p.cfg.ID, p.st.Reason, p.cfg.ID)
}

func (p *stopped) Screen() (string, error) {
	return "", api.Failedf("pane %s has no screen: it is not running (%s); 'cicy-agent restart %s' starts it again", p.cfg.ID, p.st.Reason, p.cfg.ID)
}

func (p *stopped) Send(context.Context, api.SendRequest) (*api.SendResult, error) {
	return nil, p.notRunning()
}

func (p *stopped) Stop(time.Duration, string) pane.Status   { return p.st }
func (p *stopped) Detach(time.Duration, string) pane.Status { return p.st }
func (p *stopped) Describe(*api.PaneInfo)                   {}

func (p *stopped) Explain(x *api.Explanation) {
	x.Rules.Note = "the pane is not running"
}

func (p *stopped) Preview(ctx context.Context, lines int, emit func(api.ScreenResponse) error, gone func() bool) error {
	screen := func() api.ScreenResponse { return api.ScreenResponse{ID: p.cfg.ID, State: string(p.st.State)} }
	return screens.Loop(ctx, screen, nil, nil, emit, gone)
}

// View: a pane coming back in its own session is waited for (its task is
// not given up), though it takes nothing yet.
func (p *stopped) View() outbox.View { return outbox.View{Running: p.back != nil, Reason: p.st.Reason} }

func (p *stopped) Deliver(schema.Task, func()) (outbox.Delivery, error) {
	return nil, errors.New("the worker is not running")
}

func (p *stopped) Notify(schema.Task) error { return p.notRunning() }

func (p *stopped) Recover(t schema.Task, wake func()) outbox.Recovery {
	if p.back != nil {
		return outbox.Recovery{Verdict: outbox.Resumed, Delivery: comeback.NewResumedTask(backWorker{p.back}, t, wake)}
	}
	return outbox.Recovery{Verdict: outbox.Lost}
}

func (p *stopped) Noticed(schema.Task) outbox.Notice { return outbox.NoticeUnknown }
