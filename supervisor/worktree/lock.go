package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrLocked is a git lock (index.lock, HEAD.lock) held by a git process
// that is still running, for longer than Git.LockWait.
var ErrLocked = errors.New("a git lock is held by a process that is still running")

// defaultLockWait is how long a commit waits for a lock held by a live
// process when Git.LockWait is 0.
const defaultLockWait = 60 * time.Second

// lockExists matches git's refusal to take a lock that exists: "Unable
// to create '/…/index.lock': File exists."
var lockExists = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)

// lockedFile is the lock file git found taken in err; "" when err is
// not that.
func lockedFile(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return ""
	}
	if m := lockExists.FindStringSubmatch(e.Stderr); m != nil {
		return m[1]
	}
	return ""
}

// withLocks runs op in the worktree at path; when git refuses because a
// lock file exists, op runs again: at once after a stale lock (no live
// process holds it — left by a git that was killed) is removed, as git's
// own message advises, and with a growing pause while a live process
// holds it, for at most g.LockWait; then the error says who holds it
// (ErrLocked).
func (g Git) withLocks(ctx context.Context, path string, op func() error) error {
	wait := g.LockWait
	if wait <= 0 {
		wait = defaultLockWait
	}
	deadline := time.Now().Add(wait)
	pause := 20 * time.Millisecond
	removed := 0
	for {
		err := op()
		lock := lockedFile(err)
		if lock == "" {
			return err
		}
		holder := lockHolder(lock, path)
		if holder == 0 && removed < 3 { // a lock that keeps coming back has a holder we cannot see
			removed++
			if rerr := os.Remove(lock); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return fmt.Errorf("remove the stale lock %s: %w", lock, rerr)
			}
			continue // removed: git may go on at once
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is held by %s for more than %s: %w", lock, holderName(holder), wait.Round(time.Second), ErrLocked)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s is held by %s: %w", lock, holderName(holder), ErrLocked)
		case <-t.C:
		}
		pause = min(pause*2, time.Second)
	}
}

// lockHolder is a live process that holds the lock file lock of the
// worktree at path, or may: one that has the file open, or a git process
// working in the worktree (its folder or its command line name it: git
// closes a ref's lock file before it renames it). 0 when there is none,
// the lock being stale. It reads /proc; where there is none, every lock
// is taken as held.
func lockHolder(lock, path string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	lock = realPath(lock)
	path = realPath(path)
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		if holdsOpen(dir, lock) || gitIn(dir, path) {
			return pid
		}
	}
	return 0
}

// holdsOpen reports whether the process at /proc/<pid> dir has file open.
func holdsOpen(dir, file string) bool {
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return false // another user's process, or gone
	}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && l == file {
			return true
		}
	}
	return false
}

// gitIn reports whether the process at /proc/<pid> dir is a git working
// in the folder path: its current folder is in it, or its command line
// names it (git -C).
func gitIn(dir, path string) bool {
	comm, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(comm)), "git") {
		return false
	}
	if cwd, err := os.Readlink(filepath.Join(dir, "cwd")); err == nil && within(cwd, path) {
		return true
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return false
	}
	for _, a := range bytes.Split(cmdline, []byte{0}) {
		if len(a) > 0 && within(realPath(string(a)), path) {
			return true
		}
	}
	return false
}

// within reports whether p is folder dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// realPath is p with its symbolic links resolved, p itself when they
// cannot be.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// holderName is a lock's holder for a message: "process 42 (git)".
func holderName(pid int) string {
	if pid <= 0 {
		return "a process that could not be found"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return fmt.Sprintf("process %d", pid)
	}
	return fmt.Sprintf("process %d (%s)", pid, strings.TrimSpace(string(b)))
}
