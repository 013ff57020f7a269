package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
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
	s.trees.Git.LockWait = 500 * time.Millisecond
	repo := gitRepo(t)
	_, ws := worktreeTeam(t, s, repo, 1)
	info, _ := s.Get(ws[0])
	lock := indexLock(t, info.Workspace)

	// A stale lock: a git killed while it held it.
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := runShellTask(t, s, ws[0], "echo one > one.txt")
	if got.Status != api.TaskDone || got.Commits != 1 || got.Files != 1 {
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
	if got.Status != api.TaskFailed || !strings.Contains(got.Error, "index.lock is held by process") ||
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
	if got.Status != api.TaskDone || got.Commits != 1 || got.Files != 2 {
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

// TestWorktreeHalfMadeCreate: what a create --worktree cut short by a
// kill -9 leaves — the branch, a registered worktree, its folder, no
// pane — is removed by the next start, so the next pane (which gets the
// same id) is created; a killed pane's kept work is not touched; and two
// homes' workers in one repository never share a branch.
func TestWorktreeHalfMadeCreate(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "home")
	s := openSupervisor(t, root, nil)
	repo := gitRepo(t)
	ctx := context.Background()
	create := func(s *Supervisor) (string, error) {
		p, err := s.Create(ctx, api.CreateRequest{Title: "dev", Type: "shell", Worktree: true, Workspace: repo, Backend: "pty",
			Command: []string{"bash", "--norc", "--noprofile"}})
		if err == nil {
			t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
		}
		return p.ID, err
	}
	// The create the crash cut short: its worktree made, its row never
	// stored (the id's counter with it).
	pw, err := s.trees.ForCreate(ctx, api.CreateRequest{Workspace: repo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.trees.Add("w-1", s.cfg.Home.Workspace("w-1"), pw); err != nil {
		t.Fatal(err)
	}
	// A pane killed earlier whose unmerged work was kept.
	kept := s.cfg.Home.Workspace("w-7")
	if _, err := s.trees.Add("w-7", kept, pw); err != nil {
		t.Fatal(err)
	}
	gitIn(t, kept, "commit", "-q", "--allow-empty", "-m", "the work of w-7")

	// Another home on the same repository: its w-1 has a branch of its own.
	other, _ := newTestSupervisor(t, nil)
	if id, err := create(other); err != nil || id != "w-1" {
		t.Fatalf("the other home's first worker: %q %v", id, err)
	}

	s.Close()
	_ = s.tmux.KillServer()
	s = openSupervisor(t, root, nil)
	t.Cleanup(func() { s.Close(); _ = s.tmux.KillServer() })
	id, err := create(s)
	if err != nil || id != "w-1" {
		t.Fatalf("the create after the cut-short one: %q %v", id, err)
	}
	tag, _ := s.trees.Tag()
	otherTag, _ := other.trees.Tag()
	if tag == otherTag {
		t.Fatalf("two homes share the tag %s", tag)
	}
	want := []string{"cicy/" + otherTag + "/w-1", "cicy/" + tag + "/w-1", "cicy/" + tag + "/w-7"}
	slices.Sort(want)
	if got := strings.Fields(gitIn(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/cicy/")); !slices.Equal(got, want) {
		t.Fatalf("branches %v, want %v", got, want)
	}
	if got := gitIn(t, kept, "log", "-1", "--format=%s"); got != "the work of w-7" {
		t.Fatalf("the kept work: %q", got)
	}
}

// TestWorktreeGoneBranch: a killed pane's unmerged branch whose folder
// was deleted by hand and pruned is still listed, and diff and merge
// take it by pane id or by branch; a merge of a pane says its work.
func TestWorktreeGoneBranch(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	repo := gitRepo(t)
	_, ws := worktreeTeam(t, s, repo, 1)
	ctx := context.Background()
	runShellTask(t, s, ws[0], "echo x > x.txt; echo y > y.txt")
	branch := killAndRemoveWorktree(t, s, repo, ws[0])
	l := s.Worktrees(ctx, false)
	if len(l) != 1 || l[0].Pane != ws[0] || l[0].Branch != branch || !l[0].Gone || !l[0].Missing || l[0].Ahead != 1 {
		t.Fatalf("worktrees: %+v", l)
	}
	if d, err := s.Diff(ctx, branch, true); err != nil || d.Work.Files != 2 {
		t.Fatalf("diff by branch: %+v %v", d, err)
	}
	m, err := s.Merge(ctx, api.MergeRequest{Target: ws[0]})
	if err != nil || !m.FastForward {
		t.Fatalf("merge of a gone pane: %+v %v", m, err)
	}
	checkGoneMergeWork(t, m, branch)
	if l = s.Worktrees(ctx, true); len(l) != 0 {
		t.Fatalf("after merge and prune: %+v", l)
	}
	if _, err := s.Merge(ctx, api.MergeRequest{Target: "cicy/nothing/w-9"}); err == nil || !strings.Contains(err.Error(), "no worker branch") {
		t.Fatalf("an unknown branch: %v", err)
	}
}

// killAndRemoveWorktree kills the worktree worker id, deletes its
// worktree's folder by hand and lets git prune it, and returns the
// worker's branch (left, with its work, in repo).
func killAndRemoveWorktree(t *testing.T, s *Supervisor, repo, id string) string {
	t.Helper()
	info, _ := s.Get(id)
	if _, err := s.KillPane(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(info.Workspace); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "worktree", "prune")
	return info.Worktree.Branch
}

// checkGoneMergeWork checks the work a merge of TestWorktreeGoneBranch's
// gone worker says: one commit of branch adding two files, up to the
// merge's head, from a base.
func checkGoneMergeWork(t *testing.T, m api.MergeResult, branch string) {
	t.Helper()
	if w := m.Work; w.Branch != branch || w.Commits != 1 || w.Files != 2 || w.Added != 2 || w.Head != m.Head || w.Base == "" {
		t.Fatalf("the merge's work: %+v", w)
	}
}

// TestMergeTextSendBack: the conflict's words name how to send it back.
func TestMergeTextSendBack(t *testing.T) {
	t.Parallel()
	m := api.MergeResult{Branch: "cicy/x/w-2", Into: "main", Conflicts: []string{"a.txt"}}
	if got := api.MergeText(m, "'cicy-agent merge w-2 --send-back'"); !strings.Contains(got, "('cicy-agent merge w-2 --send-back' gives the worker the rebase)") {
		t.Fatal(got)
	}
}

// TestWorktreeRewrittenHistory: a worker that reset its branch back over
// recorded task commits is merged with a warning naming those tasks.
func TestWorktreeRewrittenHistory(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	repo := gitRepo(t)
	_, ws := worktreeTeam(t, s, repo, 1)
	ctx := context.Background()
	one := runShellTask(t, s, ws[0], "echo 1 > one.txt")
	two := runShellTask(t, s, ws[0], "echo 2 > two.txt")
	three := runShellTask(t, s, ws[0], "echo 3 > three.txt")
	info, _ := s.Get(ws[0])
	gitIn(t, info.Workspace, "reset", "-q", "--hard", "HEAD~2")
	m, err := s.Merge(ctx, api.MergeRequest{Target: ws[0]})
	if err != nil || len(m.Warnings) != 1 {
		t.Fatalf("merge: %+v %v", m, err)
	}
	if m.Work.Commits != 1 || m.Work.Files != 1 || m.Work.Head != gitIn(t, info.Workspace, "rev-parse", "HEAD") {
		t.Fatalf("the merge's work: %+v", m.Work)
	}
	w := m.Warnings[0]
	if strings.Contains(w, "task "+itoa(one.ID)+" ") || !strings.Contains(w, "task "+itoa(two.ID)+" (") ||
		!strings.Contains(w, "task "+itoa(three.ID)+" (") || !strings.Contains(w, "are no longer on "+m.Branch) {
		t.Fatalf("the warning: %q", w)
	}
	if !strings.Contains(api.MergeText(m, ""), "\nwarning: the recorded commits of task") {
		t.Fatalf("the text: %q", api.MergeText(m, ""))
	}
}

// TestWorktreeSubmodule: a task that moved a submodule's HEAD records
// the new pointer in its commit; changes inside the submodule that no
// commit holds are said in the task's reason and by diff.
func TestWorktreeSubmodule(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	repo := gitRepo(t)
	lib := filepath.Join(t.TempDir(), "lib")
	gitIn(t, "", "init", "-q", "-b", "main", lib)
	gitIn(t, lib, "commit", "-q", "--allow-empty", "-m", "lib")
	gitIn(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
	gitIn(t, repo, "commit", "-q", "-m", "the submodule")
	_, ws := worktreeTeam(t, s, repo, 1)
	G := "git -c user.name=w -c user.email=w@x -c protocol.file.allow=always"
	got := runShellTask(t, s, ws[0], G+" submodule update -q --init && cd lib && echo 1 > one.txt && "+G+" add one.txt && "+G+" commit -qm one && echo 2 > two.txt")
	if got.Status != api.TaskDone || got.Commits != 1 || got.Files != 1 {
		t.Fatalf("the task: %s %q %+v", got.Status, got.Error, got.Work)
	}
	if !strings.Contains(got.Reason, "not committed: the changes inside the submodule lib") {
		t.Fatalf("the task's reason says nothing of the submodule: %q", got.Reason)
	}
	info, _ := s.Get(ws[0])
	if moved := gitIn(t, filepath.Join(info.Workspace, "lib"), "rev-parse", "HEAD"); gitIn(t, repo, "rev-parse", got.Head+":lib") != moved {
		t.Fatal("the task's commit does not record the submodule's new commit")
	}
	d, err := s.Diff(context.Background(), itoa(got.ID), false)
	if err != nil || len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "submodule lib") || !strings.Contains(d.Diff, "Subproject commit") {
		t.Fatalf("diff: %+v %v", d, err)
	}
}
