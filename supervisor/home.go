package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Home is a CICY_HOME folder and the paths inside it.
type Home struct{ Root string }

// DefaultHome is $CICY_HOME, else ~/cicy-ai.
func DefaultHome() (string, error) {
	if h := os.Getenv("CICY_HOME"); h != "" {
		return h, nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home folder (set CICY_HOME or --home): %w", err)
	}
	return filepath.Join(u, "cicy-ai"), nil
}

// Dir is the home folder.
func (h Home) Dir() string { return h.Root }

func (h Home) path(p ...string) string { return filepath.Join(append([]string{h.Root}, p...)...) }

// DB is the SQLite database.
func (h Home) DB() string { return h.path("db", "cicy.db") }

// ViewFile is where the home's view (screens.View) is recorded: one view
// per home, a new one replaces the old.
func (h Home) ViewFile() string { return h.path("run", "view.json") }

// Socket is the control socket.
func (h Home) Socket() string { return h.path("run", "cicy.sock") }

// PIDFile holds the running supervisor's pid.
func (h Home) PIDFile() string { return h.path("run", "supervisor.pid") }

// LockFile is held (flock) by the running supervisor for its whole life.
func (h Home) LockFile() string { return h.path("run", "supervisor.lock") }

// Log is the supervisor's log.
func (h Home) Log() string { return h.path("logs", "supervisor.log") }

// Workspace is the default workspace of a pane.
func (h Home) Workspace(id string) string { return h.path("workspaces", id) }

// Held reports whether a supervisor holds the home's lock (or the lock
// cannot be tried).
func (h Home) Held() bool {
	unlock, err := lockHome(h)
	if err != nil {
		return true
	}
	unlock()
	return false
}

// maxSocketPath is what sockaddr_un holds on Linux, less the terminating NUL.
const maxSocketPath = 107

// Prepare creates the home's folders, the user's alone (0700): they hold
// conversations, tasks and logs. A home that others may enter is
// tightened if it is ours, and refused if it is another user's and others
// may write in it.
func (h Home) Prepare() error {
	if len(h.Socket()) > maxSocketPath {
		return fmt.Errorf("the home %s is too deep: its socket path would exceed %d bytes; choose a shorter --home", h.Root, maxSocketPath)
	}
	if err := private(h.Root, true); err != nil {
		return err
	}
	for _, d := range []string{h.path("db"), h.path("run"), h.path("logs"), h.path("workspaces")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	// A log an older version left readable by all.
	for _, d := range []string{h.path("logs"), h.Log()} {
		if err := private(d, false); err != nil {
			return err
		}
	}
	return nil
}

// private takes group and other access away from path (a folder becomes
// 0700, a file 0600) when it exists and is ours. Another user's path that
// others may write in is refused when root is set (it is the home: anyone
// could plant or read files in it).
func private(path string, root bool) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check %s: %w", path, err)
	case root && !fi.IsDir():
		return fmt.Errorf("the home %s is not a folder; choose another with --home or CICY_HOME", path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != os.Geteuid() {
		if root && fi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("the home %s belongs to another user and others can write in it (mode %o); choose a home of your own with --home or CICY_HOME", path, fi.Mode().Perm())
		}
		return nil
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(path, fi.Mode().Perm()&^0o077); err != nil {
		return fmt.Errorf("make %s private (mode %o): %w", path, fi.Mode().Perm(), err)
	}
	return nil
}
