package screens

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
)

// TestTurnViewShowsTheTurn: a preview of a cicy pane shows the message
// its turn answers, then the reply and tools as they stream, then the
// turn's answer in their place (with its status when it did not
// complete); a new message starts over.
func TestTurnViewShowsTheTurn(t *testing.T) {
	t.Parallel()
	var v turnView
	for _, step := range []struct {
		ev   cicy.Event
		want string
	}{
		{cicy.Event{Kind: "user", Text: "hello"}, "› hello\n\n"},
		{cicy.Event{Kind: "text", Text: "thinking"}, "› hello\n\nthinking"},
		{cicy.Event{Kind: "tool", Name: "read", Result: "ok"}, "› hello\n\nthinking\n⚙ read → ok\n"},
		{cicy.Event{Kind: "turn_end", Status: cicy.TurnCompleted, Text: "done"}, "› hello\n\ndone"},
		{cicy.Event{Kind: "user", Text: "again"}, "› again\n\n"},
		{cicy.Event{Kind: "system", Text: "compacted"}, "› again\n\n\ncompacted\n"},
		{cicy.Event{Kind: "turn_end", Status: cicy.TurnFailed, Text: "no key"}, "› again\n\n(" + cicy.TurnFailed + ") no key"},
	} {
		v.apply(step.ev)
		if got := v.String(); got != step.want {
			t.Fatalf("after %+v the view is %q, want %q", step.ev, got, step.want)
		}
	}
}

// TestLastLines: n > 0 keeps the last n lines, else all of them.
func TestLastLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"a\nb\nc", 0, "a\nb\nc"},
	} {
		if got := LastLines(tc.s, tc.n); got != tc.want {
			t.Errorf("LastLines(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// TestReplyText: a cicy pane's screen is its answer; while a turn works
// without one, its progress.
func TestReplyText(t *testing.T) {
	t.Parallel()
	if got := ReplyText(cicy.Reply{Answer: "hi", Status: cicy.TurnCompleted}); got != "hi" {
		t.Errorf("a finished turn shows %q", got)
	}
	got := ReplyText(cicy.Reply{Status: cicy.TurnWorking, TurnID: "t-7", ToolCalls: make([]cicy.ToolCall, 2)})
	if !strings.HasPrefix(got, "… working (turn t-7, 2") {
		t.Errorf("a working turn shows %q", got)
	}
}

// TestScrubStyled: a line the scrubbing left alone keeps its runs and
// colours; a line it changed is one plain run of its scrubbed text; when
// it changed the number of lines, every line is plain.
func TestScrubStyled(t *testing.T) {
	t.Parallel()
	red := pane.Color{Kind: pane.ColorPalette, Index: 1}
	styled := []pane.StyledLine{
		{{Text: "ok ", FG: red}, {Text: "line", Bold: true}},
		{{Text: "sk-se", FG: red}, {Text: "cret"}},
	}
	text := "ok line\nsk-secret"
	got := scrubStyled(styled, text, "ok line\n[redacted]")
	if len(got) != 2 || len(got[0]) != 2 || got[0][0].FG != "1" || !got[0][1].Bold {
		t.Fatalf("the untouched line lost its styles: %+v", got)
	}
	if len(got[1]) != 1 || got[1][0] != (api.StyledRun{Text: "[redacted]"}) {
		t.Fatalf("the scrubbed line is %+v, want one plain run", got[1])
	}
	got = scrubStyled(styled, text, "ok line\n[redacted]\n")
	if len(got) != 3 || len(got[0]) != 1 || got[0][0] != (api.StyledRun{Text: "ok line"}) || len(got[2]) != 0 {
		t.Fatalf("with the lines' number changed: %+v, want every line plain", got)
	}
}

// TestSignalOf: the signal behind a terminal pane's state is named from
// its cause.
func TestSignalOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		st         pane.Status
		kind, name string
	}{
		{pane.Status{State: pane.Exited}, "process", ""},
		{pane.Status{State: pane.Busy, Cause: pane.CauseHook, Reason: "hook:Stop"}, "hook", "Stop"},
		{pane.Status{State: pane.Busy, Cause: pane.CauseGateway, Reason: "gateway:request"}, "gateway", "request"},
		{pane.Status{State: pane.Idle, Cause: pane.CauseScreen, Rule: "idle-prompt"}, "screen_rule", "idle-prompt"},
		{pane.Status{State: pane.Busy, Cause: pane.CauseOutput}, "output", ""},
		{pane.Status{State: pane.Idle, Cause: pane.CauseQuiet}, "quiet", ""},
		{pane.Status{State: pane.Busy, Cause: pane.CauseInput}, "input", ""},
		{pane.Status{State: pane.Idle, Cause: pane.CauseStarted}, "start", ""},
	} {
		sig := signalOf(tc.st, "claude", time.Second)
		if sig.Kind != tc.kind || sig.Name != tc.name {
			t.Errorf("signalOf(%+v) = %s %q, want %s %q", tc.st, sig.Kind, sig.Name, tc.kind, tc.name)
		}
	}
}

// TestViewEndsWithItsPanes: a recorded view is ended when asked for
// panes it all tiles (or for none), and kept when it tiles another pane;
// a file this version did not write is removed; no file is no error.
func TestViewEndsWithItsPanes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "view.json")
	if err := EndView(file); err != nil {
		t.Fatalf("no view: %v", err)
	}
	// No tmux server listens on this socket: ending its session is tried
	// and its failure is the person's closing the view already.
	v := View{Socket: filepath.Join(t.TempDir(), "none.sock"), Session: "view", Panes: []string{"w-1", "w-2"}}
	if err := SaveView(file, v); err != nil {
		t.Fatal(err)
	}
	if err := EndView(file, "w-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("a view that tiles w-2 too was ended with w-1: %v", err)
	}
	if err := EndView(file, "w-1", "w-2", "w-3"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the view of w-1 and w-2 is still recorded: %v", err)
	}
	if err := os.WriteFile(file, []byte(`{"old":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EndView(file, "w-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a view file this version did not write is kept: %v", err)
	}
}

// kindOf is a Kind for the room's tests: its preview emits its name
// once and ends, as a stopped program's does.
type kindOf struct{ name string }

func (k *kindOf) Screen() (string, error)    { return k.name, nil }
func (k *kindOf) Status() pane.Status        { return pane.Status{State: pane.Idle} }
func (k *kindOf) Explain(x *api.Explanation) { x.Rules.Note = "explained by " + k.name }
func (k *kindOf) Preview(_ context.Context, _ int, emit func(api.ScreenResponse) error, _ func() bool) error {
	return emit(api.ScreenResponse{ID: "w-1", Screen: k.name})
}

// onePane is a Core of one pane, w-1, whose kind a test replaces.
type onePane struct {
	mu    sync.Mutex
	kind  Kind
	gone  bool
	woken bool
}

func (c *onePane) Pane(id string) (Pane, error) {
	if id != "w-1" {
		return nil, api.PaneNotFound(id)
	}
	return paneOf{c}, nil
}
func (c *onePane) Answers(context.Context, string, int64) []api.Answer {
	return []api.Answer{{Action: "yes"}}
}
func (c *onePane) Settle() time.Duration { return time.Second }
func (c *onePane) Scrub(text string) string {
	return strings.ReplaceAll(text, "secret", "[redacted]")
}

type paneOf struct{ c *onePane }

func (p paneOf) ID() string   { return "w-1" }
func (p paneOf) Type() string { return "shell" }
func (p paneOf) Kind() Kind {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.c.kind
}
func (p paneOf) Gone() bool {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.c.gone
}
func (p paneOf) Wake()              { p.c.woken = true }
func (p paneOf) Info() api.PaneInfo { return api.PaneInfo{ID: "w-1"} }

// TestPreviewFollowsARestart: when what runs the pane ends, the preview
// waits for its replacement and follows it; it ends when the pane goes.
func TestPreviewFollowsARestart(t *testing.T) {
	t.Parallel()
	c := &onePane{kind: &kindOf{name: "first"}}
	var seen []string
	err := New(c).Preview(context.Background(), "w-1", 0, func(sc api.ScreenResponse) error {
		seen = append(seen, sc.Screen)
		c.mu.Lock()
		defer c.mu.Unlock()
		if sc.Screen == "first" {
			c.kind = &kindOf{name: "second"} // restarted
		} else {
			c.gone = true // killed
		}
		return nil
	})
	if err != nil || strings.Join(seen, ",") != "first,second" {
		t.Fatalf("the preview saw %v (%v), want first then second", seen, err)
	}
	if err := New(c).Preview(context.Background(), "w-9", 0, nil); err == nil {
		t.Fatal("a preview of no pane is no error")
	}
}

// TestScreenScrubbedWholeThenCut: the screen is scrubbed before its last
// lines are cut, and answered in the pane's state.
func TestScreenScrubbedWholeThenCut(t *testing.T) {
	t.Parallel()
	c := &onePane{kind: &kindOf{name: "a\nsecret\nb"}}
	sc, err := New(c).Screen("w-1", 2)
	if err != nil || sc.Screen != "[redacted]\nb" || sc.State != string(pane.Idle) || sc.ID != "w-1" {
		t.Fatalf("screen %+v (%v)", sc, err)
	}
	sc, err = New(c).StyledScreen("w-1", 2)
	if err != nil || len(sc.Styled) != 2 || sc.Styled[0][0].Text != "[redacted]" {
		t.Fatalf("styled screen %+v (%v)", sc, err)
	}
}

// TestExplainAssembly: the explanation is the pane woken, its scrubbed
// screen, the signal of its state, its kind's account and its answers.
func TestExplainAssembly(t *testing.T) {
	t.Parallel()
	c := &onePane{kind: &kindOf{name: "a secret"}}
	x, err := New(c).Explain("w-1")
	if err != nil {
		t.Fatal(err)
	}
	if !c.woken || x.Pane.ID != "w-1" || x.Screen != "a [redacted]" || x.Rules.Note != "explained by a secret" || len(x.Answers) != 1 {
		t.Fatalf("explanation %+v (woken %v)", x, c.woken)
	}
}
