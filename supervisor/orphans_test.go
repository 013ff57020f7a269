package supervisor

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/reaper/reapertest"
)

// A shell pane's program that ignores SIGHUP and SIGTERM and left two
// children (one in a session of its own, one under nohup) outlives a
// `tmux kill-server` done while no supervisor ran: the next supervisor
// ends them all at its start, and removes the socket tmux left.
func TestRestartEndsWhatAKilledTmuxServerLeft(t *testing.T) {
	t.Parallel()
	if !pane.TmuxAvailable() {
		t.Fatal("tmux 3.0 or newer is needed (the CI installs it)")
	}
	h, store := openTestHome(t, filepath.Join(t.TempDir(), "home"))
	cfg := Config{Home: h, Log: quietLog(), StopGrace: 300 * time.Millisecond}
	s, err := New(context.Background(), cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	setsidArg, nohupArg, fg := reapertest.Arg(t), reapertest.Arg(t), reapertest.Arg(t)
	script := "trap '' HUP TERM; setsid sleep " + setsidArg + " >/dev/null 2>&1 & nohup sleep " + nohupArg + " >/dev/null 2>&1 & sleep " + fg
	// Restart never: a pane coming back would start a new tmux server on
	// the same socket, which this test must tell from the dead one's.
	if _, err := s.Create(context.Background(), api.CreateRequest{Title: "sh", Type: "shell", Backend: "tmux", Restart: "never",
		Command: []string{"bash", "--norc", "--noprofile", "-c", script}}); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{setsidArg, nohupArg, fg} {
		reapertest.WaitAlive(t, arg)
	}
	socket := s.tmux.Socket
	s.Close() // tmux panes outlive it, as they outlive a kill -9
	if out, err := exec.Command("tmux", "-L", socket, "kill-server").CombinedOutput(); err != nil {
		t.Fatalf("tmux kill-server: %v: %s", err, out)
	}
	if _, err := os.Stat(s.tmux.SocketPath()); err != nil {
		t.Fatalf("tmux left no socket: %v", err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("unix", s.tmux.SocketPath())
		if err != nil {
			break // the server is gone
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the killed tmux server still answers on its socket")
		}
	}
	next, err := New(context.Background(), cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		next.Close()
		_ = next.tmux.KillServer()
	})
	for _, arg := range []string{setsidArg, nohupArg, fg} {
		reapertest.WaitGone(t, arg, "after the restart")
	}
	// Nor is the dead server's socket left in the tmux socket folder.
	if _, err := os.Stat(s.tmux.SocketPath()); !os.IsNotExist(err) {
		t.Fatalf("the dead tmux server's socket is still there (%v)", err)
	}
}
