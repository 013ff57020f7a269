package comeback

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// worker is a pane as a resumed task sees it, set by the test.
type worker struct{ now Now }

func (w *worker) Now() Now { return w.now }

// runner is a running pane that records what it was told.
type runner struct {
	view outbox.View
	told []string
	err  error
}

func (r *runner) View() outbox.View { return r.view }

func (r *runner) Deliver(t schema.Task, _ func()) (outbox.Delivery, error) {
	if r.err != nil {
		return nil, r.err
	}
	r.told = append(r.told, t.Text)
	return told{}, nil
}

// told is a delivery that ended done.
type told struct{}

func (told) Check(time.Time) outbox.Progress { return outbox.Progress{Ended: true, Result: "done"} }
func (told) Abandon()                        {}

// TestResumedTask: a task waits while its worker is still gone and while
// it is busy; it is told the restart line once back in its session and
// idle, and ends as that turn ends; otherwise it fails, saying why.
func TestResumedTask(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	busy := &runner{view: outbox.View{Running: true}}
	idle := &runner{view: outbox.View{Running: true, Idle: true}}
	for _, tc := range []struct {
		name string
		now  Now
		want string // "" waits; "done" ends done; else the failure holds it
	}{
		{"still gone", Now{Stopped: true, Gone: true}, ""},
		{"did not come back", Now{Stopped: true, Reason: "its workspace is gone"}, "the worker did not come back (its workspace is gone)"},
		{"a new conversation", Now{Back: ByPolicy, Pane: idle}, "the worker came back in a new conversation, which does not know the task (" + ByPolicy + ")"},
		{"ended", Now{Back: Resumed("s"), Pane: &runner{view: outbox.View{Reason: "exit 1"}}}, "the worker's process ended (exit 1)"},
		{"busy", Now{Back: Resumed("s"), Pane: busy}, ""},
		{"refused", Now{Back: Resumed("s"), Pane: &runner{view: idle.view, err: errors.New("no")}}, "could not tell the worker: no"},
		{"told", Now{Back: Resumed("s"), Pane: idle}, "done"},
	} {
		d := NewResumedTask(&worker{now: tc.now}, schema.Task{ID: 1, Text: "the task"}, func() {})
		p := d.Check(now)
		switch {
		case tc.want == "" && (p.Ended || !p.Next.Equal(now.Add(Look))):
			t.Errorf("%s: %+v, want a look again", tc.name, p)
		case tc.want == "done" && (!p.Ended || p.Failed):
			t.Errorf("%s: %+v, want done", tc.name, p)
		case tc.want != "" && tc.want != "done" && (!p.Failed || !strings.Contains(p.Error, "interrupted by a restart: "+tc.want)):
			t.Errorf("%s: %+v, want failed with %q", tc.name, p, tc.want)
		}
	}
	if len(idle.told) != 1 || idle.told[0] != RestartLine || len(busy.told) != 0 {
		t.Fatalf("told %q, busy told %q", idle.told, busy.told)
	}
}
