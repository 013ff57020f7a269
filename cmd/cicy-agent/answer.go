package main

import (
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
)

// answerActions are what answer takes after the pane.
var answerActions = []string{"approve", "deny", "option:1", "option:2", "option:3", "text", "restart", "screen"}

// answerCmd answers a pane's dialog, as a messenger's buttons do.
func (e *env) answerCmd() *cli.Command {
	return &cli.Command{
		Name:      "answer",
		Usage:     "answer a pane's dialog: approve, deny, option:N, restart or screen",
		ArgsUsage: "<pane> <action> [<text>]",
		Description: "Answers what a pane waits for with the keys its CLI takes (see 'cicy-agent agents'\n" +
			"and docs/agents.md), the same action a messenger's button runs:\n" +
			"  approve     allow the command a permission prompt asks about, once\n" +
			"  deny        refuse it (the tool does not run)\n" +
			"  option:N    pick choice N (from 1) of a question or prompt\n" +
			"  text TEXT   type a one-line reply and Enter into a pane that waits on a question\n" +
			"  restart     start again a pane that exited, stopped or is in a crash loop\n" +
			"  screen      print the pane's screen, to read before answering\n" +
			"approve, deny and option:N are refused (exit 1) unless the pane is a CLI agent\n" +
			"waiting with its dialog on screen: an answer never lands in a pane that moved on.\n" +
			"Each answer is recorded (explain shows it); a notification answered once (here or\n" +
			"from a messenger) refuses a second answer.\n" +
			"Examples:\n" +
			"  cicy-agent answer w-2 approve\n" +
			"  cicy-agent answer w-2 option:2\n" +
			"  cicy-agent answer w-2 text 'use the staging database'",
		Flags: []cli.Flag{jsonFlag, rawFlag},
		// After the pane: the actions (the pane itself: completePanes).
		BashComplete: func(c *cli.Context) {
			if c.NArg() == 1 {
				fmt.Fprintln(e.stdout, strings.Join(answerActions, "\n"))
				return
			}
			cli.DefaultCompleteWithFlags(c.Command)(c)
		},
		Action: func(c *cli.Context) error {
			a, err := args(c, 2, 3, "<pane> <action> [<text>]  (approve, deny, option:N, text TEXT, restart, screen)")
			if err != nil {
				return err
			}
			req := api.AnswerRequest{Action: a[1], Via: "terminal", By: currentUser()}
			switch {
			case a[1] == "text" && len(a) != 3:
				return usagef("text needs the reply: cicy-agent answer %s text 'the reply'", a[0])
			case a[1] != "text" && len(a) == 3:
				return usagef("only text takes a reply after it")
			case len(a) == 3:
				req.Text = a[2]
			}
			id, err := paneRef(a[0])
			if err != nil {
				return err
			}
			return fetch(e, c, func(cl *api.Client) (api.AnswerResult, error) { return cl.Answer(c.Context, id, req) }, e.printAnswer)
		},
	}
}

// printAnswer is answer as text: the screen asked for, or what was done
// and the pane's state now.
func (e *env) printAnswer(res api.AnswerResult) error {
	switch {
	case res.Screen != "":
		fmt.Fprintln(e.stdout, res.Screen)
	case len(res.Keys) > 0:
		fmt.Fprintf(e.stdout, "%s: %s (typed %s); it is %s now\n", res.Pane, res.Action, strings.Join(res.Keys, " "), res.State)
	default:
		fmt.Fprintf(e.stdout, "%s: %s; it is %s now\n", res.Pane, res.Action, res.State)
	}
	return nil
}

// currentUser is who answers from this terminal: the user's login name.
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
