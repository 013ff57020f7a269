package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Merged is what a merge did.
type Merged struct {
	Into        string   `json:"into"`
	Head        string   `json:"head"`                // into's commit after
	FastForward bool     `json:"fast_forward"`        // into moved up to rev, no merge commit
	Already     bool     `json:"already"`             // rev was in into before
	Conflicts   []string `json:"conflicts,omitempty"` // the files that conflict (nothing was changed)
}

// Merge merges commit rev into branch into of the repository whose
// checkout is dir ("" into: the branch checked out there): a fast-forward
// when into has not moved from rev's history, else a merge commit with
// message. Conflicts are found before anything is touched: then nothing
// changes, and the result lists the files with ErrConflict. A checkout of
// into with uncommitted changes to tracked files is refused (ErrDirty).
// ident names the merge commit's author when git knows no user.
func (g Git) Merge(ctx context.Context, dir, rev, into, message, ident string) (Merged, error) {
	repo, err := g.Repo(ctx, dir)
	if err != nil {
		return Merged{}, err
	}
	if into == "" {
		if into, err = g.CurrentBranch(ctx, repo); err != nil {
			return Merged{}, err
		}
	}
	m := Merged{Into: into}
	old, err := g.Rev(ctx, repo, "refs/heads/"+into)
	if err != nil || old == "" {
		return m, fmt.Errorf("there is no branch %s in %s", into, repo)
	}
	if m.Already, err = g.Merged(ctx, repo, rev, old); err != nil || m.Already {
		m.Head = old
		return m, err
	}
	ff, err := g.Merged(ctx, repo, old, rev)
	if err != nil {
		return m, err
	}
	if !ff {
		if m.Conflicts, err = g.conflicts(ctx, repo, old, rev); err != nil {
			return m, err
		}
		if len(m.Conflicts) > 0 {
			m.Head = old
			return m, ErrConflict
		}
	}
	at, err := g.checkedOutAt(ctx, repo, into)
	if err != nil {
		return m, err
	}
	if at != "" {
		err = g.mergeIn(ctx, at, rev, message, ident, ff)
	} else {
		err = g.mergeRef(ctx, repo, into, old, rev, message, ident, ff)
	}
	if err != nil {
		return m, err
	}
	m.FastForward = ff
	m.Head, err = g.Rev(ctx, repo, "refs/heads/"+into)
	return m, err
}

// conflicts lists the files that merging rev into old would leave in
// conflict, without touching any checkout (git merge-tree).
func (g Git) conflicts(ctx context.Context, repo, old, rev string) ([]string, error) {
	out, err := g.run(ctx, repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", old, rev)
	switch exitCode(err) {
	case 0:
		return nil, nil
	case 1:
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var files []string
		for _, l := range lines[1:] {
			if l = strings.TrimSpace(l); l != "" && (len(files) == 0 || files[len(files)-1] != l) {
				files = append(files, l)
			}
		}
		return files, nil
	}
	return nil, err
}

// identArgs name a committer for git when the user's config has none.
func (g Git) identArgs(ctx context.Context, dir, ident string) []string {
	if _, err := g.run(ctx, dir, "var", "GIT_COMMITTER_IDENT"); err == nil {
		return nil
	}
	return []string{"-c", "user.name=" + ident, "-c", "user.email=" + ident + "@cicy-agent.invalid"}
}

// mergeIn merges rev in the checkout at (into is checked out there).
func (g Git) mergeIn(ctx context.Context, at, rev, message, ident string, ff bool) error {
	dirty, err := g.trackedChanges(ctx, at)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return fmt.Errorf("%s (%s): %w", at, strings.Join(clip(dirty, 5), ", "), ErrDirty)
	}
	args := append(g.identArgs(ctx, at, ident), "merge", "-q", "--no-edit")
	if ff {
		args = append(args, "--ff-only", rev)
	} else {
		args = append(args, "--no-ff", "-m", message, rev)
	}
	if _, err := g.run(ctx, at, args...); err != nil {
		g.abort(ctx, at)
		if files := wouldOverwrite(err); len(files) > 0 {
			return &UntrackedError{Checkout: at, Files: files}
		}
		return err
	}
	return nil
}

// UntrackedError is a merge git refused because it would overwrite
// untracked files of the checkout (nothing was changed).
type UntrackedError struct {
	Checkout string
	Files    []string
}

func (e *UntrackedError) Error() string {
	return fmt.Sprintf("the merge would overwrite untracked files in %s: %s", e.Checkout, strings.Join(clip(e.Files, 10), ", "))
}

// wouldOverwrite is the files git names, one a line after its first, when
// it refuses a merge for the untracked (or uncommitted) files it would
// overwrite; none for another error.
func wouldOverwrite(err error) []string {
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Stderr, "would be overwritten by merge") {
		return nil
	}
	var files []string
	in := false
	for _, l := range strings.Split(e.Stderr, "\n") {
		switch {
		case strings.Contains(l, "would be overwritten by merge"):
			in = true
		case in && strings.HasPrefix(l, "\t"):
			files = append(files, strings.TrimSpace(l))
		default:
			in = false
		}
	}
	return files
}

// abort undoes a merge git left half done in the checkout at.
func (g Git) abort(ctx context.Context, at string) {
	gitDir, err := g.line(ctx, at, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return
	}
	if _, err := os.Stat(filepath.Join(gitDir, "MERGE_HEAD")); err == nil {
		_, _ = g.run(ctx, at, "merge", "--abort")
	}
}

// mergeRef merges rev into a branch no checkout has: the branch is moved
// (fast-forward) or given a merge commit made from git's merged tree,
// only if it still is at old.
func (g Git) mergeRef(ctx context.Context, repo, into, old, rev, message, ident string, ff bool) error {
	next := rev
	if !ff {
		tree, err := g.line(ctx, repo, "merge-tree", "--write-tree", "--no-messages", old, rev)
		if err != nil {
			return err
		}
		if i := strings.IndexByte(tree, '\n'); i >= 0 {
			tree = tree[:i]
		}
		args := append(g.identArgs(ctx, repo, ident), "commit-tree", tree, "-p", old, "-p", rev, "-m", message)
		if next, err = g.line(ctx, repo, args...); err != nil {
			return err
		}
	}
	if _, err := g.run(ctx, repo, "update-ref", "-m", "cicy-agent merge", "refs/heads/"+into, next, old); err != nil {
		if cur, _ := g.Rev(ctx, repo, "refs/heads/"+into); cur != old {
			return fmt.Errorf("%s: %w", into, ErrMoved)
		}
		return err
	}
	return nil
}

// clip is the first n of s, and how many more there are.
func clip(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
}

// IsGitError reports whether err is git refusing something (its own
// message says why), not a failure to run it.
func IsGitError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Carried reports whether the files the commits base..head changed are
// at rev as head left them: that work is in rev, whatever its history (an
// amended or rebased commit carried it over).
func (g Git) Carried(ctx context.Context, dir, base, head, rev string) (bool, error) {
	out, err := g.run(ctx, dir, "diff", "--name-only", "--no-renames", "-z", base, head)
	if err != nil {
		return false, err
	}
	files := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	if len(files) == 1 && files[0] == "" {
		return true, nil
	}
	args := []string{"diff", "--quiet", "--no-renames", head, rev, "--"}
	for _, f := range files {
		args = append(args, ":(literal)"+f)
	}
	return g.ask(ctx, dir, args...)
}
