package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
)

// Worktree is one worker's checkout: where it is, the repository it came
// from, its branch, the branch it was made from (what it merges into by
// default) and the commit it started at.
type Worktree struct {
	Path   string `json:"path"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Target string `json:"target"`
	Base   string `json:"base"`
}

// BranchFor is the branch of pane id's worktree in the home whose tag
// is tag: cicy/<tag>/<id>, so that two homes with workers in one
// repository never share a branch. A pane made before homes had tags
// ("" tag) keeps cicy/<id>.
func BranchFor(tag, id string) string {
	if tag == "" {
		return "cicy/" + id
	}
	return "cicy/" + tag + "/" + id
}

// PaneOf is the pane id a branch of BranchFor names ("" when branch is
// none of ours), and the home tag in it ("" for an untagged one).
func PaneOf(branch string) (id, tag string) {
	rest, ok := strings.CutPrefix(branch, "cicy/")
	if !ok {
		return "", ""
	}
	tag, id, ok = strings.Cut(rest, "/")
	if !ok {
		return rest, ""
	}
	if strings.Contains(id, "/") {
		return "", ""
	}
	return id, tag
}

// Resolve is where a worktree of dir's repository starts: the
// repository, the branch checked out there (the one it merges into) and
// its HEAD commit.
func (g Git) Resolve(ctx context.Context, dir string) (Worktree, error) {
	repo, err := g.Repo(ctx, dir)
	if err != nil {
		return Worktree{}, err
	}
	target, err := g.CurrentBranch(ctx, repo)
	if err != nil {
		return Worktree{}, err
	}
	base, err := g.Rev(ctx, repo, "HEAD")
	if err != nil {
		return Worktree{}, err
	}
	if base == "" {
		return Worktree{}, ErrNoCommit
	}
	return Worktree{Repo: repo, Target: target, Base: base}, nil
}

// Add makes the worktree w (Resolve's, with Path and Branch) on a new
// branch from w.Base. A branch that exists is refused (ErrBranchUse)
// unless it is checked out at w.Path already (a worktree of ours,
// adopted as it is).
func (g Git) Add(ctx context.Context, w Worktree) (Worktree, error) {
	if have, err := g.Rev(ctx, w.Repo, "refs/heads/"+w.Branch); err != nil {
		return Worktree{}, err
	} else if have != "" {
		if at, _ := g.checkedOutAt(ctx, w.Repo, w.Branch); at != "" && samePath(at, w.Path) {
			w.Base, _ = g.line(ctx, w.Repo, "merge-base", w.Target, w.Branch)
			return w, nil
		}
		return Worktree{}, fmt.Errorf("%s: %w", w.Branch, ErrBranchUse)
	}
	if _, err := g.run(ctx, w.Repo, "worktree", "add", "-q", "-b", w.Branch, w.Path, w.Base); err != nil {
		return Worktree{}, err
	}
	return w, nil
}

// New is Resolve and Add: pane id's worktree at path, from dir's
// repository.
func (g Git) New(ctx context.Context, dir, path, branch string) (Worktree, error) {
	w, err := g.Resolve(ctx, dir)
	if err != nil {
		return Worktree{}, err
	}
	w.Path, w.Branch = path, branch
	return g.Add(ctx, w)
}

// samePath reports whether a and b name one folder.
func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// Listed is a worktree as `git worktree list` knows it.
type Listed struct {
	Path     string
	Branch   string // "" when detached
	Head     string
	Prunable bool   // its folder is gone
	Locked   string // why it is locked ("initializing": git worktree add did not finish); "" when not
}

// List is every worktree of dir's repository, the main checkout first.
func (g Git) List(ctx context.Context, dir string) ([]Listed, error) {
	out, err := g.run(ctx, dir, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var all []Listed
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		var l Listed
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "worktree":
				l.Path = v
			case "HEAD":
				l.Head = v
			case "branch":
				l.Branch = strings.TrimPrefix(v, "refs/heads/")
			case "prunable":
				l.Prunable = true
			case "locked":
				l.Locked = v
				if l.Locked == "" {
					l.Locked = "locked"
				}
			}
		}
		if l.Path != "" {
			all = append(all, l)
		}
	}
	return all, nil
}

// checkedOutAt is the worktree branch is checked out in; "" when none.
func (g Git) checkedOutAt(ctx context.Context, dir, branch string) (string, error) {
	all, err := g.List(ctx, dir)
	if err != nil {
		return "", err
	}
	for _, l := range all {
		if l.Branch == branch && !l.Prunable {
			return l.Path, nil
		}
	}
	return "", nil
}

// Change is the work of a range of commits on a worktree's branch (the
// api.Work a task's end records), and the parent of the commit made.
type Change struct {
	api.Work
	// Parent is the parent of the commit CommitTask made ("" when it made
	// none): when it is Base, Base is in Head's history without asking git.
	Parent string `json:"-"`
}

// Empty reports whether the range holds no commit.
func (c Change) Empty() bool { return c.Base == c.Head }

// Diff is git's diff of base..head in dir (the summary with stat).
func (g Git) Diff(ctx context.Context, dir, base, head string, stat bool) (string, error) {
	args := []string{"diff", "--no-color", "--no-ext-diff"}
	if stat {
		args = append(args, "--stat")
	}
	return g.run(ctx, dir, append(args, base, head, "--")...)
}

// Ahead is how many commits b has that a has not, and a that b has not.
func (g Git) Ahead(ctx context.Context, dir, a, b string) (ahead, behind int, err error) {
	out, err := g.line(ctx, dir, "rev-list", "--left-right", "--count", a+"..."+b)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("git rev-list --count: unexpected %q", out)
	}
	behind, _ = strconv.Atoi(f[0])
	ahead, _ = strconv.Atoi(f[1])
	return ahead, behind, nil
}

// Merged reports whether commit rev is in branch into.
func (g Git) Merged(ctx context.Context, dir, rev, into string) (bool, error) {
	return g.ask(ctx, dir, "merge-base", "--is-ancestor", rev, into)
}

// Remove removes the worktree at path and its branch. It refuses (and
// changes nothing) unless the worktree is clean (but for the untracked
// files of ours) and its branch is merged into target; a worktree whose
// folder is gone is pruned.
func (g Git) Remove(ctx context.Context, w Worktree, ours ...string) error {
	if _, err := os.Stat(w.Path); err == nil {
		clean, err := g.Clean(ctx, w.Path, ours...)
		if err != nil {
			return err
		}
		if !clean {
			return fmt.Errorf("%s: %w", w.Path, ErrDirty)
		}
	}
	merged, err := g.Merged(ctx, w.Repo, "refs/heads/"+w.Branch, w.Target)
	if err != nil {
		return err
	}
	if !merged {
		return fmt.Errorf("%s into %s: %w", w.Branch, w.Target, ErrNotMerged)
	}
	if _, err := os.Stat(w.Path); err == nil {
		if _, err := g.run(ctx, w.Repo, "worktree", "remove", "--force", w.Path); err != nil {
			return err
		}
	} else if err := g.Prune(ctx, w.Repo); err != nil {
		return err
	}
	_, err = g.run(ctx, w.Repo, "branch", "-D", "-q", w.Branch)
	return err
}

// Prune forgets the worktrees of dir's repository whose folders were
// deleted by hand (git worktree prune).
func (g Git) Prune(ctx context.Context, dir string) error {
	_, err := g.run(ctx, dir, "worktree", "prune")
	return err
}

// Discard removes a worktree Add just made, and its branch, whatever they
// hold: for a pane that never started.
func (g Git) Discard(ctx context.Context, w Worktree) error {
	if _, err := g.run(ctx, w.Repo, "worktree", "remove", "--force", w.Path); err != nil {
		if err := g.Prune(ctx, w.Repo); err != nil {
			return err
		}
	}
	_, err := g.run(ctx, w.Repo, "branch", "-D", "-q", w.Branch)
	return err
}

// Restore checks out w's branch at w.Path again after its folder was
// deleted by hand (git forgets the old one first); a branch that is gone
// too starts again from w.Base.
func (g Git) Restore(ctx context.Context, w Worktree) error {
	if err := g.Prune(ctx, w.Repo); err != nil {
		return err
	}
	have, err := g.Rev(ctx, w.Repo, "refs/heads/"+w.Branch)
	if err != nil {
		return err
	}
	if have == "" {
		_, err = g.run(ctx, w.Repo, "worktree", "add", "-q", "-b", w.Branch, w.Path, w.Base)
		return err
	}
	_, err = g.run(ctx, w.Repo, "worktree", "add", "-q", w.Path, w.Branch)
	return err
}

// Tracked reports whether name is a file git tracks in dir's checkout.
func (g Git) Tracked(ctx context.Context, dir, name string) (bool, error) {
	return g.ask(ctx, dir, "ls-files", "--error-unmatch", "--", name)
}

// ForkPoint is the commit a and b share last (git merge-base).
func (g Git) ForkPoint(ctx context.Context, dir, a, b string) (string, error) {
	return g.line(ctx, dir, "merge-base", a, b)
}

// AddSpare checks out rev of repo at path, detached: a worktree made
// ahead of the pane that will take it (Adopt). Its index is refreshed
// once its files are older than it (Refresh), so the first commit there
// does not read every file again.
func (g Git) AddSpare(ctx context.Context, repo, path, rev string) error {
	_, err := g.run(ctx, repo, "worktree", "add", "-q", "--detach", path, rev)
	return err
}

// Refresh rewrites the index of the checkout at dir with its files'
// times: files written in the same second as the index cannot be trusted
// by their times (racy git) until it is written again.
func (g Git) Refresh(ctx context.Context, dir string) error {
	_, err := g.run(ctx, dir, "update-index", "-q", "--refresh")
	return err
}

// Adopt hands the spare worktree at spare (checked out at rev) over as w
// (Resolve's, with Path and Branch): the new branch w.Branch is made at
// w.Base, the spare moved to w.Path and switched to the branch — which
// writes only the files that differ between rev and w.Base, and none when
// they are one commit. A branch that exists is refused (ErrBranchUse)
// with the spare untouched. On another error the spare is left for the
// caller to discard (at spare, or at w.Path once moved: MovedError).
func (g Git) Adopt(ctx context.Context, spare, rev string, w Worktree) (Worktree, error) {
	ref := "refs/heads/" + w.Branch
	if _, err := g.run(ctx, w.Repo, "update-ref", ref, w.Base, ""); err != nil {
		if have, _ := g.Rev(ctx, w.Repo, ref); have != "" {
			return Worktree{}, fmt.Errorf("%s: %w", w.Branch, ErrBranchUse)
		}
		return Worktree{}, err
	}
	if _, err := g.run(ctx, w.Repo, "worktree", "move", spare, w.Path); err != nil {
		_, _ = g.run(ctx, w.Repo, "update-ref", "-d", ref, w.Base)
		return Worktree{}, err
	}
	var err error
	if rev == w.Base {
		_, err = g.run(ctx, w.Path, "symbolic-ref", "HEAD", ref)
	} else {
		_, err = g.run(ctx, w.Path, "checkout", "-q", w.Branch)
	}
	if err != nil {
		_, _ = g.run(ctx, w.Repo, "update-ref", "-d", ref, w.Base)
		return Worktree{}, &MovedError{Path: w.Path, Err: err}
	}
	return w, nil
}

// MovedError is Adopt failing after the spare was moved to Path.
type MovedError struct {
	Path string
	Err  error
}

func (e *MovedError) Error() string { return e.Err.Error() }
func (e *MovedError) Unwrap() error { return e.Err }

// DropSpare removes the spare worktree at path, whatever it holds, and
// lets git forget it.
func (g Git) DropSpare(ctx context.Context, repo, path string) error {
	if _, err := g.run(ctx, repo, "worktree", "remove", "--force", path); err != nil {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return g.Prune(ctx, repo)
	}
	return nil
}

// OwnCommits is how many commits rev (a branch's name, or a commit)
// holds that no branch of dir's repository has (but branch itself when
// rev is one): 0 when deleting it loses no commit.
func (g Git) OwnCommits(ctx context.Context, dir, rev string) (int, error) {
	args := []string{"rev-list", "--count", rev, "--not"}
	if !isHex(rev) {
		// --exclude before --branches takes the name without refs/heads/.
		args = []string{"rev-list", "--count", "refs/heads/" + rev, "--not", "--exclude=" + rev}
	}
	out, err := g.line(ctx, dir, append(args, "--branches")...)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// isHex reports whether s is a full commit id.
func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// Branches lists the branches of dir's repository under prefix
// ("cicy/").
func (g Git) Branches(ctx context.Context, dir, prefix string) ([]string, error) {
	out, err := g.run(ctx, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+prefix)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// DropHalfMade removes the worktree at path whatever it holds, even
// locked by a git worktree add that never finished, and lets git forget
// it; for a worktree no pane ever ran in.
func (g Git) DropHalfMade(ctx context.Context, repo, path string) error {
	if _, err := g.run(ctx, repo, "worktree", "remove", "--force", "--force", path); err != nil {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return g.Prune(ctx, repo)
	}
	return nil
}

// DeleteBranch deletes branch of dir's repository.
func (g Git) DeleteBranch(ctx context.Context, dir, branch string) error {
	_, err := g.run(ctx, dir, "branch", "-D", "-q", branch)
	return err
}
