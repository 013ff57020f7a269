package screens

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/cicy-ai/cicy-agent/pane"
)

// View is what `cicy-agent view` made on a person's own tmux server: a
// session (outside tmux), or a window of the person's session (inside
// tmux), and the panes it tiles. It is recorded in the home so that the
// view ends when its panes do (`down`) or when the supervisor stops:
// else its tiles of cicy panes sit on the person's server saying the
// supervisor stopped, and those of tmux panes hold attached clients.
type View struct {
	// Socket is the tmux server's socket path (tmux -S).
	Socket string `json:"socket"`
	// Session is the view's own session, ended whole; Window is the
	// window made inside the person's session instead (one of them).
	Session string   `json:"session,omitempty"`
	Window  string   `json:"window,omitempty"`
	Panes   []string `json:"panes"`
}

// SaveView records the home's view in file (the home's ViewFile).
func SaveView(file string, v View) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return fmt.Errorf("record the view: %w", err)
	}
	return nil
}

// EndView ends the home's view recorded in file (the home's ViewFile) on
// its tmux server and forgets it; with panes given, only when the view tiles no other pane. A view
// the person closed already is not an error.
func EndView(file string, panes ...string) error {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var v View
	if err := json.Unmarshal(b, &v); err != nil || v.Socket == "" {
		return os.Remove(file) // not a view this version wrote
	}
	if len(panes) > 0 && slices.ContainsFunc(v.Panes, func(id string) bool { return !slices.Contains(panes, id) }) {
		return nil
	}
	run := pane.TmuxRunner{Args: []string{"-S", v.Socket}, Env: withoutTMUX(os.Environ())}
	if v.Window != "" {
		_, _ = run.Run(context.Background(), nil, "kill-window", "-t", v.Window)
	} else if v.Session != "" {
		_, _ = run.Run(context.Background(), nil, "kill-session", "-t", "="+v.Session)
	}
	return os.Remove(file)
}

// withoutTMUX drops $TMUX: the client is for a server named by its socket.
func withoutTMUX(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return len(kv) >= 5 && kv[:5] == "TMUX=" })
}
