package agentpane

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/signals"
)

// screenTerm is a terminal showing a fixed screen that records what is
// typed into it.
type screenTerm struct {
	screen string
	typed  []string
}

func (t *screenTerm) Status() pane.Status { return pane.Status{State: pane.Idle} }
func (t *screenTerm) Screen() string      { return t.screen }
func (t *screenTerm) SendText(text string, _ bool) error {
	t.typed = append(t.typed, text)
	return nil
}

// TestTypedTaskLostIsTypedAgain: a task typed into an agent that was not
// reading its input (Gemini CLI drawing a resumed conversation) shows
// nowhere on its screen; once agentRetype went by with no sign of it
// being taken up, it is typed once more, and only once. One the screen
// shows (in the transcript: taken, its answer pending) is not.
func TestTypedTaskLostIsTypedAgain(t *testing.T) {
	b, err := os.ReadFile("../../cmd/cicy-agent/testdata/screens/gemini/idle/answered-120x40.txt")
	if err != nil {
		t.Fatal(err)
	}
	idle := string(b)
	task := "task 2: now say second-walrus [[reply=second turn]]"
	log := logrus.New()
	log.SetOutput(io.Discard)
	for _, tc := range []struct {
		name   string
		screen string
		want   int
	}{
		{"shown nowhere", idle, 1},
		{"shown in the transcript", strings.Replace(idle, "\n", "\n > "+task+"\n", 2), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term := &screenTerm{screen: tc.screen}
			at := time.Now()
			a := Agent{Term: term, Type: "gemini", Hooks: &signals.Hooks{}, Answers: &signals.Answers{}, Requests: &signals.Requests{},
				Log: logrus.NewEntry(log)}
			d := a.Track(at, task, false)
			for s := time.Duration(0); s <= 2*agentRetype; s += agentReEnter {
				d.reEnter(at.Add(s))
			}
			if len(term.typed) != tc.want {
				t.Fatalf("typed again %d times (%q), want %d", len(term.typed), term.typed, tc.want)
			}
			if tc.want > 0 && term.typed[0] != task {
				t.Errorf("typed again %q, want the task", term.typed[0])
			}
		})
	}
}
