package pane

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func testLog(t *testing.T) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(os.Stderr)
	l.SetLevel(logrus.WarnLevel)
	return logrus.NewEntry(l).WithField("test", t.Name())
}

func startBash(t *testing.T, changes chan<- Status) *PTY {
	t.Helper()
	p, err := StartPTY(Options{
		Argv:   []string{"bash", "--norc", "--noprofile"},
		Dir:    t.TempDir(),
		Env:    append(os.Environ(), "TERM=xterm-256color", "PS1=$ "),
		Settle: 100 * time.Millisecond,
		Log:    testLog(t),
		OnChange: func(s Status) {
			if changes != nil {
				select {
				case changes <- s:
				default:
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hasLine(screen, line string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

func TestPTYEchoAppearsOnScreen(t *testing.T) {
	p := startBash(t, nil)
	tok := fmt.Sprintf("tok%d", rand.Int64())
	if err := p.SendText("echo "+tok, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "token line", func() bool { return hasLine(p.Screen(), tok) })
}

func TestPTYStatesFollowOutput(t *testing.T) {
	changes := make(chan Status, 100)
	p := startBash(t, changes)
	eventually(t, 10*time.Second, "idle", func() bool { return p.Status().State == Idle })
	if err := p.SendText("for i in 1 2 3; do echo $i; sleep 0.05; done; sleep 0.5; echo end", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "busy", func() bool { return p.Status().State == Busy })
	eventually(t, 10*time.Second, "idle after end", func() bool {
		return hasLine(p.Screen(), "end") && p.Status().State == Idle
	})
	if s := p.Status(); !strings.Contains(s.Reason, "quiet") {
		t.Fatalf("idle reason %q does not say why", s.Reason)
	}
}

func TestPTYExitCodeKept(t *testing.T) {
	p := startBash(t, nil)
	if err := p.SendText("exit 7", true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("bash did not exit")
	}
	s := p.Status()
	if s.State != Exited || s.ExitCode == nil || *s.ExitCode != 7 || s.Reason != "exited with code 7" {
		t.Fatalf("status after exit 7 = %+v", s)
	}
	if err := p.SendText("echo", true); err != ErrExited {
		t.Fatalf("send to exited pane: %v", err)
	}
}

func TestPTYStopEscalatesToKill(t *testing.T) {
	p, err := StartPTY(Options{
		Argv: []string{"bash", "--norc", "--noprofile", "-c", "trap '' TERM HUP; echo ready; while :; do sleep 0.1; done"},
		Env:  os.Environ(),
		Log:  testLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	eventually(t, 10*time.Second, "ready", func() bool { return hasLine(p.Screen(), "ready") })
	start := time.Now()
	p.Stop(200*time.Millisecond, "test")
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("Stop returned before the grace period although the program ignores SIGTERM")
	}
	s := p.Status()
	if s.State != Exited || s.Reason != "test: killed by signal SIGKILL" {
		t.Fatalf("status after stop = %+v", s)
	}
}

func TestPTYBracketedPaste(t *testing.T) {
	// cat -v shows the paste markers it receives as ^[[200~ … ^[[201~.
	p, err := StartPTY(Options{
		Argv: []string{"bash", "--norc", "--noprofile", "-c", `printf '\033[?2004h'; stty -icanon -echo; exec cat -v`},
		Env:  os.Environ(),
		Log:  testLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	eventually(t, 10*time.Second, "idle", func() bool { return p.Status().State == Idle })
	if err := p.SendText("hi\x1b[201~there", false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "paste markers", func() bool {
		return strings.Contains(p.Screen(), "^[[200~hithere^[[201~")
	})
}

func TestPTYAttachSeesScreenThenOutput(t *testing.T) {
	p := startBash(t, nil)
	if err := p.SendText("echo before", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "before", func() bool { return hasLine(p.Screen(), "before") })
	repaint, out, detach, err := p.Attach()
	if err != nil {
		t.Fatal(err)
	}
	defer detach()
	if !strings.Contains(string(repaint), "before") {
		t.Fatalf("repaint lacks the screen: %q", repaint)
	}
	if err := p.SendText("echo after", true); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	deadline := time.After(10 * time.Second)
	for !strings.Contains(got.String(), "after\r\n") {
		select {
		case b := <-out:
			got.Write(b)
		case <-deadline:
			t.Fatalf("attached stream never showed the output: %q", got.String())
		}
	}
}

func TestKeyBytes(t *testing.T) {
	for name, want := range map[string]string{"C-c": "\x03", "Enter": "\r", "M-x": "\x1bx", "Up": "\x1b[A", "C-[": "\x1b", "1": "1", "y": "y"} {
		b, err := KeyBytes(name)
		if err != nil || string(b) != want {
			t.Errorf("KeyBytes(%q) = %q, %v; want %q", name, b, err, want)
		}
	}
	for _, bad := range []string{"Hyper-q", "é", "\x01", "yy"} {
		if _, err := KeyBytes(bad); err == nil {
			t.Errorf("unknown key %q accepted", bad)
		}
	}
}

func TestPTYInputMakesBusy(t *testing.T) {
	p := startBash(t, nil)
	eventually(t, 10*time.Second, "idle", func() bool { return p.Status().State == Idle })
	// A silent command: only the input can tell the pane is working.
	if err := p.SendText("sleep 0.5 >/dev/null", false); err != nil {
		t.Fatal(err)
	}
	if s := p.Status(); s.State != Busy || s.Reason != "input" {
		t.Fatalf("status after input = %+v", s)
	}
	eventually(t, 10*time.Second, "idle again", func() bool { return p.Status().State == Idle })
}

// startFlood runs script in a PTY pane of the default size.
func startFlood(t *testing.T, script string) *PTY {
	t.Helper()
	p, err := StartPTY(Options{
		Argv: []string{"bash", "--norc", "--noprofile", "-c", script + "; sleep 600"},
		Env:  append(os.Environ(), "TERM=xterm-256color"),
		Log:  testLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestPTYFloodReachesScreen: 16 MB of `yes` and then a marker; the marker
// reaches the screen (before, the emulator drew every line and took about
// four minutes for this).
func TestPTYFloodReachesScreen(t *testing.T) {
	t.Parallel()
	p := startFlood(t, "yes | head -c 16M; echo; echo flood-done")
	eventually(t, 90*time.Second, "the marker after the flood", func() bool { return hasLine(p.Screen(), "flood-done") })
	var lines []string
	for _, l := range strings.Split(p.Screen(), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	if n := len(lines); n < 3 || lines[n-1] != "flood-done" || lines[n-2] != "" || lines[n-3] != "y" {
		t.Fatalf("the screen after the flood ends %q", lines[max(0, len(lines)-3):])
	}
}

// TestPTYLongLinesKeepNoScrollback: 25,000 wrapped lines of base64; the
// emulator holds no more than its small scrollback bound (before, it kept
// 10,000 lines of cells, ~200 MB for such lines).
func TestPTYLongLinesKeepNoScrollback(t *testing.T) {
	p := startFlood(t, "head -c 3000000 /dev/zero | base64 -w 160; echo flood-done")
	eventually(t, 120*time.Second, "the marker after the flood", func() bool { return hasLine(p.Screen(), "flood-done") })
	var n int
	p.do(func(st *ptyState) { n = st.scr.view().ScrollbackLen() })
	if n > scrollbackLines {
		t.Fatalf("the emulator keeps %d lines of scrollback, more than %d", n, scrollbackLines)
	}
}

// TestPTYWatcherOutlivesFlood: a watcher that does not look while a pane
// floods finds one change waiting, and is still told of the next one (a
// byte stream subscriber that fell behind would have been dropped).
func TestPTYWatcherOutlivesFlood(t *testing.T) {
	p := startBash(t, nil)
	changed, stop := p.Watch()
	defer stop()
	if err := p.SendText("yes | head -c 4M; echo flood-done", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the flood's end", func() bool { return hasLine(p.Screen(), "flood-done") })
	select {
	case _, ok := <-changed:
		if !ok {
			t.Fatal("the watch ended during the flood")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change was waiting after the flood")
	}
	eventually(t, 10*time.Second, "quiet after the flood", func() bool { return p.Status().State == Idle })
	select {
	case <-changed: // the prompt, drawn after the look above
	default:
	}
	tok := fmt.Sprintf("tok%d", rand.Int64())
	if err := p.SendText("echo "+tok, true); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-changed:
		if !ok {
			t.Fatal("the watch ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher was not told of the echo")
	}
}

// A program that ends at once: its start is announced first and its exit
// last, however fast the pane's loop sees the end (the start used to be
// announced after the loop began, racing the exit, so a record of the
// pane's state could end on "starting").
func TestPTYStartAnnouncedBeforeExit(t *testing.T) {
	for i := 0; i < 20; i++ {
		var (
			mu   sync.Mutex
			seen []State
		)
		p, err := StartPTY(Options{
			Argv: []string{"true"},
			Dir:  t.TempDir(),
			Env:  os.Environ(),
			Log:  testLog(t),
			OnChange: func(s Status) {
				mu.Lock()
				seen = append(seen, s.State)
				mu.Unlock()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "the program's exit", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) > 0 && seen[len(seen)-1] == Exited
		})
		p.Close()
		mu.Lock()
		if seen[0] != Starting {
			t.Fatalf("run %d: changes %v, want starting first", i, seen)
		}
		mu.Unlock()
	}
}

// TestPTYStatusDoesNotWaitForTheLoop: while the pane's loop is held up (here
// in its change callback), Status still answers, with the change the loop
// is announcing; the causes say why.
func TestPTYStatusDoesNotWaitForTheLoop(t *testing.T) {
	hold, held := make(chan struct{}), make(chan Status, 1)
	p, err := StartPTY(Options{
		Argv:   []string{"bash", "--norc", "--noprofile"},
		Env:    append(os.Environ(), "TERM=xterm-256color", "PS1=$ "),
		Settle: 100 * time.Millisecond,
		Log:    testLog(t),
		OnChange: func(s Status) {
			if s.State == Idle {
				select {
				case held <- s:
				default:
				}
				<-hold
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	defer close(hold)
	if st := p.Status(); st.State != Starting || st.Cause != CauseStarted {
		t.Fatalf("at start: %+v", st)
	}
	var announced Status
	select {
	case announced = <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the pane never settled")
	}
	got := make(chan Status, 1)
	go func() { got <- p.Status() }()
	select {
	case st := <-got:
		if st != announced || st.Cause != CauseQuiet {
			t.Fatalf("Status %+v while the loop announces %+v", st, announced)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Status waited for the pane's loop")
	}
}

// TestPTYCauses: typed input and an agent's hook are told apart from the
// reason text.
func TestPTYCauses(t *testing.T) {
	p := startBash(t, nil)
	eventually(t, 10*time.Second, "idle", func() bool { return p.Status().State == Idle })
	if err := p.SendText("sleep 0.3", true); err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.Cause != CauseInput {
		t.Fatalf("after input: %+v", st)
	}
	p.SetState(Waiting, "hook:Notification")
	if st := p.Status(); st.State != Waiting || st.Cause != CauseHook || st.Reason != "hook:Notification" {
		t.Fatalf("after a hook: %+v", st)
	}
	if err := p.SendText("exit 3", true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("bash did not exit")
	}
	if st := p.Status(); st.Cause != CauseExit || st.Reason != "exited with code 3" {
		t.Fatalf("after exit: %+v", st)
	}
	p.Close()
	if st := p.Status(); st.Cause != CauseClosed || st.Reason != "closed" {
		t.Fatalf("after close: %+v", st)
	}
}

// agentRules make bash an agent pane: its prompt is the idle screen.
func agentRules(t *testing.T) Rules {
	t.Helper()
	rules, err := Rules{{Name: "prompt", State: Idle, Match: `^\$\s*$`, Last: 1}}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// TestPTYRequestsInFlight: a model request in flight keeps an agent pane
// busy while its screen says idle, and that disagreement is counted; once
// the request ended the screen decides again.
func TestPTYRequestsInFlight(t *testing.T) {
	var inFlight atomic.Int64
	p, err := StartPTY(Options{
		Argv: []string{"bash", "--norc", "--noprofile"}, Dir: t.TempDir(),
		Env:    append(os.Environ(), "TERM=xterm-256color", "PS1=$ "),
		Settle: 100 * time.Millisecond, Log: testLog(t),
		Rules: agentRules(t), InFlight: func() int { return int(inFlight.Load()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	eventually(t, 10*time.Second, "the screen's idle", func() bool { return p.Status().Cause == CauseScreen })
	inFlight.Add(1)
	p.RequestsChanged()
	eventually(t, 10*time.Second, "busy by the gateway", func() bool {
		st := p.Status()
		return st.State == Busy && st.Cause == CauseGateway && st.Signals.InFlight == 1
	})
	// The prompt drawn again while the request runs: the screen says idle.
	if err := p.SendText("echo drawn", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the gateway-vs-screen disagreement counted", func() bool {
		return p.Status().Signals.GatewayVsScreen == 1
	})
	if st := p.Status(); st.State != Busy {
		t.Fatalf("the screen made a pane with a request in flight %s: %+v", st.State, st)
	}
	inFlight.Add(-1)
	p.RequestsChanged()
	eventually(t, 10*time.Second, "idle by the screen once the request ended", func() bool {
		st := p.Status()
		return st.State == Idle && st.Cause == CauseScreen && st.Signals.InFlight == 0
	})
	if st := p.Status(); st.Signals.GatewayVsScreen != 1 || st.Signals.HookVsScreen != 0 || st.Signals.GatewayVsHook != 0 {
		t.Fatalf("counts: %+v", st.Signals)
	}
}
