package pane

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cicy-ai/cicy-agent/reaper"
	"github.com/cicy-ai/cicy-agent/reaper/reapertest"
)

// startTmuxProgram starts script under bash in a tmux pane and returns the
// pane and the pid of its wrapper sh, which the test kills at its end if
// it is still there.
func startTmuxProgram(t *testing.T, s *TmuxServer, script string) (*TmuxPane, int) {
	t.Helper()
	o := bashOpts(t)
	o.Argv = []string{"bash", "--norc", "--noprofile", "-c", script}
	p, err := s.Start("w-1", o)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the pane's pid", func() bool { return p.Status().PID > 0 })
	wrapper, ok := reaper.Stat(p.Status().PID)
	if !ok {
		t.Fatal("the pane's wrapper is not running")
	}
	t.Cleanup(func() { reaper.Kill(wrapper, syscall.SIGKILL) })
	return p, wrapper.PID
}

// A CLI pane's wrapper sh and the program under it, with what the program
// runs in its group, end when the pane goes with its tmux server, or when
// someone kills the pane's session: the terminal hangs up and the wrapper
// no longer outlives it (it used to catch SIGHUP, and stay an orphan of
// init with its program).
func TestTmuxPaneGoneLeavesNoProcess(t *testing.T) {
	for _, c := range []struct {
		name string
		kill func(t *testing.T, s *TmuxServer)
	}{
		{"kill-server", func(t *testing.T, s *TmuxServer) {
			if err := s.KillServer(); err != nil {
				t.Fatal(err)
			}
		}},
		{"kill-session", func(t *testing.T, s *TmuxServer) {
			// The server may exit with its last session before it answers.
			out, err := exec.Command("tmux", "-L", s.Socket, "kill-session", "-t", "=w-1").CombinedOutput()
			if sess, _ := s.Sessions(); sess["w-1"] {
				t.Fatalf("tmux kill-session: %v: %s", err, out)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := tmuxServer(t)
			bg, fg := reapertest.Arg(t), reapertest.Arg(t)
			_, wrapper := startTmuxProgram(t, s, "sleep "+bg+" & sleep "+fg)
			reapertest.WaitAlive(t, bg)
			reapertest.WaitAlive(t, fg)
			c.kill(t, s)
			reapertest.PidGone(t, wrapper, "the wrapper sh, after "+c.name)
			reapertest.WaitGone(t, fg, "the program, after "+c.name)
			reapertest.WaitGone(t, bg, "the program's background process, after "+c.name)
		})
	}
}

// Stop's SIGHUP and SIGTERM reach the program, which takes its time to
// end, is given it, and its own exit is what the pane reports: the wrapper
// sh, which a SIGHUP now ends, is not sent it (it would die at once, and
// the pane would report sh killed by SIGHUP).
func TestTmuxStopGivesTheProgramItsGrace(t *testing.T) {
	t.Parallel()
	s := tmuxServer(t)
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	p, _ := startTmuxProgram(t, s, "trap 'sleep 0.3; echo bye > "+done+"; exit 0' HUP TERM; echo ready; while :; do sleep 0.1; done")
	eventually(t, 15*time.Second, "ready", func() bool { return hasLine(p.Screen(), "ready") })
	p.Stop(15*time.Second, "stopped")
	if b, err := os.ReadFile(done); err != nil || string(b) != "bye\n" {
		t.Fatalf("the program did not end on its own: %q, %v", b, err)
	}
	if st := p.Status(); st.Reason != "stopped: exited with code 0" || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("after Stop: %q, want the program's own exit (code 0)", st.Reason)
	}
}

// Stop ends what the program started, one that left the group and the
// session with an empty environment too.
func TestTmuxStopEndsWhatTheProgramLeftRunning(t *testing.T) {
	t.Parallel()
	s := tmuxServer(t)
	escaped, fg := reapertest.Arg(t), reapertest.Arg(t)
	p, wrapper := startTmuxProgram(t, s, "env -i setsid sleep "+escaped+" >/dev/null 2>&1 & exec sleep "+fg)
	reapertest.WaitAlive(t, escaped)
	reapertest.WaitAlive(t, fg)
	p.Stop(5*time.Second, "stopped")
	reapertest.WaitGone(t, fg, "the program, after Stop")
	reapertest.WaitGone(t, escaped, "the process that left the session, after Stop")
	reapertest.PidGone(t, wrapper, "the wrapper sh, after Stop")
}

// The same for a pane on a PTY of this process.
func TestPTYStopEndsWhatTheProgramLeftRunning(t *testing.T) {
	t.Parallel()
	escaped, fg := reapertest.Arg(t), reapertest.Arg(t)
	p, err := StartPTY(Options{
		Argv: []string{"bash", "--norc", "--noprofile", "-c", "env -i setsid sleep " + escaped + " >/dev/null 2>&1 & exec sleep " + fg},
		Env:  os.Environ(),
		Log:  testLog(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	reapertest.WaitAlive(t, escaped)
	reapertest.WaitAlive(t, fg)
	p.Stop(5*time.Second, "stopped")
	reapertest.WaitGone(t, fg, "the program, after Stop")
	reapertest.WaitGone(t, escaped, "the process that left the session, after Stop")
}

// escapingScript is a program that ignores SIGHUP and SIGTERM and starts
// two children that escape it: one in a session of its own (setsid), one
// under nohup; both inherit the ignored signals. With end (a file), it
// ends once end exists; otherwise it runs until killed.
func escapingScript(setsidArg, nohupArg, fgArg, end string) string {
	s := "trap '' HUP TERM; setsid sleep " + setsidArg + " >/dev/null 2>&1 & nohup sleep " + nohupArg + " >/dev/null 2>&1 & echo started; "
	if end != "" {
		return s + "while [ ! -e " + end + " ]; do sleep 0.05; done; exit 0"
	}
	return s + "sleep " + fgArg
}

// groupsNeeded skips a test of the cgroup way when this machine gives no
// cgroup to this process (not root, nothing delegated).
func groupsNeeded(t *testing.T, s *TmuxServer) {
	t.Helper()
	g := s.newGroup("probe")
	if g == "" {
		t.Skip("no cgroup v2 group can be made here")
	}
	g.Remove()
}

// Every process a pane started ends when the pane ends, whatever it did to
// escape (its own session, nohup, SIGHUP and SIGTERM ignored): when it is
// stopped, when its program exits, when its tmux server is killed under a
// running supervisor, and when the server was killed while none ran (the
// next one ends them at its start). With a cgroup per pane, and without
// (a keeper, and the processes recorded), where what survives even the
// keeper is ended by the next supervisor.
func TestTmuxPaneEndEndsWhatEscaped(t *testing.T) {
	type kill func(t *testing.T, s *TmuxServer, p *TmuxPane, wrapper int) *TmuxServer
	restart := func(t *testing.T, s *TmuxServer) *TmuxServer {
		next := NewTmuxServer(s.home, testLog(t))
		next.Grace, next.noGroups, next.failJoin = s.Grace, s.noGroups, s.failJoin
		next.EndLeftovers()
		return next
	}
	cases := []struct {
		name   string
		end    bool // the program ends by itself after starting its children
		keeper bool // only without cgroups
		kill   kill
	}{
		{"stop", false, false, func(t *testing.T, s *TmuxServer, p *TmuxPane, _ int) *TmuxServer {
			p.Stop(500*time.Millisecond, "stopped")
			return s
		}},
		{"program-exit", true, false, func(t *testing.T, s *TmuxServer, p *TmuxPane, _ int) *TmuxServer {
			if err := os.WriteFile(filepath.Join(s.home, "end"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			eventually(t, 15*time.Second, "the program's exit", func() bool { return !p.Status().Running() })
			return s
		}},
		{"kill-server-noticed", false, false, func(t *testing.T, s *TmuxServer, p *TmuxPane, _ int) *TmuxServer {
			_ = exec.Command("tmux", "-L", s.Socket, "kill-server").Run()
			return s
		}},
		{"kill-server-next-start", false, false, func(t *testing.T, s *TmuxServer, p *TmuxPane, _ int) *TmuxServer {
			// The supervisor is gone (its poller with it), then the server.
			s.Close()
			_ = exec.Command("tmux", "-L", s.Socket, "kill-server").Run()
			return restart(t, s)
		}},
		{"keeper-killed-next-start", false, true, func(t *testing.T, s *TmuxServer, p *TmuxPane, wrapper int) *TmuxServer {
			// Recorded: the program (bash, which became the last sleep),
			// its two children, and the keeper.
			eventually(t, 15*time.Second, "the pane's processes recorded", func() bool {
				b, _ := os.ReadFile(s.procsFile("w-1"))
				return strings.Count(string(b), "\n") >= 4
			})
			s.Close()
			// The keeper and the wrapper killed too: all is left to init.
			for _, d := range reaper.Descendants(wrapper) {
				if d.PPID == wrapper {
					reaper.Kill(d, syscall.SIGKILL)
				}
			}
			syscall.Kill(wrapper, syscall.SIGKILL)
			_ = exec.Command("tmux", "-L", s.Socket, "kill-server").Run()
			return restart(t, s)
		}},
	}
	// join-fails: a group the wrapper cannot move into; the keeper and
	// the record stand in.
	for _, mode := range []string{"cgroup", "no-cgroup", "join-fails"} {
		for _, c := range cases {
			if c.keeper && mode == "cgroup" {
				continue
			}
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				s := tmuxServer(t)
				switch mode {
				case "cgroup":
					groupsNeeded(t, s)
				case "join-fails":
					groupsNeeded(t, s)
					s.failJoin = true
				default:
					s.noGroups = true
				}
				s.Grace = 300 * time.Millisecond
				setsidArg, nohupArg, fg := reapertest.Arg(t), reapertest.Arg(t), reapertest.Arg(t)
				end := ""
				if c.end {
					end = filepath.Join(s.home, "end")
				}
				p, wrapper := startTmuxProgram(t, s, escapingScript(setsidArg, nohupArg, fg, end))
				setsidPid := reapertest.WaitAlive(t, setsidArg)
				reapertest.WaitAlive(t, nohupArg)
				if !c.end {
					reapertest.WaitAlive(t, fg)
				}
				if sid, _ := unix.Getsid(setsidPid); sid != setsidPid {
					t.Fatalf("the setsid child is in session %d, not its own", sid)
				}
				next := c.kill(t, s, p, wrapper)
				reapertest.WaitGone(t, fg, "the program, after "+c.name)
				reapertest.WaitGone(t, setsidArg, "the setsid child, after "+c.name)
				reapertest.WaitGone(t, nohupArg, "the nohup child, after "+c.name)
				reapertest.PidGone(t, wrapper, "the wrapper sh, after "+c.name)
				eventually(t, 15*time.Second, "the pane's group and record removed", func() bool {
					_, err := os.Stat(next.procsFile("w-1"))
					return len(next.groups("")) == 0 && os.IsNotExist(err)
				})
			})
		}
	}
}

// tmux leaves its socket behind when its server exits: the server's Close
// removes a dead one, and leaves that of a server that runs.
func TestTmuxDeadSocketRemoved(t *testing.T) {
	t.Parallel()
	s := tmuxServer(t)
	startTmuxProgram(t, s, "sleep "+reapertest.Arg(t))
	path := s.SocketPath()
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the running server's socket: %v", err)
	}
	if out, err := exec.Command("tmux", "-L", s.Socket, "kill-server").CombinedOutput(); err != nil {
		t.Fatalf("tmux kill-server: %v: %s", err, out)
	}
	// The next supervisor finds it dead (once the server is gone).
	eventually(t, 15*time.Second, "the server gone", func() bool {
		c, err := net.Dial("unix", path)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	next := NewTmuxServer(s.home, testLog(t))
	next.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the dead server's socket %s is still there (%v)", path, err)
	}
}

// A PTY pane in a cgroup: what its program started ends when the program
// exits or is stopped, whatever it did to escape.
func TestPTYPaneEndEndsWhatEscaped(t *testing.T) {
	for _, stop := range []bool{false, true} {
		name := "program-exit"
		if stop {
			name = "stop"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := tmuxServer(t)
			groupsNeeded(t, s)
			setsidArg, nohupArg, fg := reapertest.Arg(t), reapertest.Arg(t), reapertest.Arg(t)
			end := filepath.Join(s.home, "end")
			if stop {
				end = ""
			}
			o := bashOpts(t)
			o.Argv = []string{"bash", "--norc", "--noprofile", "-c", escapingScript(setsidArg, nohupArg, fg, end)}
			o.Group = s.NewGroup("w-1")
			p, err := StartPTY(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			reapertest.WaitAlive(t, setsidArg)
			reapertest.WaitAlive(t, nohupArg)
			if stop {
				reapertest.WaitAlive(t, fg)
				p.Stop(300*time.Millisecond, "stopped")
			} else if err := os.WriteFile(end, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			reapertest.WaitGone(t, fg, "the program, after "+name)
			reapertest.WaitGone(t, setsidArg, "the setsid child, after "+name)
			reapertest.WaitGone(t, nohupArg, "the nohup child, after "+name)
			eventually(t, 15*time.Second, "the pane's group removed", func() bool { return len(s.groups("")) == 0 })
		})
	}
}
