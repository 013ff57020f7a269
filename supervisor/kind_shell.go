package supervisor

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/shelltask"
)

// shellKind is a shell command in a terminal: busy while its output
// flows, idle once it is quiet for the settle time. A task is typed into
// it. When its program is a POSIX shell (wrap), the task runs through a
// script of ours and ends when the shell says so, with its exit status
// and whole output (package shelltask); otherwise it is done once the output
// after it has been quiet for the settle time.
type shellKind struct {
	termKind
	settle time.Duration
	wrap   bool
	why    string              // why it does not wrap its tasks (shelltask.Wraps)
	tasks  string              // the folder of its tasks' files
	scrub  func(string) string // credentials out of a task's output
	gone   chan struct{}       // closed when the program is let go of
	once   sync.Once
	// lastEnd is when its last wrapped task was seen ending (unix ns; 0:
	// none): the shell is back at its prompt.
	lastEnd atomic.Int64
}

func (p *shellKind) View() outbox.View {
	st := p.proc.Status()
	return outbox.View{Running: st.Running(), Idle: st.State == pane.Idle || p.backAtPrompt(st), Receptive: st.Running(), Reason: st.Reason,
		Handoff: "typed into the idle worker"}
}

// backAtPrompt reports whether the shell's last wrapped task ended during
// its current busy spell (the task's output, the prompt after it): the
// shell takes the next task without waiting for its output to settle.
func (p *shellKind) backAtPrompt(st pane.Status) bool {
	end := p.lastEnd.Load()
	return p.wrap && st.Running() && end != 0 && time.Unix(0, end).After(st.Since)
}

func (p *shellKind) Explain(x *api.Explanation) {
	x.Rules.Note = fmt.Sprintf("shell panes have no screen rules: busy while output flows, idle once it is quiet for %s", p.settle)
	if p.wrap {
		x.Rules.Note += "; a task ends when the shell reports its exit status"
	} else {
		x.Rules.Note += "; a task ends when its output is quiet, because " + p.why
	}
}

// Stop and Detach let go of the program; a task's watcher stops with it.
func (p *shellKind) Stop(grace time.Duration, why string) pane.Status {
	p.once.Do(func() { close(p.gone) })
	return p.termKind.Stop(grace, why)
}

func (p *shellKind) Detach(grace time.Duration, why string) pane.Status {
	p.once.Do(func() { close(p.gone) })
	return p.termKind.Detach(grace, why)
}

// Deliver types the task (bracketed paste when the program asked for it,
// then Enter): for a POSIX shell the line that runs it through its
// script, watched until the shell reports its end; else its text, which
// the delivery checks shows on the screen.
func (p *shellKind) Deliver(t schema.Task, wake func()) (outbox.Delivery, error) {
	if p.wrap {
		run := shelltask.Run{Dir: p.tasks, ID: t.ID}
		line, err := run.Prepare(t.Text)
		if err != nil {
			return nil, err
		}
		at := time.Now()
		// Ctrl-U first: whatever sits on the shell's input line (answers a
		// terminal gave to escape sequences in an earlier task's output)
		// must not run with the task.
		if err := p.proc.SendKeys([]byte{0x15}); err != nil {
			return nil, fmt.Errorf("could not type into the worker: %w", err)
		}
		if err := p.proc.SendText(line, true); err != nil {
			return nil, fmt.Errorf("could not type into the worker: %w", err)
		}
		return p.watch(run, at, wake), nil
	}
	if err := p.proc.SendText(t.Text, true); err != nil {
		return nil, fmt.Errorf("could not type into the worker: %w", err)
	}
	return shelltask.Typed(p.proc, time.Now(), t.Text, false), nil
}

// Recover goes on tracking a task whose tmux session outlived the
// supervisor; a program that ended took the task with it, unless its
// shell reported the end first.
func (p *shellKind) Recover(t schema.Task, wake func()) outbox.Recovery {
	at := schema.ParseTime(t.DeliveredAt.String)
	if p.wrap {
		run := shelltask.Run{Dir: p.tasks, ID: t.ID}
		if !p.proc.Status().Running() && !run.Look().Ended {
			return outbox.Recovery{Verdict: outbox.Lost}
		}
		return outbox.Recovery{Verdict: outbox.Resumed, Delivery: p.watch(run, at, wake)}
	}
	if !p.proc.Status().Running() {
		return outbox.Recovery{Verdict: outbox.Lost}
	}
	return outbox.Recovery{Verdict: outbox.Resumed,
		Delivery: shelltask.Typed(p.proc, at, t.Text, true)}
}

// watch is the delivery of a run, its files watched until they say it
// ended.
func (p *shellKind) watch(run shelltask.Run, at time.Time, wake func()) *shelltask.Delivery {
	return shelltask.Watch(run, p.proc, at, p.scrub, p.gone, func() { p.lastEnd.Store(time.Now().UnixNano()) }, wake)
}

func (p *shellKind) Noticed(schema.Task) outbox.Notice { return outbox.NoticeUnknown }
