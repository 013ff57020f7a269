package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
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

func (h Home) path(p ...string) string { return filepath.Join(append([]string{h.Root}, p...)...) }

// DB is the SQLite database.
func (h Home) DB() string { return h.path("db", "cicy.db") }

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

// maxSocketPath is what sockaddr_un holds on Linux, less the terminating NUL.
const maxSocketPath = 107

// Prepare creates the home's folders.
func (h Home) Prepare() error {
	if len(h.Socket()) > maxSocketPath {
		return fmt.Errorf("the home %s is too deep: its socket path would exceed %d bytes; choose a shorter --home", h.Root, maxSocketPath)
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{h.path("db"), 0o700}, {h.path("run"), 0o700}, {h.path("logs"), 0o755}, {h.path("workspaces"), 0o755}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("create %s: %w", d.path, err)
		}
	}
	return nil
}
