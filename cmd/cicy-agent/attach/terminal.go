package attach

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/cicy-ai/cicy-agent/api"
)

// detachKey is Ctrl-Q, as in claude-squad.
const detachKey = 0x11

// Terminal attaches the terminal in to a pane's PTY through the
// supervisor: raw mode, the pane's screen on an alternate screen of out,
// the window's size followed; Ctrl-Q detaches, and the pane goes on.
func Terminal(ctx context.Context, cl *api.Client, id string, in *os.File, out io.Writer) error {
	fd := int(in.Fd())
	cols, rows, err := term.GetSize(fd)
	if err != nil || cols <= 0 || rows <= 0 {
		cols, rows = 80, 24
	}
	a, err := cl.Attach(ctx, id, uint16(rows), uint16(cols))
	if err != nil {
		return err
	}
	defer a.Close()
	old, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		_ = term.Restore(fd, old)
		fmt.Fprint(out, "\x1b[0m\x1b[?25h\x1b[?1049l") // leave the alternate screen
	}
	defer restore()
	fmt.Fprint(out, "\x1b[?1049h") // our own screen; the shell's scrollback comes back on detach

	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)

	outputDone := make(chan struct{})
	go func() {
		defer close(outputDone)
		_, _ = io.Copy(out, a)
	}()
	detached := make(chan struct{})
	go func() {
		// This goroutine may stay blocked in Read after a detach; the
		// command returns and the process exits right after.
		defer close(detached)
		buf := make([]byte, 4096)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				if i := bytes.IndexByte(chunk, detachKey); i >= 0 {
					_ = a.Input(chunk[:i])
					return
				}
				if a.Input(chunk) != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-winch:
			if w, h, err := term.GetSize(fd); err == nil {
				_ = a.Resize(uint16(h), uint16(w))
			}
		case <-detached:
			a.Close()
			<-outputDone
			restore()
			fmt.Fprintf(out, "[detached from %s]\r\n", id)
			return nil
		case <-outputDone:
			restore()
			msg := "the pane's output ended"
			if p, err := cl.Get(ctx, id); err == nil {
				msg = fmt.Sprintf("%s: %s", p.State, p.Reason)
			}
			fmt.Fprintf(out, "[%s %s]\r\n", id, msg)
			return nil
		}
	}
}
