package cicy

import (
	"testing"

	"github.com/cicy-ai/cicy-agent/reaper/reapertest"
)

// A shell call leaves two processes running: one in the background, and
// one in a session of its own with an empty environment (out of the
// tool's process group and without its marker). The turn ends and they run
// on, as a server started for the next call would; closing the pane (a
// stop, a kill, the supervisor's shutdown) ends both.
func TestClosingThePaneEndsWhatItsShellCallsLeftRunning(t *testing.T) {
	escaped, background := reapertest.Arg(t), reapertest.Arg(t)
	r := newRig(t, replies(shellCall("toolu_bg", "env -i setsid sleep "+escaped+" >/dev/null 2>&1 & sleep "+background+" >/dev/null 2>&1 & echo started"),
		textReply("left running")))
	a := r.start()
	if res := r.send("start them"); res.Status != TurnCompleted || res.Answer != "left running" {
		t.Fatalf("the turn: %+v", res)
	}
	reapertest.WaitAlive(t, escaped)
	reapertest.WaitAlive(t, background)
	a.Close()
	reapertest.WaitGone(t, escaped, "the process that left its session, after the pane closed")
	reapertest.WaitGone(t, background, "the background process, after the pane closed")
}

// Cancelling a turn ends its running shell call and every process the
// call started, one that left the session with an empty environment too.
func TestCancelEndsAProcessThatLeftTheToolsSession(t *testing.T) {
	arg := reapertest.Arg(t)
	r := newRig(t, replies(shellCall("toolu_esc", "env -i setsid sleep "+arg+" & wait"), textReply("after")))
	a := r.start()
	ch := r.sendAsync("run it", "")
	reapertest.WaitAlive(t, arg)
	if !a.Cancel() {
		t.Fatal("Cancel reported no running turn")
	}
	if res := awaitTurn(t, ch); res.Status != TurnCancelled {
		t.Fatalf("the turn: %+v", res)
	}
	reapertest.WaitGone(t, arg, "after the cancel")
}
