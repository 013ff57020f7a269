package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/notify"
	"github.com/cicy-ai/cicy-agent/topology"
)

func (e *env) notifyCmd() *cli.Command {
	return &cli.Command{
		Name:  "notify",
		Usage: "send what needs you to a webhook, ntfy, Slack, Telegram or a command",
		Description: "A sink is sent the team's events: needs-you (an approval, a question, a worker stopped, a\n" +
			"crash loop, a full disk, an upstream failing …), task-failed, goal-done, budget-reached and\n" +
			"node-down. Each message says what happened, which pane, and the one command that resolves it.\n" +
			"Messages go through a queue in the database: at least once, each with an idempotency id,\n" +
			"retried with backoff; a sink that fails shows in 'status' and slows nothing else. A pane\n" +
			"that flaps sends one message per kind a minute, then a digest.\n" +
			"A telegram sink is two-way: its messages carry buttons (Approve, Deny, an option, Restart,\n" +
			"Show screen) that do what 'cicy-agent answer' does, once, from the configured chat only.\n" +
			"Secrets (a webhook's signing key, an ntfy token, a Telegram bot token, a Slack webhook URL)\n" +
			"come from a file (--secret-file, readable by its owner only) or a variable of the\n" +
			"supervisor's environment (--secret-env), never from the command line.\n" +
			"See docs/notifications.md.",
		Subcommands: []*cli.Command{e.notifyAddCmd(), e.notifyLsCmd(), e.notifyRmCmd(), e.notifyTestCmd(), e.notifyMuteCmd(), e.notifyUnmuteCmd()},
	}
}

func (e *env) notifyAddCmd() *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "add a sink",
		ArgsUsage: "<name> --type TYPE [--url URL] [--secret-file FILE|--secret-env NAME] [--chat ID] [--events KIND,…]",
		Description: "Types:\n" +
			"  webhook   a JSON POST to --url, signed with the secret: X-Cicy-Signature: sha256=<HMAC of the body>\n" +
			"  ntfy      a message to the topic --url (the secret, if any, is an access token)\n" +
			"  slack     an incoming webhook: its URL is the secret (--secret-file or --secret-env)\n" +
			"  telegram  the bot token is the secret, --chat the chat id; --url the Bot API (default the public one)\n" +
			"  command   --url is a program and its arguments, run with the event as JSON on stdin\n" +
			"Events: " + strings.Join(notify.Events, ", ") + ", or needs-you:<kind> (e.g. needs-you:approval).\n\n" +
			"Examples:\n" +
			"  cicy-agent notify add ops --type webhook --url https://ci.example/hook --secret-file ~/.ops-hook\n" +
			"  cicy-agent notify add phone --type ntfy --url https://ntfy.example/team-alerts\n" +
			"  cicy-agent notify add me --type telegram --chat 123456789 --secret-env TELEGRAM_BOT_TOKEN\n" +
			"  cicy-agent notify add desk --type command --url 'notify-send-json' --events needs-you",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Usage: "sink `TYPE`: " + strings.Join(notify.Types, ", "), Required: true},
			&cli.StringFlag{Name: "url", Usage: "the webhook, topic or Bot API `URL`; a command sink's program and arguments"},
			&cli.StringFlag{Name: "secret-file", Usage: "read the secret from `FILE` (readable by its owner only); kept in the home, 0600"},
			&cli.StringFlag{Name: "secret-env", Usage: "read the secret from the supervisor's environment variable `NAME` at each start"},
			&cli.StringFlag{Name: "chat", Usage: "a telegram sink's chat `ID`"},
			&cli.StringSliceFlag{Name: "events", Usage: "send only these `KIND`s (default: every event)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			a, err := args(c, 1, 1, "<name> --type TYPE …")
			if err != nil {
				return err
			}
			req := api.NotifyAddRequest{Name: a[0], Type: c.String("type"), URL: c.String("url"), Chat: c.String("chat"), SecretEnv: c.String("secret-env"), Events: splitList(c.StringSlice("events"))}
			if f := c.String("secret-file"); f != "" {
				if req.Secret, err = readSecretFile(f); err != nil {
					return err
				}
			}
			return fetch(e, c, func(cl *api.Client) (api.NotifySink, error) { return cl.AddNotifySink(c.Context, req) }, func(s api.NotifySink) error {
				fmt.Fprintf(e.stdout, "added %s (%s); 'cicy-agent notify test %s' sends it a sample\n", s.Name, s.Type, s.Name)
				return nil
			})
		},
	}
}

// splitList splits comma lists given to a repeatable flag.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// readSecretFile reads a secret from a file that only its owner may read.
func readSecretFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", usagef("read the secret: %v", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", usagef("the secret file %s can be read by other users (mode %04o): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the secret: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", usagef("the secret file %s is empty", path)
	}
	return secret, nil
}

func (e *env) notifyLsCmd() *cli.Command {
	return &cli.Command{
		Name:   "ls",
		Usage:  "list the sinks (secrets masked), what each sent last, and since when it fails",
		Flags:  []cli.Flag{jsonFlag},
		Action: listAction(e, (*api.Client).NotifySinks, printSinks),
	}
}

// printSinks is notify ls as text.
func printSinks(w io.Writer, sinks []api.NotifySink) error {
	if len(sinks) == 0 {
		_, err := fmt.Fprintln(w, "no sinks (add one with 'cicy-agent notify add')")
		return err
	}
	return printTable(w, "NAME\tTYPE\tURL\tSECRET\tEVENTS\tSTATE", sinks, func(s api.NotifySink) string {
		events := "all"
		if len(s.Events) > 0 {
			events = strings.Join(s.Events, ",")
		}
		url := s.URL
		if s.Chat != "" {
			url += " chat " + s.Chat
		}
		secret := s.Secret
		if secret == "" {
			secret = "-"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", s.Name, s.Type, url, secret, events, sinkStateWords(s.SinkState))
	})
}

// sinkStateWords is what a sink did, as its status line says it.
func sinkStateWords(s topology.SinkState) string {
	line := strings.TrimPrefix(s.Line(), "notify: "+s.Name+" ")
	return strings.TrimPrefix(line, "("+s.Type+") ")
}

func (e *env) notifyRmCmd() *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove a sink, its secret and its messages not sent yet",
		ArgsUsage: "<name>",
		Action:    doneAction(e, "<name>", (*api.Client).RemoveNotifySink, "removed %s\n"),
	}
}

func (e *env) notifyTestCmd() *cli.Command {
	return &cli.Command{
		Name:      "test",
		Usage:     "send a sample to a sink now and print its answer",
		ArgsUsage: "<name>",
		Flags:     []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			a, cl, err := connect(c, 1, 1, "<name> [--json]")
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, time.Minute)
			defer cancel()
			res, err := cl.TestNotifySink(ctx, a[0])
			if err != nil {
				return err
			}
			return showThen(e, c, res, func(res api.NotifyTestResult) {
				fmt.Fprintf(e.stdout, "%s answered %d\n", res.Sink, res.Status)
				if res.Answer != "" {
					fmt.Fprintln(e.stdout, strings.TrimRight(res.Answer, "\n"))
				}
			}, func(res api.NotifyTestResult) error {
				if res.Error != "" {
					return fmt.Errorf("%s did not take it: %s", res.Sink, res.Error)
				}
				return nil
			})
		},
	}
}

func (e *env) notifyMuteCmd() *cli.Command {
	return &cli.Command{
		Name:      "mute",
		Usage:     "send nothing about a pane, a team (team:<name>) or anything (all), for a while or until unmuted",
		ArgsUsage: "<pane>|team:<name>|all [--for 1h]",
		Description: "Without an argument, lists the mutes in force. What happens while muted is not sent\n" +
			"later; status and the dashboard still show it.",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "for", Usage: "mute for `TIME` (e.g. 30m, 2h); default: until 'notify unmute'"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			a, cl, err := connect(c, 0, 1, "<pane>|team:<name>|all [--for 1h]")
			if err != nil {
				return err
			}
			if len(a) == 0 {
				return present(e, c, func() ([]api.NotifyMute, error) { return cl.NotifyMutes(c.Context) }, func(mutes []api.NotifyMute) error {
					if len(mutes) == 0 {
						fmt.Fprintln(e.stdout, "nothing is muted")
					}
					for _, m := range mutes {
						fmt.Fprintln(e.stdout, muteLine(m))
					}
					return nil
				})
			}
			return present(e, c, func() (api.NotifyMute, error) {
				return cl.MuteNotify(c.Context, api.NotifyMuteRequest{Target: a[0], For: c.Duration("for")})
			}, func(m api.NotifyMute) error {
				fmt.Fprintln(e.stdout, muteLine(m))
				return nil
			})
		},
	}
}

// muteLine says what is muted until when.
func muteLine(m api.NotifyMute) string {
	if m.Until == nil {
		return fmt.Sprintf("%s muted until 'cicy-agent notify unmute %s'", m.Target, m.Target)
	}
	return fmt.Sprintf("%s muted until %s", m.Target, m.Until.Local().Format("15:04:05"))
}

func (e *env) notifyUnmuteCmd() *cli.Command {
	return &cli.Command{
		Name:      "unmute",
		Usage:     "send again what a pane or a team needs",
		ArgsUsage: "<pane>|team:<name>|all",
		Action:    doneAction(e, "<pane>|team:<name>|all", (*api.Client).UnmuteNotify, "%s unmuted\n"),
	}
}
