package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cicy-ai/cicy-agent/api"
)

// Stat is the change base..head in dir: commits, files, lines.
func (g Git) Stat(ctx context.Context, dir, base, head string) (Change, error) {
	c := Change{Work: api.Work{Base: base, Head: head}}
	if base == head {
		return c, nil
	}
	n, err := g.line(ctx, dir, "rev-list", "--count", base+".."+head)
	if err != nil {
		return c, err
	}
	c.Commits, _ = strconv.Atoi(n)
	return c, g.numstat(ctx, dir, &c)
}

// numstat adds the files and lines of c's range to it.
func (g Git) numstat(ctx context.Context, dir string, c *Change) error {
	out, err := g.run(ctx, dir, "diff", "--numstat", "--no-renames", c.Base, c.Head)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		c.Files++
		a, _ := strconv.Atoi(f[0]) // "-" for a binary file
		d, _ := strconv.Atoi(f[1])
		c.Added += a
		c.Deleted += d
	}
	return nil
}

// Commit records what the worktree at path holds uncommitted as one
// commit (all of it, untracked files too, except the paths in keepOut),
// authored and committed by author, with the repository's hooks off; it
// returns the branch's head after, and whether it made a commit (not
// when nothing changed).
func (g Git) Commit(ctx context.Context, path, message, author string, keepOut []string) (head string, made bool, err error) {
	cm, err := g.commit(ctx, path, message, author, keepOut)
	return cm.head, cm.made, err
}

// CommitTask is Commit, and the change base..head it leaves (Stat): a
// task's end, base being the head the task started from. base is asked
// for once, after the work is staged, so that reading it (from a
// database, say) overlaps git's pass over the files. When the commit
// sits right on base (the worker made none of its own) the range is that
// one commit, and its diff is read while the commit is being made.
//
// An error other than ErrStat (the commit is made, its stat unknown)
// means the work is not committed: a lock git could not take (see
// withLocks), a full disk.
func (g Git) CommitTask(ctx context.Context, path string, base func() string, message, author string, keepOut []string) (Change, bool, error) {
	base = sync.OnceValue(base)
	cm, err := g.commitFrom(ctx, path, base, message, author, keepOut)
	if err != nil {
		return Change{Work: api.Work{Base: base()}}, false, err
	}
	if cm.stat == nil {
		c, err := g.Stat(ctx, path, base(), cm.head)
		if err != nil {
			c.Head, err = cm.head, fmt.Errorf("%w: %w", ErrStat, err)
		}
		if cm.made {
			c.Parent = cm.parent
		}
		return c, cm.made, err
	}
	c := Change{Work: api.Work{Base: base(), Head: cm.head, Commits: 1}, Parent: cm.parent}
	if err := cm.stat(&c); err != nil {
		return c, true, fmt.Errorf("%w: %w", ErrStat, err)
	}
	return c, true, nil
}

// committed is what commit did: HEAD's commit before and after, whether
// it made one, and, when asked for and it sat on that base, the stat of
// the one commit made.
type committed struct {
	parent, head string
	made         bool
	stat         func(*Change) error
}

// commit is Commit.
func (g Git) commit(ctx context.Context, path, message, author string, keepOut []string) (committed, error) {
	return g.commitFrom(ctx, path, nil, message, author, keepOut)
}

// commitFrom is commit; when the commit it makes sits on base (nil: none),
// it reads the commit's diff stat alongside (committed.stat).
//
// Everything is staged in one pass over the files (git add -A, with HEAD
// read alongside), and the commit made with plumbing — write-tree,
// commit-tree, update-ref of HEAD from the commit it was at — rather than
// git commit, which would look at every file again (on 10,000 files that
// second look was a third of a task's end). An unchanged tree makes no
// commit. With no commit yet, or a merge in progress (which git commit
// makes the merge commit), it is git commit.
//
// A lock file git finds taken is waited for or removed (withLocks), and
// the whole commit made again.
func (g Git) commitFrom(ctx context.Context, path string, base func() string, message, author string, keepOut []string) (committed, error) {
	var cm committed
	err := g.withLocks(ctx, path, func() error {
		var err error
		cm, err = g.commitOnce(ctx, path, base, message, author, keepOut)
		return err
	})
	return cm, err
}

// commitOnce is commitFrom's one try.
func (g Git) commitOnce(ctx context.Context, path string, base func() string, message, author string, keepOut []string) (committed, error) {
	heads := make(chan []string, 1)
	go func() {
		out, err := g.run(ctx, path, "rev-parse", "--absolute-git-dir", "HEAD^{commit}", "HEAD^{tree}")
		if at := strings.Fields(out); err == nil && len(at) == 3 {
			heads <- at
		}
		close(heads)
	}()
	addErr := g.addAll(ctx, path, keepOut)
	at, ok := <-heads
	if !ok || merging(at[0]) {
		return g.porcelainCommit(ctx, path, message, author, keepOut)
	}
	cm := committed{parent: at[1], head: at[1]}
	if addErr != nil {
		return cm, addErr
	}
	tree, err := g.line(ctx, path, "write-tree")
	if err != nil || tree == at[2] {
		return cm, err
	}
	if base != nil && base() == cm.parent {
		cm.stat = g.numstatAside(ctx, path, at[2], tree)
	}
	b, err := g.runIn(ctx, path, []byte(message), append(identOf(author), "commit-tree", tree, "-p", cm.parent)...)
	if err != nil {
		return cm, err
	}
	next := strings.TrimSpace(string(b))
	subject, _, _ := strings.Cut(message, "\n")
	if _, err := g.run(ctx, path, "update-ref", "-m", "commit: "+subject, "HEAD", next, cm.parent); err != nil {
		return cm, err
	}
	cm.head, cm.made = next, true
	return cm, nil
}

// DirtySubmodules lists the submodules of the checkout at path whose own
// files have changes (tracked or untracked) that are not committed in
// them: a commit of the checkout records only a submodule's commit
// (which git add -A stages when it moved), never those.
func (g Git) DirtySubmodules(ctx context.Context, path string) ([]string, error) {
	out, err := g.run(ctx, path, "status", "--porcelain=v2", "--ignore-submodules=none")
	if err != nil {
		return nil, err
	}
	var subs []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.SplitN(l, " ", 9)
		if len(f) < 9 || (f[0] != "1" && f[0] != "2") || len(f[2]) != 4 || f[2][0] != 'S' {
			continue
		}
		if f[2][2] == 'M' || f[2][3] == 'U' {
			name := f[8]
			if f[0] == "2" { // renamed: "<score> <path>\t<orig>"
				if _, rest, ok := strings.Cut(name, " "); ok {
					name = rest
				}
				name, _, _ = strings.Cut(name, "\t")
			}
			subs = append(subs, name)
		}
	}
	return subs, nil
}

// merging reports whether the worktree whose git folder is gitDir is in
// the middle of a merge.
func merging(gitDir string) bool {
	_, err := os.Stat(filepath.Join(gitDir, "MERGE_HEAD"))
	return err == nil
}

// numstatAside starts reading the diff stat of tree a against tree b in
// dir, and returns how to wait for it and add it to a change.
func (g Git) numstatAside(ctx context.Context, dir, a, b string) func(*Change) error {
	done := make(chan error, 1)
	var c Change
	go func() {
		c.Base, c.Head = a, b
		done <- g.numstat(ctx, dir, &c)
	}()
	return func(into *Change) error {
		err := <-done
		into.Files, into.Added, into.Deleted = c.Files, c.Added, c.Deleted
		return err
	}
}

// identOf names author as git's user for a commit.
func identOf(author string) []string {
	return []string{"-c", "user.name=" + author, "-c", "user.email=" + author + "@cicy-agent.invalid"}
}

// addAll stages everything in the worktree at path but keepOut.
func (g Git) addAll(ctx context.Context, path string, keepOut []string) error {
	add := []string{"add", "-A", "--", "."}
	for _, k := range keepOut {
		add = append(add, ":(exclude,literal)"+k)
	}
	_, err := g.run(ctx, path, add...)
	return err
}

// porcelainCommit is commit by git add and git commit.
func (g Git) porcelainCommit(ctx context.Context, path, message, author string, keepOut []string) (committed, error) {
	var cm committed
	cm.parent, _ = g.Rev(ctx, path, "HEAD")
	if err := g.addAll(ctx, path, keepOut); err != nil {
		return cm, err
	}
	_, err := g.run(ctx, path, "diff", "--cached", "--quiet")
	switch exitCode(err) {
	case 0:
	case 1:
		if _, err := g.runIn(ctx, path, []byte(message), append(identOf(author), "commit", "-q", "--no-verify", "--no-edit", "-F", "-")...); err != nil {
			return cm, err
		}
		cm.made = true
	default:
		return cm, err
	}
	cm.head, err = g.Rev(ctx, path, "HEAD")
	return cm, err
}
