package pane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// followedServer is a test's tmux server whose safety sweep is an hour
// away: while the control client runs, only its events can move a quiet
// pane.
func followedServer(t *testing.T) *TmuxServer {
	s := tmuxServer(t)
	s.safety = time.Hour
	return s
}

// followed reports whether the control client follows p.
func followed(p *TmuxPane) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.followed
}

// typeOutside types a command into p as a person attached to it would,
// without telling the pane (no input, no poke).
func typeOutside(t *testing.T, s *TmuxServer, p *TmuxPane, cmd string) {
	t.Helper()
	if out, err := exec.Command("tmux", "-L", s.Socket, "send-keys", "-t", p.target(), cmd, "Enter").CombinedOutput(); err != nil {
		t.Fatalf("send-keys: %v: %s", err, out)
	}
}

// startFollowed starts a bash pane and waits until it is idle and
// followed by the control client.
func startFollowed(t *testing.T, s *TmuxServer, opts Options) *TmuxPane {
	t.Helper()
	p, err := s.Start("w-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second, "test over") })
	eventually(t, 15*time.Second, "idle and followed", func() bool { return p.Status().State == Idle && followed(p) })
	return p
}

// TestTmuxOutputAfterQuietIsEvent: output typed into a pane quiet for
// longer than the 5 s poll of quiet panes is seen as busy, then idle, with
// the safety sweep an hour away: only the control client's events can
// tell it.
// (Not run beside the package's parallel tests: it times quiet, and a
// starved tmux server is quiet.)
func TestTmuxOutputAfterQuietIsEvent(t *testing.T) {
	s := followedServer(t)
	p := startFollowed(t, s, bashOpts(t))
	time.Sleep(6 * time.Second) // longer than a quiet pane's 5 s poll
	typeOutside(t, s, p, "echo hello")
	eventually(t, 4*time.Second, "busy by output", func() bool {
		st := p.Status()
		return st.State == Busy && st.Cause == CauseOutput
	})
	eventually(t, 4*time.Second, "idle by quiet", func() bool {
		st := p.Status()
		return st.State == Idle && st.Cause == CauseQuiet
	})
}

// statesUntilIdle starts a followed bash pane with the settle time, types
// cmd followed by writing the time to a mark file, and waits for that
// mark and then for the pane to be idle. It returns the states the pane
// went through from the typing on, and the time written.
func statesUntilIdle(t *testing.T, s *TmuxServer, settle time.Duration, cmd string) ([]Status, time.Time) {
	t.Helper()
	var mu sync.Mutex
	var states []Status
	opts := bashOpts(t)
	opts.Settle = settle
	opts.OnChange = func(st Status) {
		mu.Lock()
		states = append(states, st)
		mu.Unlock()
	}
	p := startFollowed(t, s, opts)
	mark := filepath.Join(t.TempDir(), "end")
	mu.Lock()
	from := len(states)
	mu.Unlock()
	typeOutside(t, s, p, cmd+"; date +%s%N > "+mark)
	end := waitMark(t, mark)
	eventually(t, 10*time.Second, "idle after the end", func() bool { return p.Status().State == Idle })
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(states[from:]), end
}

// idleBefore returns the first state of states that is idle before end.
func idleBefore(states []Status, end time.Time) (Status, bool) {
	for _, st := range states {
		if st.State == Idle && st.Since.Before(end) {
			return st, true
		}
	}
	return Status{}, false
}

// TestTmuxSteadyOutputNeverIdle: a pane printing every 0.2 s for 6 s, with
// a settle time of 1.5 s (seven and a half times the interval), is never
// shown idle before its last line, and is idle after. (A settle of 600 ms
// read a gap idle once in the full suite under two CPU burners, load 13:
// the printing shell itself starved for longer.)
// (Not run beside the package's parallel tests: it times quiet, and a
// starved tmux server is quiet.)
func TestTmuxSteadyOutputNeverIdle(t *testing.T) {
	s := followedServer(t)
	states, end := statesUntilIdle(t, s, 1500*time.Millisecond, "for i in $(seq 30); do echo x; sleep 0.2; done; echo x")
	if st, ok := idleBefore(states, end); ok {
		t.Fatalf("idle at %s while printing (the last line at %s): %+v", st.Since.Format(time.StampMilli), end.Format(time.StampMilli), states)
	}
	if !slices.ContainsFunc(states, func(st Status) bool { return st.State == Busy }) {
		t.Fatalf("never busy: %+v", states)
	}
}

// TestTmuxFloodPaused: a pane flooding output is paused (the control
// client reads a fraction of it) and is never shown idle while it floods,
// even with a pause longer than its settle time; it is idle after.
// (Not run beside the package's parallel tests: it times quiet, and a
// starved tmux server is quiet.)
func TestTmuxFloodPaused(t *testing.T) {
	s := followedServer(t)
	// The production settle time, and a pause twice as long: a settle of
	// 200 ms read a flood idle once at load 9 on two cores (the tmux
	// server itself starved), without any pause.
	s.pauseFor = time.Second
	states, end := statesUntilIdle(t, s, 500*time.Millisecond, "timeout 3 yes")
	if n := s.pauses.Load(); n == 0 {
		t.Fatal("the flooding pane was never paused")
	}
	if st, ok := idleBefore(states, end); ok {
		t.Fatalf("idle at %s while flooding (it ended at %s): %+v", st.Since.Format(time.StampMilli), end.Format(time.StampMilli), states)
	}
}

// waitMark waits for the time a command wrote to mark (date +%s%N).
func waitMark(t *testing.T, mark string) time.Time {
	t.Helper()
	var end time.Time
	eventually(t, 30*time.Second, "the command's end", func() bool {
		raw, err := os.ReadFile(mark)
		ns, perr := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil || perr != nil {
			return false
		}
		end = time.Unix(0, ns)
		return true
	})
	return end
}

// TestTmuxClosedFromOutside: a window killed, or a session killed, from
// outside is noticed at once (the safety sweep is an hour away), and a
// session killed from outside takes its program with it though its window
// was linked into the watching session.
func TestTmuxClosedFromOutside(t *testing.T) {
	s := followedServer(t)
	p := startFollowed(t, s, bashOpts(t))
	if out, err := exec.Command("tmux", "-L", s.Socket, "kill-window", "-t", "="+p.Name()+":main").CombinedOutput(); err != nil {
		t.Fatalf("kill-window: %v: %s", err, out)
	}
	eventually(t, 10*time.Second, "the killed window's pane exited", func() bool { return !p.Status().Running() })

	q, err := s.Start("w-2", bashOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Stop(time.Second, "test over") })
	eventually(t, 15*time.Second, "w-2 idle and followed", func() bool { return q.Status().State == Idle && followed(q) })
	pid := q.Status().PID
	if out, err := exec.Command("tmux", "-L", s.Socket, "kill-session", "-t", "=w-2").CombinedOutput(); err != nil {
		t.Fatalf("kill-session: %v: %s", err, out)
	}
	eventually(t, 10*time.Second, "the killed session's pane exited", func() bool { return !q.Status().Running() })
	eventually(t, 10*time.Second, "its program ended", func() bool { return syscall.Kill(pid, 0) != nil })
}

// TestTmuxControlClientDies: when the control client is killed the panes
// are polled (output still seen), and the client comes back and follows
// them again.
func TestTmuxControlClientDies(t *testing.T) {
	t.Parallel()
	s := followedServer(t)
	p := startFollowed(t, s, bashOpts(t))
	old := int(s.ctlPID.Load())
	if old == 0 {
		t.Fatal("no control client")
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the pane polled", func() bool { return !followed(p) })
	typeOutside(t, s, p, "echo polled")
	eventually(t, 15*time.Second, "busy by output while polled", func() bool {
		st := p.Status()
		return st.State == Busy && st.Cause == CauseOutput
	})
	eventually(t, 30*time.Second, "a new client follows the pane", func() bool {
		pid := int(s.ctlPID.Load())
		return pid != old && followed(p) && p.Status().State == Idle
	})
	typeOutside(t, s, p, "echo followed")
	eventually(t, 4*time.Second, "busy by output, followed again", func() bool {
		st := p.Status()
		return st.State == Busy && st.Cause == CauseOutput
	})
}

// TestTmuxControlClientUnseen: the control client changes no window's
// size and marks no pane session attached; it is attached to the watching
// session only.
func TestTmuxControlClientUnseen(t *testing.T) {
	s := followedServer(t)
	opts := bashOpts(t)
	opts.Rows, opts.Cols = 30, 100
	p := startFollowed(t, s, opts)
	out, err := exec.Command("tmux", "-L", s.Socket, "display", "-p", "-t", "="+p.Name()+":main",
		"#{session_attached} #{window_width}x#{window_height}").CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != "0 100x30" {
		t.Fatalf("the pane's session: %q %v, want 0 attached clients and 100x30", got, err)
	}
	out, err = exec.Command("tmux", "-L", s.Socket, "list-clients", "-F", "#{client_session} #{client_flags}").CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || !strings.HasPrefix(got, watchSession+" ") || !strings.Contains(got, "ignore-size") || strings.Contains(got, "\n") {
		t.Fatalf("clients: %q %v", got, err)
	}
}

// TestTmuxSessionsCreatedWhileClientConnects: sessions are created and
// killed without a pause while the control client is killed and connects
// again, six times, and the tmux server survives. (tmux 3.3a crashes when
// a notification, such as a new session's, comes between a control
// client's identification and its start; our tmux commands wait while it
// connects. Without that, about half the connects here crash it.)
func TestTmuxSessionsCreatedWhileClientConnects(t *testing.T) {
	t.Parallel()
	s := followedServer(t)
	p := startFollowed(t, s, bashOpts(t))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("x-%d-%d", g, i)
				_, _ = s.run(context.Background(), "new-session", "-d", "-s", name, "sleep 1", ";", "kill-session", "-t", "="+name)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 6 {
		old := s.ctlPID.Load()
		if err := syscall.Kill(int(old), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		gone := func() error {
			_, err := s.run(context.Background(), "has-session", "-t", "="+p.name)
			return err
		}
		eventually(t, 20*time.Second, fmt.Sprintf("control client %d connected", i+2), func() bool {
			return (s.ctlPID.Load() != old && s.live.Load()) || gone() != nil
		})
		if err := gone(); err != nil {
			t.Fatalf("at connect %d the tmux server died: %v", i+2, err)
		}
	}
	if st := p.Status(); !st.Running() {
		t.Fatalf("the pane ended: %+v", st)
	}
}

// TestTmuxServerEndsWithLastPane: once the last pane is stopped, the
// watching session goes too and the tmux server exits (for the watching
// session alone it would run on forever) — whether the poller sees the
// pane go or the server object is closed right after.
func TestTmuxServerEndsWithLastPane(t *testing.T) {
	t.Parallel()
	for _, closeAtOnce := range []bool{false, true} {
		t.Run(fmt.Sprint("close=", closeAtOnce), func(t *testing.T) {
			s := followedServer(t)
			p := startFollowed(t, s, bashOpts(t))
			p.Stop(time.Second, "test over")
			p.Close() // as the supervisor does with a pane it removed
			if closeAtOnce {
				s.Close()
			}
			eventually(t, 10*time.Second, "the tmux server gone", func() bool {
				return exec.Command("tmux", "-L", s.Socket, "list-sessions").Run() != nil
			})
		})
	}
}
