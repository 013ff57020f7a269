package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// waitFile polls until path exists (want) or is gone (!want).
func waitFile(t *testing.T, path string, want bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Stat(path)
		if (err == nil) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: exists %v, want %v", path, err == nil, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// adminName is the name git keeps worktree ws under (.git/worktrees/<name>):
// the spare's key when ws was a spare handed over.
func adminName(t *testing.T, ws string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(strings.TrimSpace(string(b)))
}

func createWorker(t *testing.T, s *Supervisor, repo string) api.PaneInfo {
	t.Helper()
	w, err := s.Create(context.Background(), api.CreateRequest{Title: "dev", Type: "shell", Workspace: repo, Worktree: true,
		Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), w.ID) })
	info, err := s.Get(w.ID)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestWorktreeSpare: after a worktree is made, a spare is checked out
// ahead; the next create --worktree takes it, checked out on its own
// branch at the repository's HEAD of then (a commit made since included),
// clean; a new spare follows; it goes when the last worker of the
// repository goes.
func TestWorktreeSpare(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	s.trees.Spares().Settle = 10 * time.Millisecond
	repo := gitRepo(t)
	key := s.trees.Spares().Key(repo)
	a := createWorker(t, s, repo)
	if adminName(t, a.Workspace) == key {
		t.Fatal("the first worktree came from a spare that could not exist yet")
	}
	waitFile(t, s.trees.Spares().Mark(repo), true)
	if err := os.WriteFile(filepath.Join(repo, "b.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "second")
	head := gitIn(t, repo, "rev-parse", "HEAD")
	b := createWorker(t, s, repo)
	if got := adminName(t, b.Workspace); got != key {
		t.Fatalf("the second worktree is git's %q; want the spare %q handed over", got, key)
	}
	if br := gitIn(t, b.Workspace, "rev-parse", "--abbrev-ref", "HEAD"); br != b.Worktree.Branch || !strings.HasSuffix(br, "/"+b.ID) {
		t.Fatalf("the handed-over worktree is on %q", br)
	}
	if got := gitIn(t, b.Workspace, "rev-parse", "HEAD"); got != head {
		t.Fatalf("the handed-over worktree is at %s; want the HEAD of now %s", got, head)
	}
	if st := gitIn(t, b.Workspace, "status", "--porcelain"); st != "" {
		t.Fatalf("the handed-over worktree is not clean:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(b.Workspace, "b.txt")); err != nil {
		t.Fatal("the commit made after the spare was checked out is missing")
	}
	spareIdle(t, s, repo) // the next one, at the same commit: no file written
	c := createWorker(t, s, repo)
	if got := adminName(t, c.Workspace); !strings.HasPrefix(got, key) {
		t.Fatalf("the third worktree is git's %q; want a spare handed over", got)
	}
	if br := gitIn(t, c.Workspace, "rev-parse", "--abbrev-ref", "HEAD"); br != c.Worktree.Branch || !strings.HasSuffix(br, "/"+c.ID) {
		t.Fatalf("the third worktree is on %q", br)
	}
	if got := gitIn(t, c.Workspace, "rev-parse", "HEAD"); got != head {
		t.Fatalf("the third worktree is at %s; want %s", got, head)
	}
	if st := gitIn(t, c.Workspace, "status", "--porcelain"); st != "" {
		t.Fatalf("the third worktree is not clean:\n%s", st)
	}
	waitFile(t, s.trees.Spares().Mark(repo), true)
	ctx := context.Background()
	for _, id := range []string{a.ID, b.ID, c.ID} {
		if res, err := s.KillPane(ctx, id); err != nil || res.Kept != "" {
			t.Fatalf("kill %s: %+v %v", id, res, err)
		}
	}
	waitFile(t, s.trees.Spares().Path(repo), false)
	waitFile(t, s.trees.Spares().Mark(repo), false)
	// git removes the spare's folder before its own record of it.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		l := gitIn(t, repo, "worktree", "list")
		if strings.Count(l, "\n") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worktrees left:\n%s", l)
		}
	}
}

// TestWorktreeSpareDamaged: a spare a crash left half made (no mark) is
// replaced, and a marked spare that is not a worktree any more is dropped
// and the pane gets a new checkout.
func TestWorktreeSpareDamaged(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	s.trees.Spares().Settle = 10 * time.Millisecond
	repo := gitRepo(t)
	junk := filepath.Join(s.trees.Spares().Path(repo), "half.txt")
	if err := os.MkdirAll(filepath.Dir(junk), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	createWorker(t, s, repo)
	waitFile(t, s.trees.Spares().Mark(repo), true)
	waitFile(t, junk, false)
	if _, err := os.Stat(filepath.Join(s.trees.Spares().Path(repo), "a.txt")); err != nil {
		t.Fatal("the new spare is not a checkout")
	}
	spareIdle(t, s, repo)
	if err := os.Remove(filepath.Join(s.trees.Spares().Path(repo), ".git")); err != nil {
		t.Fatal(err)
	}
	c := createWorker(t, s, repo)
	if adminName(t, c.Workspace) == s.trees.Spares().Key(repo) {
		t.Fatal("a spare that is no worktree was handed over")
	}
	if br := gitIn(t, c.Workspace, "rev-parse", "--abbrev-ref", "HEAD"); br != c.Worktree.Branch || !strings.HasSuffix(br, "/"+c.ID) {
		t.Fatalf("the worker's worktree is on %q", br)
	}
	if st := gitIn(t, c.Workspace, "status", "--porcelain"); st != "" {
		t.Fatalf("the worker's worktree is not clean:\n%s", st)
	}
}
