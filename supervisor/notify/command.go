package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
)

// desktopEnv are the variables a command sink is given when the Sender
// names no environment: enough to find programs and reach a desktop
// session (notify-send), nothing that may hold a key.
var desktopEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "USER", "DISPLAY", "WAYLAND_DISPLAY",
	"DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"}

// command runs the sink's program with the event's JSON on its stdin, in
// a process group of its own that is ended with it (so a child it left,
// or one that hangs past the timeout, does not stay). Its environment is
// the Sender's plus CICY_EVENT, CICY_EVENT_ID, CICY_EVENT_KIND and, when
// the sink has a secret, CICY_NOTIFY_SECRET. The Result is its exit
// status and output (stdout and stderr), cut to 2 KiB.
func (x *Sender) command(ctx context.Context, s Sink, e Event) (Result, error) {
	args, err := commandArgs(s.URL)
	if err != nil {
		return Result{}, err
	}
	in, err := json.Marshal(e)
	if err != nil {
		return Result{}, err
	}
	out := &headBuffer{max: maxResult}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(x.env(), "CICY_EVENT="+e.Event, "CICY_EVENT_ID="+e.ID, "CICY_EVENT_KIND="+e.Kind)
	if s.Secret != "" {
		cmd.Env = append(cmd.Env, "CICY_NOTIFY_SECRET="+s.Secret)
	}
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a child holding the output open does not hold Wait
	err = cmd.Start()
	if err != nil {
		return Result{}, fmt.Errorf("start %s: %w", args[0], err)
	}
	err = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left behind
	res := Result{Status: cmd.ProcessState.ExitCode(), Body: out.String()}
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("%s did not finish within %s (ended): %w", args[0], x.timeout(), ctx.Err())
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return res, fmt.Errorf("%s exited with status %d: %s", args[0], res.Status, clip.Runes(out.String(), 200))
		}
		return res, err
	}
	return res, nil
}

func (x *Sender) env() []string {
	if x.Env != nil {
		return append([]string(nil), x.Env...)
	}
	var env []string
	for _, k := range desktopEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// headBuffer keeps the first max bytes written to it, and takes (drops)
// the rest, so a chatty command neither blocks nor fills memory.
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
	cut bool
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if keep := h.max - h.buf.Len(); keep > 0 {
		h.buf.Write(p[:min(len(p), keep)])
		h.cut = h.cut || len(p) > keep
	} else if len(p) > 0 {
		h.cut = true
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.buf.String()
	if h.cut {
		s = clip.Bytes(s, len(s)-1) // ends in "…"
	}
	return s
}
