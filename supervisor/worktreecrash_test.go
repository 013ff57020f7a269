package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// indexLock is the index.lock of the worktree at ws, as git names it.
func indexLock(t *testing.T, ws string) string {
	t.Helper()
	p := gitIn(t, ws, "rev-parse", "--git-path", "index.lock")
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws, p)
	}
	return p
}

// TestWorktreeCommitLock: a task's commit that finds index.lock taken
// removes a stale one (no live process holds it) and commits; one a live
// process holds is waited for, and when it stays held the task ends
// failed with the lock and its holder said (under needs-you), never done
// without its work; once the holder is gone the next task commits both.
func TestWorktreeCommitLock(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	s.git.LockWait = 500 * time.Millisecond
	repo := gitRepo(t)
	_, ws := worktreeTeam(t, s, repo, 1)
	info, _ := s.Get(ws[0])
	lock := indexLock(t, info.Workspace)

	// A stale lock: a git killed while it held it.
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := runShellTask(t, s, ws[0], "echo one > one.txt")
	if got.Status != schema.TaskDone || got.Commits != 1 || got.Files != 1 {
		t.Fatalf("with a stale lock: %s %q %+v", got.Status, got.Error, got.Work)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("the stale lock is still there: %v", err)
	}

	// A lock a live process holds open.
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sh", "-c", `exec 3>>"$1"; exec sleep 60`, "sh", lock)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { _ = holder.Process.Kill(); _ = holder.Wait() }
	t.Cleanup(stop)
	waitHeld(t, holder.Process.Pid, lock)
	got = runShellTask(t, s, ws[0], "echo two > two.txt")
	if got.Status != schema.TaskFailed || !strings.Contains(got.Error, "index.lock is held by process") ||
		!strings.Contains(got.Error, "could not be committed") || got.Branch != "" {
		t.Fatalf("with a held lock: %s %q %+v", got.Status, got.Error, got.Work)
	}
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !needs(st.NeedsYou, topology.NeedTaskFailed, got.ID) {
		t.Fatalf("the failed commit is not under needs-you: %+v", st.NeedsYou)
	}
	stop()
	got = runShellTask(t, s, ws[0], "echo three > three.txt")
	if got.Status != schema.TaskDone || got.Commits != 1 || got.Files != 2 {
		t.Fatalf("after the holder ended: %s %q %+v", got.Status, got.Error, got.Work)
	}
}

// needs reports whether attention lists kind for task id.
func needs(att []topology.Attention, kind string, id int64) bool {
	for _, a := range att {
		if a.Kind == kind && a.Task == id {
			return true
		}
	}
	return false
}

// waitHeld waits until process pid has file open.
func waitHeld(t *testing.T, pid int, file string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fds, _ := os.ReadDir(filepath.Join("/proc", itoa(int64(pid)), "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", itoa(int64(pid)), "fd", fd.Name())); l == file {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never opened %s", pid, file)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var _ = api.MergeRequest{}
