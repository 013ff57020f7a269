package pane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func tmuxServer(t *testing.T) *TmuxServer {
	t.Helper()
	if !TmuxAvailable() {
		t.Fatal("tmux 3.0 or newer is needed (the CI installs it)")
	}
	s := NewTmuxServer(t.TempDir(), testLog(t))
	t.Cleanup(func() {
		s.Close()
		// Its panes' groups and its socket go too.
		if err := s.KillServer(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func bashOpts(t *testing.T) Options {
	return Options{
		Argv: []string{"bash", "--norc", "--noprofile"},
		Dir:  t.TempDir(),
		Env:  append(os.Environ(), "PS1=$ ", "TERM=xterm-256color"),
		Log:  testLog(t),
	}
}

func TestTmuxEchoStatesAndExit(t *testing.T) {
	s := tmuxServer(t)
	p, err := s.Start("w-1", bashOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "idle", func() bool { return p.Status().State == Idle })
	tok := fmt.Sprintf("tok%d", rand.Int64())
	if err := p.SendText("echo "+tok, true); err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.State != Busy {
		t.Fatalf("after input: %+v", st)
	}
	eventually(t, 15*time.Second, "token", func() bool { return hasLine(p.Screen(), tok) })
	eventually(t, 15*time.Second, "idle again", func() bool { return p.Status().State == Idle })
	// Multi-line text goes in as one paste.
	if err := p.SendText("echo one-"+tok+"\necho two-"+tok, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "pasted lines", func() bool {
		sc := p.Screen()
		return hasLine(sc, "one-"+tok) && hasLine(sc, "two-"+tok)
	})
	if err := p.SendText("exit 4", true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("exit not seen")
	}
	if st := p.Status(); st.State != Exited || st.ExitCode == nil || *st.ExitCode != 4 {
		t.Fatalf("after exit 4: %+v", st)
	}
}

// TestTmuxAdoptAfterRestart: a new server object for the same home (a new
// supervisor) adopts the running session with its screen.
func TestTmuxAdoptAfterRestart(t *testing.T) {
	home := t.TempDir()
	s1 := NewTmuxServer(home, testLog(t))
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s1.Socket, "kill-server").Run() })
	p1, err := s1.Start("w-3", bashOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	tok := fmt.Sprintf("tok%d", rand.Int64())
	if err := p1.SendText("echo "+tok, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "token", func() bool { return hasLine(p1.Screen(), tok) })
	p1.Close()
	s1.Close()

	s2 := NewTmuxServer(home, testLog(t))
	defer s2.Close()
	if s2.Socket != s1.Socket {
		t.Fatalf("socket names differ for one home: %s %s", s1.Socket, s2.Socket)
	}
	p2, err := s2.Adopt("w-3", bashOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	if !hasLine(p2.Screen(), tok) || !p2.Status().Running() {
		t.Fatalf("adopted pane: %+v\n%s", p2.Status(), p2.Screen())
	}
	if _, err := s2.Adopt("w-9", bashOpts(t)); err != ErrNoSession {
		t.Fatalf("adopting a missing session: %v", err)
	}
	p2.Stop(200*time.Millisecond, "killed")
	if st := p2.Status(); st.Running() {
		t.Fatalf("after stop: %+v", st)
	}
	if sess, _ := s2.Sessions(); sess["w-3"] {
		t.Fatal("the session survived Stop")
	}
}

func TestTmuxStopEscalates(t *testing.T) {
	s := tmuxServer(t)
	o := bashOpts(t)
	o.Argv = []string{"bash", "--norc", "--noprofile", "-c", "trap '' TERM HUP; echo ready; while :; do sleep 0.1; done"}
	p, err := s.Start("w-2", o)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "ready", func() bool { return strings.Contains(p.Screen(), "ready") })
	eventually(t, 15*time.Second, "pid", func() bool { return p.Status().PID > 0 })
	start := time.Now()
	p.Stop(300*time.Millisecond, "killed")
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("Stop did not wait for the grace period")
	}
	if st := p.Status(); st.Running() {
		t.Fatalf("after stop: %+v", st)
	}
}

// TestTmuxPaneCreatedDuringASweep: a pane whose session starts while the
// poller reads the sessions is not declared gone. The poller used to read
// the sessions first and take the panes after: a pane registered in
// between was missing from the sessions (seen in CI under load).
func TestTmuxPaneCreatedDuringASweep(t *testing.T) {
	s := tmuxServer(t)
	first, err := s.Start("first", bashOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	var late *TmuxPane
	s.sweep(func() (map[string]paneInfo, error) {
		infos, listErr := s.list(context.Background())
		// A pane starts right after the sessions were read.
		var err error
		if late, err = s.Start("late", bashOpts(t)); err != nil {
			t.Fatal(err)
		}
		return infos, listErr
	})
	for _, p := range []*TmuxPane{first, late} {
		if st := p.Status(); !st.Running() {
			t.Fatalf("pane %s is %s (%s) though its session runs", p.Name(), st.State, st.Reason)
		}
	}
}

// TestTmuxCauses: a tmux pane's causes, and its Status answers while the
// pane's mutex is held (by the poller or an input, say).
func TestTmuxCauses(t *testing.T) {
	s := tmuxServer(t)
	p, err := s.Start("w-1", bashOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.State != Starting || st.Cause != CauseStarted {
		t.Fatalf("at start: %+v", st)
	}
	eventually(t, 15*time.Second, "idle", func() bool { return p.Status().State == Idle })
	if st := p.Status(); st.Cause != CauseQuiet {
		t.Fatalf("settled: %+v", st)
	}
	if err := p.SendText("sleep 1", true); err != nil {
		t.Fatal(err)
	}
	got := make(chan Status, 1)
	p.mu.Lock()
	go func() { got <- p.Status() }()
	var st Status
	select {
	case st = <-got:
	case <-time.After(10 * time.Second):
	}
	p.mu.Unlock()
	if st.State != Busy || st.Cause != CauseInput {
		t.Fatalf("after input, with the mutex held: %+v", st)
	}
	p.Stop(time.Second, "killed")
	if st := p.Status(); st.State != Exited || st.Cause != CauseStop || !strings.HasPrefix(st.Reason, "killed: ") {
		t.Fatalf("after stop: %+v", st)
	}
}

// TestTmuxRequestsInFlight: as TestPTYRequestsInFlight, for a tmux pane.
func TestTmuxRequestsInFlight(t *testing.T) {
	t.Parallel()
	s := tmuxServer(t)
	var inFlight atomic.Int64
	opts := bashOpts(t)
	opts.Rules, opts.InFlight = agentRules(t), func() int { return int(inFlight.Load()) }
	p, err := s.Start("w-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second, "test over") })
	eventually(t, 15*time.Second, "the screen's idle", func() bool { return p.Status().Cause == CauseScreen })
	inFlight.Add(1)
	p.RequestsChanged()
	if st := p.Status(); st.State != Busy || st.Cause != CauseGateway || st.Signals.InFlight != 1 {
		t.Fatalf("with a request in flight: %+v", st)
	}
	if err := p.SendText("echo drawn", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the gateway-vs-screen disagreement counted", func() bool {
		return p.Status().Signals.GatewayVsScreen == 1
	})
	if st := p.Status(); st.State != Busy {
		t.Fatalf("the screen made a pane with a request in flight %s: %+v", st.State, st)
	}
	inFlight.Add(-1)
	p.RequestsChanged()
	eventually(t, 15*time.Second, "idle by the screen once the request ended", func() bool {
		st := p.Status()
		return st.State == Idle && st.Cause == CauseScreen && st.Signals.InFlight == 0
	})
}

// TestTmuxScreenSecondLook: an idle agent pane whose screen turns busy
// with no output after it takes the busy verdict at the next look, though
// nothing new happened in the pane (a verdict applies at its second look).
func TestTmuxScreenSecondLook(t *testing.T) {
	t.Parallel()
	s := tmuxServer(t)
	p := startRulesPane(t, s, Rules{
		{Name: "working", State: Busy, Match: `^working$`, Last: 1},
		{Name: "prompt", State: Idle, Match: `^\$\s*$`, Last: 1},
	})
	// A job that prints once, later, and then nothing more.
	if err := p.SendText("(sleep 3; printf '\\nworking\\n') &", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "idle by the screen after the input", func() bool {
		st := p.Status()
		return st.State == Idle && st.Cause == CauseScreen
	})
	eventually(t, 20*time.Second, "busy by the screen", func() bool {
		st := p.Status()
		return st.State == Busy && st.Cause == CauseScreen && st.Rule == "working"
	})
}

// A pane the screen rules made waiting is looked at again soon after
// input, though the input's redraw came within the input grace and the
// pane stays waiting meanwhile: a picker closed with Escape (Codex's
// /permissions) read waiting for the 30 s of the safety sweep although
// its screen said idle.
func TestTmuxWaitingLooksAgainAfterInput(t *testing.T) {
	t.Parallel()
	s := tmuxServer(t)
	s.safety = time.Hour // only the 500 ms looks the docs promise may find it
	p := startRulesPane(t, s, Rules{
		{Name: "ask", State: Waiting, Match: `^pick one\?$`, Last: 1},
		{Name: "prompt", State: Idle, Match: `^\$\s*$`, Last: 1},
	})
	if err := p.SendText("printf 'pick one?\\n'; read -r x", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "waiting by the screen", func() bool {
		st := p.Status()
		return st.State == Waiting && st.Cause == CauseScreen
	})
	// The answer: the prompt is back at once, and nothing prints after.
	if err := p.SendText("", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "idle by the screen after the answer", func() bool {
		st := p.Status()
		return st.State == Idle && st.Cause == CauseScreen
	})
}

// startRulesPane starts bash as pane w-1 of s with the screen rules given,
// stopped when the test ends, and waits until the rules decided its state.
func startRulesPane(t *testing.T, s *TmuxServer, rules Rules) *TmuxPane {
	t.Helper()
	compiled, err := rules.Compile()
	if err != nil {
		t.Fatal(err)
	}
	opts := bashOpts(t)
	opts.Rules = compiled
	p, err := s.Start("w-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second, "test over") })
	eventually(t, 15*time.Second, "the screen's idle", func() bool { return p.Status().Cause == CauseScreen })
	return p
}
