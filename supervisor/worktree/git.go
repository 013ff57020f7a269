// Package worktree is the work product of a team in one git repository:
// each worker in its own git worktree on its own branch, each task a
// commit there, and the master's diff and merge of what a worker
// produced. Every operation runs the real git, with the repository's
// hooks off and none of the supervisor's secrets in git's environment.
package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Errors a caller turns into sentences for people.
var (
	ErrNoGit     = errors.New("git is not installed (it is not on PATH)")
	ErrNotRepo   = errors.New("not in a git repository")
	ErrBare      = errors.New("a bare repository (it has no checkout to branch from)")
	ErrDetached  = errors.New("HEAD is detached")
	ErrNoCommit  = errors.New("the repository has no commit yet")
	ErrBranchUse = errors.New("the branch exists")
	ErrDirty     = errors.New("the checkout has uncommitted changes")
	ErrMoved     = errors.New("the branch moved while the merge was made")
	ErrNotMerged = errors.New("the branch is not merged")
	ErrConflict  = errors.New("the merge conflicts")
	// ErrStat is a commit made whose diff stat could not be read.
	ErrStat = errors.New("the diff stat could not be read")
)

// Git runs git. The zero value finds git on PATH.
type Git struct {
	// Bin is git's path; "" looks it up on PATH.
	Bin string
	// LockWait is how long a commit waits for a lock file (index.lock)
	// a running git process holds; 0 is a minute. A lock no live
	// process holds is stale: it is removed at once.
	LockWait time.Duration
}

// gitEnv is git's environment: only what git needs to find itself and the
// user's own config (identity, aliases are not used), never a key of the
// supervisor's environment, never a GIT_DIR or GIT_WORK_TREE that would
// point it elsewhere.
func gitEnv() []string {
	env := []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0"}
	for _, k := range []string{"PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// baseArgs turn off what a repository may ask git to run on our behalf:
// its hooks, signing that would wait for a passphrase, a pager.
var baseArgs = []string{"-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false", "-c", "core.pager=cat", "-c", "advice.detachedHead=false"}

// Error is git failing: its command and what it printed.
type Error struct {
	Args   []string
	Stderr string
	Code   int
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

// run runs git in dir and returns its standard output.
func (g Git) run(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := g.runIn(ctx, dir, nil, args...)
	return string(out), err
}

// ask runs a git command that answers yes (it exits 0) or no (it exits
// 1); any other end is an error.
func (g Git) ask(ctx context.Context, dir string, args ...string) (bool, error) {
	_, err := g.run(ctx, dir, args...)
	switch exitCode(err) {
	case 0:
		return true, nil
	case 1:
		return false, nil
	}
	return false, err
}

func (g Git) runIn(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	bin := g.Bin
	if bin == "" {
		p, err := exec.LookPath("git")
		if err != nil {
			return nil, ErrNoGit
		}
		bin = p
	}
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, baseArgs...), args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.Bytes(), &Error{Args: args, Stderr: stderr.String(), Code: exit.ExitCode()}
	case err != nil:
		return nil, fmt.Errorf("run git %s: %w", strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}

// line is run's output, trimmed.
func (g Git) line(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := g.run(ctx, dir, args...)
	return strings.TrimSpace(out), err
}

// exitCode is git's exit status: 0 for no error, -1 when git did not
// run.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

// Repo is the checkout dir belongs to: its top folder, and whether git
// knows it at all.
func (g Git) Repo(ctx context.Context, dir string) (string, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	bare, err := g.line(ctx, dir, "rev-parse", "--is-bare-repository")
	if err != nil {
		if errors.Is(err, ErrNoGit) {
			return "", err
		}
		return "", fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	if bare == "true" {
		return "", fmt.Errorf("%s: %w", dir, ErrBare)
	}
	top, err := g.line(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil || top == "" {
		return "", fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	return top, nil
}

// CurrentBranch is the branch checked out in dir; ErrDetached when none.
func (g Git) CurrentBranch(ctx context.Context, dir string) (string, error) {
	b, err := g.line(ctx, dir, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil || b == "" {
		if exitCode(err) == 1 {
			return "", ErrDetached
		}
		if err == nil {
			err = ErrDetached
		}
		return "", err
	}
	return b, nil
}

// Rev is the commit rev names in dir; "" with no error when there is none.
func (g Git) Rev(ctx context.Context, dir, rev string) (string, error) {
	out, err := g.line(ctx, dir, "rev-parse", "-q", "--verify", rev+"^{commit}")
	if exitCode(err) == 1 {
		return "", nil
	}
	return out, err
}

// Clean reports whether dir's checkout has no change: tracked files
// unchanged and nothing untracked (ignored files do not count, nor the
// untracked files named in ours: files we put there).
func (g Git) Clean(ctx context.Context, dir string, ours ...string) (bool, error) {
	out, err := g.run(ctx, dir, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !(strings.HasPrefix(l, "?? ") && slices.Contains(ours, l[3:])) {
			return false, nil
		}
	}
	return true, nil
}

// trackedChanges lists the tracked files of dir's checkout with changes
// (staged or not); untracked files are not listed.
func (g Git) trackedChanges(ctx context.Context, dir string) ([]string, error) {
	out, err := g.run(ctx, dir, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 3 {
			files = append(files, l[3:])
		}
	}
	return files, nil
}
