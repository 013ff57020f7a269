package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// standInComposer opens a stand-in Claude Code's script: prompt TEXT draws
// its composer holding TEXT, between two rules, over its idle footer.
const standInComposer = "#!/bin/sh\nR=────────────────────────────────────────\n" +
	"prompt() { printf '\\n%s\\n❯ %s\\n\\n%s\\n  ? for shortcuts ' \"$R\" \"$1\" \"$R\"; }\n"

// swallowingClaude turns the first Enters after typed text into newlines,
// as Claude Code's paste guard (or a Claude still starting) can: the text
// stays in its composer, and only the (swallow+1)th Enter submits it
// (written to the file submitted).
// With late, it draws the typed text only a second after it came (a
// loaded machine).
func swallowingClaude(swallow int, late bool) string {
	wait := ""
	if late {
		wait = "sleep 1\n"
	}
	return standInComposer + "prompt ''\nIFS= read -r first\n" + wait + "prompt \"$first\"\n" +
		strings.Repeat("IFS= read -r next\n", swallow) +
		"printf '%s' \"$first\" > submitted\nprompt ''\nexec sleep 100000\n"
}

// TestSendResubmits: text typed with send at an agent's idle prompt that
// is still in its composer a moment later gets Enter again — twice when
// the second is swallowed too, and also when the agent drew the text late
// (seen with Claude Code on a loaded CI machine: the text sat in its
// composer for 90 s).
func TestSendResubmits(t *testing.T) {
	for _, c := range []struct {
		backend string
		swallow int
		late    bool
	}{{"pty", 1, false}, {"tmux", 1, false}, {"pty", 2, false}, {"pty", 1, true}} {
		backend := c.backend
		t.Run(fmt.Sprintf("%s-%d-%t", backend, c.swallow, c.late), func(t *testing.T) {
			if backend == "tmux" && !pane.TmuxAvailable() {
				t.Fatal("tmux 3.0 or newer is needed (the CI installs it)")
			}
			s, _ := newStandInSupervisor(t, os.Getenv, swallowingClaude(c.swallow, c.late))
			ctx := context.Background()
			p := idleStandIn(t, s, backend)
			if _, err := s.Send(ctx, p.ID, api.SendRequest{Text: "delegate the long task to the worker now"}); err != nil {
				t.Fatal(err)
			}
			waitSubmitted(t, s, p.ID, "delegate the long task")
		})
	}
}

// TestDispatchResubmits: a task typed into an agent that keeps it, Enter
// and all, in its composer gets Enter again while it is still there — more
// than once (a loaded Claude Code in make demo-mixed kept a task through
// two Enters and the task failed a minute later, never taken up).
func TestDispatchResubmits(t *testing.T) {
	s, _ := newStandInSupervisor(t, os.Getenv, swallowingClaude(2, false))
	ctx := context.Background()
	p := idleStandIn(t, s, "pty")
	if _, err := s.Dispatch(ctx, "", p.ID, "add the max command to tally"); err != nil {
		t.Fatal(err)
	}
	waitSubmitted(t, s, p.ID, "add the max command")
}

// idleStandIn creates a pane of the stand-in claude on backend and waits
// until its screen says idle.
func idleStandIn(t *testing.T, s *Supervisor, backend string) api.CreateResponse {
	t.Helper()
	p, err := s.Create(context.Background(), api.CreateRequest{Title: "c", Type: "claude", Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle by the screen", func(st pane.Status) bool { return st.State == pane.Idle && st.Cause == pane.CauseScreen })
	return p
}

// waitSubmitted waits for the stand-in agent to have submitted text.
func waitSubmitted(t *testing.T, s *Supervisor, id, text string) {
	t.Helper()
	info, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(info.Workspace, "submitted")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if err == nil && strings.Contains(string(b), text) {
			return
		}
		if time.Now().After(deadline) {
			sc, _ := s.Screen(id, 0)
			t.Fatalf("the text was never submitted; screen:\n%s", sc.Screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lateDrawingClaude stands in for a Claude Code that read a typed task
// (Enter and all, the Enter swallowed) before it drew its composer: its
// screen is blank for 4 s, past the time of the Enter sent again, then
// shows the text in its composer, and the Enter after that submits it.
const lateDrawingClaude = standInComposer + "prompt ''\nIFS= read -r first\nprintf '\\033[2J\\033[H'\nsleep 4\n" +
	"prompt \"$first\"\nIFS= read -r next\nprintf '%s' \"$first\" > submitted\nprompt ''\nexec sleep 100000\n"

// TestDispatchResubmitsLateComposer: a screen with no composer yet does
// not end the Enters sent again for a typed task — they wait for the
// composer, and press Enter when it shows the text (under load Claude Code
// drew its first screen more than 6 s after SessionStart, and the task was
// never taken up).
func TestDispatchResubmitsLateComposer(t *testing.T) {
	t.Parallel()
	s, _ := newStandInSupervisor(t, os.Getenv, lateDrawingClaude)
	ctx := context.Background()
	p := idleStandIn(t, s, "pty")
	if _, err := s.Dispatch(ctx, "", p.ID, "add the max command to tally"); err != nil {
		t.Fatal(err)
	}
	waitSubmitted(t, s, p.ID, "add the max command")
}

// slowStartingClaude stands in for a loaded Claude Code that took a typed
// task at its first Enter but shows nothing of it for 6 s (its composer
// empty, no hook, no model request yet), then its busy screen. An Enter
// in those 6 s would be a second submission (the file resubmitted). Bash
// for read -t.
var slowStartingClaude = "#!/bin/bash\n" + strings.TrimPrefix(standInComposer, "#!/bin/sh\n") + "prompt ''\nIFS= read -r first\nprintf '%s' \"$first\" > submitted\nprompt ''\n" +
	"if IFS= read -r -t 6 again; then printf 'again' > resubmitted; fi\n" +
	"printf '\\n%s\\n❯ \\n%s\\n  esc to interrupt ' \"$R\" \"$R\"\nexec sleep 100000\n"

// TestDispatchNoEnterAfterTaken: the Enter sent again for a typed task
// goes only into a composer that still holds the task — not into the
// empty composer of an agent that took the task but had not shown it yet
// (under load the second Enter came after the agent had taken the first
// and started a second request).
func TestDispatchNoEnterAfterTaken(t *testing.T) {
	t.Parallel()
	s, _ := newStandInSupervisor(t, os.Getenv, slowStartingClaude)
	p := idleStandIn(t, s, "pty")
	if _, err := s.Dispatch(context.Background(), "", p.ID, "add the max command to tally"); err != nil {
		t.Fatal(err)
	}
	waitSubmitted(t, s, p.ID, "add the max command")
	waitPane(t, s, p.ID, "the busy screen", func(st pane.Status) bool { return st.Signals.ScreenRule == "claude-busy-footer" })
	info, err := s.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(info.Workspace, "resubmitted")); err == nil {
		t.Fatal("Enter was sent again into the empty composer of an agent that had taken the task")
	}
}
