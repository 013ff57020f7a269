package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/cicy-ai/cicy-agent/pane"
)

// cli runs the built binary with its own home and returns stdout.
func cliRun(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), args...)
	cmd.Env = append(os.Environ(), "CICY_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cicy-agent %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// syncBuf collects a stream for polling.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond until it holds, for at most 20 s; a timeout's
// message shows what dump returns.
func waitFor(t *testing.T, what string, cond func() bool, dump func() string) {
	t.Helper()
	waitForWithin(t, what, 20*time.Second, cond, dump)
}

// waitForWithin is waitFor for at most limit.
func waitForWithin(t *testing.T, what string, limit time.Duration, cond func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; output so far:\n%q", what, dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAttachInATerminal attaches to a shell pane from a real terminal:
// typed keys reach the pane, the pane's size follows the terminal, and
// Ctrl-Q detaches, leaving the pane running.
func TestAttachInATerminal(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	t.Cleanup(func() { cliRun(t, home, "shutdown") })
	id := strings.TrimSpace(cliRun(t, home, "create", "a", "--type", "shell", "--backend", "pty", "--", "bash", "--norc", "--noprofile"))

	a := startAttach(t, home, id)
	tty, out := a.tty, a.out

	tok := fmt.Sprintf("att%d", rand.Int64())
	// The expansion makes the output differ from the typed command line.
	fmt.Fprintf(tty, "echo %s-$((6*7))\r", tok)
	waitFor(t, "the echoed token", func() bool { return strings.Contains(out.String(), tok+"-42") }, out.String)

	fmt.Fprint(tty, "stty size\r")
	waitFor(t, "the pane at the terminal's size", func() bool { return strings.Contains(out.String(), "30 100") }, out.String)

	if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pane resized with the terminal", func() bool {
		fmt.Fprint(tty, "stty size\r")
		time.Sleep(100 * time.Millisecond)
		return strings.Contains(out.String(), "40 120")
	}, out.String)

	a.detach(t, home, id)
	// What was typed while attached is on the pane's screen.
	if sc := cliRun(t, home, "screen", id); !strings.Contains(sc, tok+"-42") {
		t.Fatalf("screen lacks the token:\n%s", sc)
	}
}

func bytesCopy(dst *syncBuf, src *os.File) (int64, error) {
	buf := make([]byte, 4096)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			dst.Write(buf[:k])
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

// TestAttachTmuxPane: attach on a tmux pane runs tmux attach on the
// home's private server; typed keys reach the pane and Ctrl-Q detaches.
func TestAttachTmuxPane(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	t.Cleanup(func() {
		cliRun(t, home, "shutdown")
		_ = pane.NewTmuxServer(home, nil).KillServer()
	})
	id := strings.TrimSpace(cliRun(t, home, "create", "a", "--type", "shell", "--backend", "tmux", "--", "bash", "--norc", "--noprofile"))
	a := startAttach(t, home, id)
	tty, out := a.tty, a.out
	tok := fmt.Sprintf("tmx%d", rand.Int64())
	waitFor(t, "the token typed through tmux attach", func() bool {
		fmt.Fprintf(tty, "echo %s-$((6*7))\r", tok)
		time.Sleep(200 * time.Millisecond)
		return strings.Contains(cliRun(t, home, "screen", id), tok+"-42")
	}, out.String)
	a.detach(t, home, id) // Ctrl-Q is bound to detach-client on the private server
}

// attachRun is `cicy-agent attach` running in a real terminal of the test.
type attachRun struct {
	cmd    *exec.Cmd
	tty    *os.File
	out    *syncBuf
	copied chan struct{}
}

func startAttach(t *testing.T, home, id string) *attachRun {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "attach", id)
	cmd.Env = append(os.Environ(), "CICY_HOME="+home, "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	a := &attachRun{cmd: cmd, tty: tty, out: &syncBuf{}, copied: make(chan struct{})}
	go func() { defer close(a.copied); _, _ = bytesCopy(a.out, tty) }()
	return a
}

// detach types Ctrl-Q and checks that attach ends well, says so, and
// leaves the pane running.
func (a *attachRun) detach(t *testing.T, home, id string) {
	t.Helper()
	fmt.Fprint(a.tty, "\x11")
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("attach ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		t.Fatalf("Ctrl-Q did not detach; output:\n%q", a.out.String())
	}
	// Read what attach wrote last before closing the terminal: the copy
	// ends at EIO once attach, the terminal's only user, has exited.
	// (Closing it first could drop the detach message still buffered.)
	select {
	case <-a.copied:
	case <-time.After(10 * time.Second):
		a.tty.Close()
		<-a.copied
	}
	a.tty.Close()
	if !strings.Contains(a.out.String(), "[detached from "+id+"]") {
		t.Fatalf("no detach message in %q", a.out.String())
	}
	if ls := cliRun(t, home, "ls", "--json"); strings.Contains(ls, `"state": "exited"`) {
		t.Fatalf("the pane did not survive the detach:\n%s", ls)
	}
}
