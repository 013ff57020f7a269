package attach

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
)

// Tmux runs tmux attach on a tmux pane's session of the home's private
// tmux server (info.Attach); Ctrl-Q (bound there) detaches, and the pane
// goes on.
func Tmux(info api.PaneInfo, in *os.File, out, errOut io.Writer) error {
	if info.State == "exited" {
		return fmt.Errorf("pane %s has exited (%s); 'cicy-agent restart %s' starts it again", info.ID, info.Reason, info.ID)
	}
	cmd := exec.Command(info.Attach[0], info.Attach[1:]...)
	cmd.Env = WithoutTMUX(os.Environ()) // our server is not the one we may run inside
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("tmux attach failed: %v", err)
	}
	fmt.Fprintf(out, "[detached from %s]\n", info.ID)
	return nil
}

// WithoutTMUX drops $TMUX: a tmux client started from inside tmux for
// another server (or session) must not think it nests.
func WithoutTMUX(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMUX=") {
			out = append(out, kv)
		}
	}
	return out
}
