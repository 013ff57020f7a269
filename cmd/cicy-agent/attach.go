package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/attach"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/termsafe"
	"github.com/cicy-ai/cicy-agent/panetype"
)

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
				return attach.Chat(c.Context, cl, id, e.stdin, out)
			}
			in, ok := e.stdin.(*os.File)
			if !ok || !term.IsTerminal(int(in.Fd())) {
				return usagef("attach needs an interactive terminal on stdin; use 'cicy-agent send' and 'cicy-agent screen' from scripts")
			}
			if info.Backend == "tmux" && len(info.Attach) > 0 {
				return attach.Tmux(info, in, e.stdout, e.stderr)
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			return attach.Terminal(c.Context, cl, id, in, e.stdout)
		},
	}
}
