package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// repo makes a git repository with one commit on main, and returns it.
func repo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	git(t, "", "init", "-q", "-b", "main", dir)
	write(t, dir, "a.txt", "one\ntwo\nthree\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// git runs the real git as a user would (with an identity).
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@x"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// add makes pane id's worktree of r.
func add(t *testing.T, r, id string) Worktree {
	t.Helper()
	w, err := Git{}.New(context.Background(), r, filepath.Join(t.TempDir(), id), BranchFor("", id))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAdd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := repo(t)
	sub := filepath.Join(r, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "w-1")
	w, err := Git{}.New(ctx, sub, path, "cicy/w-1")
	if err != nil {
		t.Fatal(err)
	}
	if w.Repo != r || w.Target != "main" || w.Branch != "cicy/w-1" || w.Base != git(t, r, "rev-parse", "HEAD") {
		t.Fatalf("worktree %+v", w)
	}
	if read(t, filepath.Join(path, "a.txt")) != "one\ntwo\nthree\n" {
		t.Fatal("the worktree lacks the repository's files")
	}
	if got := git(t, path, "branch", "--show-current"); got != "cicy/w-1" {
		t.Fatalf("the worktree is on %q", got)
	}
	if st := git(t, r, "status", "--porcelain"); st != "" {
		t.Fatalf("the repository's tree changed: %q", st)
	}
	// Adding it again at the same place adopts it; elsewhere is refused.
	if again, err := (Git{}).New(ctx, r, path, "cicy/w-1"); err != nil || again.Base != w.Base {
		t.Fatalf("adopting: %+v %v", again, err)
	}
	if _, err := (Git{}).New(ctx, r, filepath.Join(t.TempDir(), "x"), "cicy/w-1"); !errors.Is(err, ErrBranchUse) {
		t.Fatalf("a taken branch: %v", err)
	}
}

func TestAddRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "bare.git")
	git(t, "", "init", "-q", "--bare", bare)
	empty := filepath.Join(t.TempDir(), "empty")
	git(t, "", "init", "-q", empty)
	detached := repo(t)
	git(t, detached, "checkout", "-q", "--detach")
	for _, c := range []struct {
		name, dir string
		want      error
	}{
		{"not a repository", t.TempDir(), ErrNotRepo},
		{"missing", filepath.Join(t.TempDir(), "nope"), ErrNotRepo},
		{"bare", bare, ErrBare},
		{"no commit", empty, ErrNoCommit},
		{"detached", detached, ErrDetached},
	} {
		_, err := Git{}.New(ctx, c.dir, filepath.Join(t.TempDir(), "w"), "cicy/w-1")
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := (Git{Bin: filepath.Join(t.TempDir(), "git")}).New(ctx, detached, t.TempDir(), "b"); err == nil {
		t.Error("a missing git was not an error")
	}
}

func TestCommitAndStat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := repo(t)
	w := add(t, r, "w-1")
	g := Git{}
	// Nothing changed: no commit.
	head, made, err := g.Commit(ctx, w.Path, "task 1: nothing", "w-1", nil)
	if err != nil || made || head != w.Base {
		t.Fatalf("empty commit: %s %v %v", head, made, err)
	}
	write(t, w.Path, "a.txt", "one\nTWO\nthree\nfour\n")
	write(t, w.Path, "dir/new.txt", "x\n")
	write(t, w.Path, "CLAUDE.md", "guidance\n")
	head, made, err = g.Commit(ctx, w.Path, "task 2: change a\n\nCicy-Task: 2\n", "w-1", []string{"CLAUDE.md"})
	if err != nil || !made {
		t.Fatalf("commit: %v %v", made, err)
	}
	if got := git(t, w.Path, "log", "-1", "--format=%an|%s|%b"); got != "w-1|task 2: change a|Cicy-Task: 2" {
		t.Errorf("commit %q", got)
	}
	if files := git(t, w.Path, "show", "--name-only", "--format=", head); files != "a.txt\ndir/new.txt" {
		t.Errorf("committed %q", files)
	}
	c, err := g.Stat(ctx, w.Path, w.Base, head)
	if err != nil {
		t.Fatal(err)
	}
	if c.Commits != 1 || c.Files != 2 || c.Added != 3 || c.Deleted != 1 {
		t.Errorf("stat %+v", c)
	}
	workerCommits(t, w, head)
}

// workerCommits: a worker that committed itself keeps its commits; the
// range from head counts them.
func workerCommits(t *testing.T, w Worktree, head string) {
	t.Helper()
	ctx := context.Background()
	g := Git{}
	write(t, w.Path, "b.txt", "b\n")
	git(t, w.Path, "add", "b.txt")
	git(t, w.Path, "commit", "-q", "-m", "the worker's own")
	write(t, w.Path, "c.txt", "c\n")
	head2, made, err := g.Commit(ctx, w.Path, "task 3", "w-1", []string{"CLAUDE.md"})
	if err != nil || !made {
		t.Fatal(made, err)
	}
	if c, _ := g.Stat(ctx, w.Path, head, head2); c.Commits != 2 || c.Files != 2 {
		t.Errorf("range %+v", c)
	}
	d, err := g.Diff(ctx, w.Path, w.Base, head2, true)
	if err != nil || !strings.Contains(d, "4 files changed") {
		t.Errorf("diff --stat %q %v", d, err)
	}
	if clean, _ := g.Clean(ctx, w.Path); clean {
		t.Error("the kept-out guidance file should leave the worktree unclean")
	}
	if ahead, behind, err := g.Ahead(ctx, w.Repo, "main", w.Branch); ahead != 3 || behind != 0 || err != nil {
		t.Errorf("ahead %d behind %d %v", ahead, behind, err)
	}
}

// at is a base that is rev.
func at(rev string) func() string { return func() string { return rev } }

// TestCommitTask: a task's commit and its range in one call — one commit
// on base (its stat read alongside), the worker's own commits counted,
// and no change no commit.
func TestCommitTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := repo(t)
	w := add(t, r, "w-1")
	g := Git{}
	write(t, w.Path, "a.txt", "one\nTWO\nthree\nfour\n")
	c, made, err := g.CommitTask(ctx, w.Path, at(w.Base), "task 1\n\nCicy-Task: 1\n", "w-1", nil)
	if err != nil || !made || c.Base != w.Base || c.Commits != 1 || c.Files != 1 || c.Added != 2 || c.Deleted != 1 {
		t.Fatalf("one commit: %+v %v %v", c, made, err)
	}
	if got := git(t, w.Path, "log", "-1", "--format=%an <%ae>|%cn|%P|%B"); got != "w-1 <w-1@cicy-agent.invalid>|w-1|"+w.Base+"|task 1\n\nCicy-Task: 1" {
		t.Errorf("commit %q", got)
	}
	if got := git(t, w.Path, "rev-parse", "cicy/w-1"); got != c.Head {
		t.Errorf("the branch is at %s, not the commit made %s", got, c.Head)
	}
	if same, made, err := g.CommitTask(ctx, w.Path, at(c.Head), "task 2", "w-1", nil); err != nil || made || same.Head != c.Head || same.Commits != 0 {
		t.Fatalf("no change: %+v %v %v", same, made, err)
	}
	write(t, w.Path, "b.txt", "b\n")
	git(t, w.Path, "add", "b.txt")
	git(t, w.Path, "commit", "-q", "-m", "the worker's own")
	write(t, w.Path, "c.txt", "c\n")
	if own, _, err := g.CommitTask(ctx, w.Path, at(c.Head), "task 3", "w-1", nil); err != nil || own.Commits != 2 || own.Files != 2 {
		t.Fatalf("own commits: %+v %v", own, err)
	}
}

// TestCommitTaskMerging: a merge the worker left half done (resolved,
// not committed) becomes the merge commit.
func TestCommitTaskMerging(t *testing.T) {
	t.Parallel()
	r := repo(t)
	w := add(t, r, "w-1")
	write(t, r, "m.txt", "m\n")
	git(t, r, "add", "m.txt")
	git(t, r, "commit", "-q", "-m", "on main")
	git(t, w.Path, "merge", "-q", "--no-ff", "--no-commit", "main")
	m, made, err := Git{}.CommitTask(context.Background(), w.Path, at(w.Base), "task 1", "w-1", nil)
	if err != nil || !made || m.Commits != 2 || m.Files != 1 {
		t.Fatal(m, made, err)
	}
	if parents := strings.Fields(git(t, w.Path, "log", "-1", "--format=%P", m.Head)); len(parents) != 2 {
		t.Errorf("the merge in progress made %d parents", len(parents))
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := Git{}
	r := repo(t)
	w1, w2, w3 := add(t, r, "w-1"), add(t, r, "w-2"), add(t, r, "w-3")
	write(t, w1.Path, "one.txt", "1\n")
	h1, _, _ := g.Commit(ctx, w1.Path, "task 1", "w-1", nil)
	m, err := g.Merge(ctx, r, h1, "", "merge w-1", "w-0")
	if err != nil || !m.FastForward || m.Head != h1 || m.Into != "main" {
		t.Fatalf("fast-forward: %+v %v", m, err)
	}
	if read(t, filepath.Join(r, "one.txt")) != "1\n" {
		t.Fatal("the checkout did not get the change")
	}
	if m, err := g.Merge(ctx, r, h1, "", "again", "w-0"); err != nil || !m.Already {
		t.Fatalf("again: %+v %v", m, err)
	}
	write(t, w2.Path, "two.txt", "2\n")
	h2, _, _ := g.Commit(ctx, w2.Path, "task 2", "w-2", nil)
	m, err = g.Merge(ctx, r, h2, "", "merge cicy/w-2", "w-0")
	if err != nil || m.FastForward {
		t.Fatalf("merge commit: %+v %v", m, err)
	}
	if parents, subject, _ := strings.Cut(git(t, r, "log", "-1", "--format=%P|%s"), "|"); subject != "merge cicy/w-2" || len(strings.Fields(parents)) != 2 {
		t.Errorf("merge commit %q %q", parents, subject)
	}
	// A conflict changes nothing and names the file.
	write(t, r, "a.txt", "main's\n")
	git(t, r, "commit", "-q", "-am", "main edits a")
	write(t, w3.Path, "a.txt", "w-3's\n")
	h3, _, _ := g.Commit(ctx, w3.Path, "task 3", "w-3", nil)
	write(t, r, "untracked.txt", "mine\n")
	before := git(t, r, "rev-parse", "HEAD")
	m, err = g.Merge(ctx, r, h3, "", "merge cicy/w-3", "w-0")
	if !errors.Is(err, ErrConflict) || !slices.Equal(m.Conflicts, []string{"a.txt"}) {
		t.Fatalf("conflict: %+v %v", m, err)
	}
	if git(t, r, "rev-parse", "HEAD") != before || git(t, r, "status", "--porcelain") != "?? untracked.txt" || read(t, filepath.Join(r, "a.txt")) != "main's\n" {
		t.Fatal("a conflict changed the master's checkout")
	}
	// A dirty checkout is refused.
	write(t, r, "one.txt", "changed\n")
	write(t, w1.Path, "one-more.txt", "x\n")
	h4, _, _ := g.Commit(ctx, w1.Path, "task 4", "w-1", nil)
	if _, err := g.Merge(ctx, r, h4, "", "m", "w-0"); !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "one.txt") {
		t.Fatalf("dirty: %v", err)
	}
	if read(t, filepath.Join(r, "one.txt")) != "changed\n" {
		t.Fatal("the user's change was touched")
	}
}

func TestMergeIntoAnotherBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := Git{}
	r := repo(t)
	git(t, r, "branch", "release")
	w := add(t, r, "w-1")
	write(t, w.Path, "x.txt", "x\n")
	h, _, _ := g.Commit(ctx, w.Path, "task 1", "w-1", nil)
	m, err := g.Merge(ctx, r, h, "release", "m", "w-0")
	if err != nil || !m.FastForward || git(t, r, "rev-parse", "release") != h {
		t.Fatalf("fast-forward release: %+v %v", m, err)
	}
	git(t, r, "checkout", "-q", "release")
	write(t, r, "y.txt", "y\n")
	git(t, r, "add", "y.txt")
	git(t, r, "commit", "-q", "-m", "release moves")
	git(t, r, "checkout", "-q", "main")
	write(t, w.Path, "z.txt", "z\n")
	h2, _, _ := g.Commit(ctx, w.Path, "task 2", "w-1", nil)
	m, err = g.Merge(ctx, r, h2, "release", "merge cicy/w-1 into release", "w-0")
	if err != nil || m.FastForward {
		t.Fatalf("merge commit on release: %+v %v", m, err)
	}
	if files := git(t, r, "ls-tree", "--name-only", "release"); files != "a.txt\nx.txt\ny.txt\nz.txt" {
		t.Errorf("release holds %q", files)
	}
	if st := git(t, r, "status", "--porcelain"); st != "" || git(t, r, "branch", "--show-current") != "main" {
		t.Errorf("the checkout changed: %q", st)
	}
	if _, err := g.Merge(ctx, r, h2, "nope", "m", "w-0"); err == nil {
		t.Error("a missing branch merged")
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := Git{}
	r := repo(t)
	w := add(t, r, "w-1")
	write(t, w.Path, "x.txt", "x\n")
	if err := g.Remove(ctx, w); !errors.Is(err, ErrDirty) {
		t.Fatalf("dirty: %v", err)
	}
	h, _, _ := g.Commit(ctx, w.Path, "task 1", "w-1", nil)
	if err := g.Remove(ctx, w); !errors.Is(err, ErrNotMerged) {
		t.Fatalf("unmerged: %v", err)
	}
	if _, err := os.Stat(w.Path); err != nil {
		t.Fatal("a refused removal removed the worktree")
	}
	if _, err := g.Merge(ctx, r, h, "", "m", "w-0"); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Path); !os.IsNotExist(err) || git(t, r, "branch", "--list", "cicy/*") != "" {
		t.Fatal("the worktree or branch is still there")
	}
	// A worktree deleted by hand is pruned.
	w2 := add(t, r, "w-2")
	if err := os.RemoveAll(w2.Path); err != nil {
		t.Fatal(err)
	}
	if l, _ := g.List(ctx, r); len(l) != 2 || !l[1].Prunable {
		t.Fatalf("list %+v", l)
	}
	if err := g.Remove(ctx, w2); err != nil {
		t.Fatal(err)
	}
	if l, _ := g.List(ctx, r); len(l) != 1 {
		t.Fatalf("after prune %+v", l)
	}
}

// TestOwnCommits: a branch's commits that no other branch has.
func TestOwnCommits(t *testing.T) {
	t.Parallel()
	r := repo(t)
	g := Git{}
	ctx := context.Background()
	git(t, r, "branch", "cicy/x/w-1")
	if n, err := g.OwnCommits(ctx, r, "cicy/x/w-1"); err != nil || n != 0 {
		t.Fatalf("a branch at main: %d %v", n, err)
	}
	git(t, r, "checkout", "-q", "cicy/x/w-1")
	git(t, r, "commit", "-q", "--allow-empty", "-m", "own")
	if n, err := g.OwnCommits(ctx, r, "cicy/x/w-1"); err != nil || n != 1 {
		t.Fatalf("a branch with a commit of its own: %d %v", n, err)
	}
	head := git(t, r, "rev-parse", "HEAD")
	if n, err := g.OwnCommits(ctx, r, head); err != nil || n != 0 {
		t.Fatalf("a commit on a branch: %d %v", n, err)
	}
}

// TestCommitLock: a stale index.lock (no live process holds it) is
// removed and the commit made; one a live process holds open is waited
// for, then the commit fails with ErrLocked naming the lock and holder.
func TestCommitLock(t *testing.T) {
	t.Parallel()
	r := repo(t)
	w := add(t, r, "w-1")
	g := Git{LockWait: 300 * time.Millisecond}
	ctx := context.Background()
	lock := filepath.Join(r, ".git", "worktrees", filepath.Base(w.Path), "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, w.Path, "b.txt", "b\n")
	if _, made, err := g.Commit(ctx, w.Path, "one", "w-1", nil); err != nil || !made {
		t.Fatalf("with a stale lock: %v %v", made, err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sh", "-c", `exec 3>>"$1"; echo open; exec sleep 60`, "sh", lock)
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if _, err := out.Read(make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	write(t, w.Path, "c.txt", "c\n")
	_, _, err := g.Commit(ctx, w.Path, "two", "w-1", nil)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "index.lock is held by process "+strconv.Itoa(holder.Process.Pid)) {
		t.Fatalf("with a held lock: %v", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatal("a held lock was removed")
	}
}

// TestMergeUntracked: a merge that would overwrite untracked files of
// the checkout changes nothing and names every one of them.
func TestMergeUntracked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := Git{}
	r := repo(t)
	w := add(t, r, "w-1")
	write(t, w.Path, "x.txt", "x\n")
	write(t, w.Path, "y.txt", "y\n")
	h, _, _ := g.Commit(ctx, w.Path, "task 1", "w-1", nil)
	write(t, r, "x.txt", "mine\n")
	write(t, r, "y.txt", "mine too\n")
	before := git(t, r, "rev-parse", "HEAD")
	for _, ff := range []bool{true, false} {
		if !ff {
			write(t, r, "a.txt", "main's\n")
			git(t, r, "commit", "-q", "-am", "main moves")
			before = git(t, r, "rev-parse", "HEAD")
		}
		_, err := g.Merge(ctx, r, h, "", "merge", "w-0")
		var u *UntrackedError
		if !errors.As(err, &u) || !slices.Equal(u.Files, []string{"x.txt", "y.txt"}) || !strings.Contains(err.Error(), "x.txt, y.txt") {
			t.Fatalf("fast-forward %v: %v", ff, err)
		}
		if git(t, r, "rev-parse", "HEAD") != before || read(t, filepath.Join(r, "y.txt")) != "mine too\n" {
			t.Fatal("the refused merge changed the checkout")
		}
	}
}

// withSubmodule makes repo r hold the repository lib as the submodule
// lib, committed; it returns lib.
func withSubmodule(t *testing.T, r string) string {
	t.Helper()
	lib := filepath.Join(t.TempDir(), "lib")
	git(t, "", "init", "-q", "-b", "main", lib)
	write(t, lib, "l.txt", "l\n")
	git(t, lib, "add", "-A")
	git(t, lib, "commit", "-q", "-m", "lib")
	git(t, r, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
	git(t, r, "commit", "-q", "-m", "the submodule")
	return lib
}

// TestCommitSubmodule: a submodule whose HEAD moved is committed as its
// new commit; changes inside it that it has not committed are named
// (DirtySubmodules), since no commit of the checkout holds them.
func TestCommitSubmodule(t *testing.T) {
	t.Parallel()
	r := repo(t)
	withSubmodule(t, r)
	w := add(t, r, "w-1")
	git(t, w.Path, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
	sub := filepath.Join(w.Path, "lib")
	g := Git{}
	ctx := context.Background()
	if subs, err := g.DirtySubmodules(ctx, w.Path); err != nil || len(subs) != 0 {
		t.Fatalf("a clean submodule: %v %v", subs, err)
	}
	write(t, sub, "l.txt", "l2\n")
	git(t, sub, "commit", "-q", "-am", "moved")
	moved := git(t, sub, "rev-parse", "HEAD")
	write(t, sub, "l.txt", "l3, not committed\n")
	write(t, sub, "new.txt", "untracked\n")
	head, made, err := g.Commit(ctx, w.Path, "task 1", "w-1", nil)
	if err != nil || !made {
		t.Fatalf("commit: %v %v", made, err)
	}
	if got := git(t, w.Path, "rev-parse", head+":lib"); got != moved {
		t.Fatalf("the commit records lib at %s, want its new HEAD %s", got, moved)
	}
	if subs, err := g.DirtySubmodules(ctx, w.Path); err != nil || !slices.Equal(subs, []string{"lib"}) {
		t.Fatalf("dirty submodules: %v %v", subs, err)
	}
}
