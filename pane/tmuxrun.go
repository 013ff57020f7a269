package pane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// DefaultTmuxTimeout bounds one tmux command: a tmux server that hangs
// must not hang its caller.
const DefaultTmuxTimeout = 5 * time.Second

// TmuxRunner runs tmux commands: every tmux command this program runs as
// a process of its own goes through one, so each has a deadline and says
// which command failed. The control-mode client (tmuxctl.go), one
// long-lived `tmux -C`, does not.
type TmuxRunner struct {
	// Args come before every command's own: the server's socket, its
	// configuration.
	Args []string
	// Env is tmux's environment; nil is this process's own.
	Env []string
	// Timeout bounds each command; zero is DefaultTmuxTimeout.
	Timeout time.Duration
}

// TmuxError is a tmux command that failed: its subcommand, what tmux
// said, and the underlying error (the exit status, or the context's error
// when the command was cut short).
type TmuxError struct {
	Command string
	Stderr  string
	Err     error
	// Waited is how long the command ran when it ran out of time.
	Waited time.Duration
}

func (e *TmuxError) Error() string {
	switch {
	case errors.Is(e.Err, context.DeadlineExceeded):
		return fmt.Sprintf("tmux %s: no answer after %s", e.Command, e.Waited.Round(time.Millisecond))
	case e.Stderr != "":
		return fmt.Sprintf("tmux %s: %s", e.Command, e.Stderr)
	default:
		return fmt.Sprintf("tmux %s: %v", e.Command, e.Err)
	}
}

func (e *TmuxError) Unwrap() error { return e.Err }

// Run runs one tmux command, args[0] being its subcommand, with stdin as
// its input (nil for none), and returns what it printed. It ends the
// command when ctx ends or the timeout passes; the error is a *TmuxError.
func (r TmuxRunner) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	if len(args) == 0 {
		return nil, errors.New("tmux: no command")
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTmuxTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tmux", append(append([]string(nil), r.Args...), args...)...)
	cmd.Env = r.Env
	cmd.Stdin = stdin
	// A child that kept tmux's output open (it should not) cannot hold
	// the call past its end.
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err == nil {
		return out, nil
	}
	terr := &TmuxError{Command: args[0], Stderr: strings.TrimSpace(stderr.String()), Err: err}
	if cerr := ctx.Err(); cerr != nil {
		terr.Err = fmt.Errorf("%w (%v)", cerr, err)
		terr.Waited = time.Since(start)
	}
	return out, terr
}
