package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/termsafe"
	"github.com/cicy-ai/cicy-agent/panetype"
)

// detachKey is Ctrl-Q, as in claude-squad.
const detachKey = 0x11

func (e *env) attachCmd() *cli.Command {
	return &cli.Command{
		Name:        "attach",
		Usage:       "use a pane interactively: a raw terminal (Ctrl-Q detaches) or, for a cicy pane, a streaming chat (Ctrl-D detaches)",
		ArgsUsage:   "<pane>",
		Description: "The pane's window size follows this terminal while attached. Detaching leaves the pane running.",
		Action: func(c *cli.Context) error {
			id, err := paneArg(c, "<pane>")
			if err != nil {
				return err
			}
			var info api.PaneInfo
			var here api.Health
			if h, err := home(c); err == nil {
				info, _ = api.NewClient(h).Get(c.Context, id)
				here, _ = api.NewClient(h).Health(c.Context)
			}
			if !panetype.InProcess(info.Type) && info.Node != "" && here.Node != "" && info.Node != here.Node {
				// Another node's terminal: its supervisor says how to
				// attach there.
				cl, err := client(c)
				if err != nil {
					return err
				}
				_, err = cl.Attach(c.Context, id, 24, 80)
				if err == nil {
					err = fmt.Errorf("pane %s runs on node %s; attach to it on that machine", id, info.Node)
				}
				return err
			}
			if panetype.InProcess(info.Type) {
				// A cicy pane is a chat, not a terminal: no tty needed.
				cl, err := client(c)
				if err != nil {
					return err
				}
				out := termsafe.NewWriter(e.stdout) // the model's text, as every command prints it
				defer out.Flush()
				return chat(c, cl, id, e.stdin, out)
			}
			in, ok := e.stdin.(*os.File)
			if !ok || !term.IsTerminal(int(in.Fd())) {
				return usagef("attach needs an interactive terminal on stdin; use 'cicy-agent send' and 'cicy-agent screen' from scripts")
			}
			if info.Backend == "tmux" && len(info.Attach) > 0 {
				return tmuxAttach(info, in, e.stdout, e.stderr)
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			return attach(c, cl, id, in, e.stdout)
		},
	}
}

func attach(c *cli.Context, cl *api.Client, id string, in *os.File, out io.Writer) error {
	fd := int(in.Fd())
	cols, rows, err := term.GetSize(fd)
	if err != nil || cols <= 0 || rows <= 0 {
		cols, rows = 80, 24
	}
	a, err := cl.Attach(c.Context, id, uint16(rows), uint16(cols))
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
			if p, err := cl.Get(c.Context, id); err == nil {
				msg = fmt.Sprintf("%s: %s", p.State, p.Reason)
			}
			fmt.Fprintf(out, "[%s %s]\r\n", id, msg)
			return nil
		}
	}
}

// tmuxAttach runs tmux attach on the pane's session of the private tmux
// server; Ctrl-Q (bound there) detaches, and the pane goes on.
func tmuxAttach(info api.PaneInfo, in *os.File, out, errOut io.Writer) error {
	if info.State == "exited" {
		return failf("pane %s has exited (%s); 'cicy-agent restart %s' starts it again", info.ID, info.Reason, info.ID)
	}
	cmd := exec.Command(info.Attach[0], info.Attach[1:]...)
	cmd.Env = withoutTMUX(os.Environ()) // our server is not the one we may run inside
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errOut
	if err := cmd.Run(); err != nil {
		return failf("tmux attach failed: %v", err)
	}
	fmt.Fprintf(out, "[detached from %s]\n", info.ID)
	return nil
}
