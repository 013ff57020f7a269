package cicy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/reaper"
	"github.com/cicy-ai/cicy-agent/reaper/reapertest"
)

// startGroup starts bash -c script in a process group of its own with env
// added, and returns it; the test kills the group at its end.
func startGroup(t *testing.T, script string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	return cmd
}

// waitPIDFile reads the pid a script wrote to a file.
func waitPIDFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func alive(pid int) bool { return procStartTime(pid) != "" && !zombie(pid) }

func zombie(pid int) bool {
	f := procStat(pid)
	return f != nil && f[0] == "Z"
}

// waitDead waits until pid is dead (gone or a zombie).
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A tool run whose leader is gone (reaped) while a child it started runs
// on: the next start kills the child, found by the run's marker. A process
// that only has the recorded group's number (a reused pid) but not the
// marker is left alone.
func TestLeftoverToolProcessesKilledWithoutTheirLeader(t *testing.T) {
	dir := t.TempDir()
	run := newToolRun(dir)
	pidFile := filepath.Join(t.TempDir(), "child")
	leader := startGroup(t, "sleep 300 & echo $! >"+pidFile, run.env()...)
	run.started(leader.Process.Pid)
	if err := leader.Wait(); err != nil { // the leader exits and is reaped
		t.Fatal(err)
	}
	child := waitPIDFile(t, pidFile)
	if !alive(child) || procGroup(child) != leader.Process.Pid {
		t.Fatalf("the child %d is not running in the tool's group", child)
	}

	if !killLeftoverToolGroup(dir) {
		t.Fatal("killLeftoverToolGroup killed nothing")
	}
	waitDead(t, child)
	if _, err := os.Stat(toolGroupFile(dir)); !os.IsNotExist(err) {
		t.Fatalf("the record is still there: %v", err)
	}

	// A record whose group now belongs to a stranger (no marker).
	other := t.TempDir()
	stranger := startGroup(t, "exec sleep 301")
	stale := &toolRun{dir: other, marker: "0123456789abcdef0123456789abcdef"}
	stale.started(stranger.Process.Pid)
	// The start time no longer matches either, as after a reuse.
	b, _ := os.ReadFile(toolGroupFile(other))
	f := strings.Fields(string(b))
	_ = os.WriteFile(toolGroupFile(other), []byte(f[0]+" 1 "+f[2]+"\n"), 0o600)
	if killLeftoverToolGroup(other) {
		t.Fatal("killed a group that does not carry the marker")
	}
	if !alive(stranger.Process.Pid) {
		t.Fatal("the stranger was killed")
	}
}

// A tool run whose reaper still runs at the next start (the death signal
// of its supervisor did not end it): the next start ends the reaper's
// whole tree, even a process that left the group and cleared its
// environment, so that it carries neither the group nor the marker.
func TestLeftoverReaperTreeKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	arg := reapertest.Arg(t)
	run := newToolRun(dir)
	r, err := reaper.Start(reaper.Spec{Argv: []string{"sh", "-c", "env -i setsid sleep " + arg + " >/dev/null 2>&1 &"}, Env: append(os.Environ(), run.env()...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.End)
	run.started(r.Pid())
	if _, err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := reapertest.WaitAlive(t, arg)
	if procGroup(pid) == r.Pid() {
		t.Fatal("the sleep did not leave the group")
	}
	if !killLeftoverToolGroup(dir) {
		t.Fatal("killLeftoverToolGroup killed nothing")
	}
	reapertest.WaitGone(t, arg, "after the next start's cleanup")
}
