package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/termsafe"
	"github.com/cicy-ai/cicy-agent/topology"
)

func (e *env) dispatchCmd() *cli.Command {
	return &cli.Command{
		Name:      "dispatch",
		Usage:     "give a task to a worker; prints the task id (with --wait, the result)",
		ArgsUsage: "--to <worker> <task…>",
		Description: "The task waits in the outbox until the worker is idle, then goes to it: a cicy worker\n" +
			"gets it as a message, a terminal worker gets it typed. When it ends, its master is told.\n" +
			"Without --from the task comes from the worker's master (or from you, when it has none).\n" +
			"Tasks go to workers only: not to a master, not to an untracked (free-text role) pane.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "the worker `PANE` (id or title)", Required: true},
			&cli.StringFlag{Name: "from", Usage: "the master `PANE` it comes from"},
			&cli.StringFlag{Name: "file", Usage: "read the task from `FILE` (- for stdin) instead of the arguments"},
			&cli.BoolFlag{Name: "wait", Usage: "wait until the task ends and print its result"},
			&cli.DurationFlag{Name: "timeout", Usage: "with --wait: give up after `TIME`, e.g. 90s or 10m (exit 1; the task goes on)", DefaultText: "0, which means no timeout"},
			jsonFlag, rawFlag,
		},
		Action: func(c *cli.Context) error {
			text := strings.Join(c.Args().Slice(), " ")
			if rest, ok := strings.CutPrefix(text, "-- "); ok {
				text = rest
			}
			if f := c.String("file"); f != "" {
				if text != "" {
					return usagef("give the task as arguments or with --file, not both")
				}
				b, err := readInput(e, f)
				if err != nil {
					return err
				}
				text = string(b)
			}
			if strings.TrimSpace(text) == "" {
				return usagef("usage: cicy-agent dispatch --to <worker> <task…>")
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			t, err := cl.Dispatch(c.Context, api.DispatchRequest{
				From: c.String("from"), To: c.String("to"), Text: text, Wait: c.Bool("wait"), Timeout: c.Duration("timeout").Seconds(),
				Caller: os.Getenv("CICY_PANE_ID"),
			})
			if err != nil {
				return err
			}
			if !c.Bool("wait") {
				warnStopped(c, cl, e.stderr, t)
			}
			if c.Bool("json") {
				if err := printJSON(e.stdout, t); err != nil {
					return err
				}
			} else if !c.Bool("wait") {
				fmt.Fprintln(e.stdout, t.ID)
			} else if t.Result != "" {
				fmt.Fprintln(e.stdout, t.Result)
			} else if t.Status == api.TaskDone {
				// Not silence: which task, and that it ended (on stderr,
				// so that a script's capture of the result stays empty).
				fmt.Fprintf(e.stderr, "task %d done (no output)\n", t.ID)
			}
			if c.Bool("wait") {
				return taskExit(t)
			}
			return nil
		},
	}
}

// taskExit is nil for a done task, exit status 1 otherwise.
func taskExit(t api.TaskInfo) error {
	switch t.Status {
	case api.TaskDone:
		return nil
	case api.TaskFailed:
		return failf("task %d failed: %s", t.ID, t.Error)
	case api.TaskCancelled:
		return failf("task %d was cancelled", t.ID)
	}
	return failf("task %d is still %s (timed out waiting)", t.ID, t.Status)
}

func taskIDArg(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "t"), 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%q is not a task id (a positive number)", s)
	}
	return id, nil
}

func (e *env) tasksCmd() *cli.Command {
	return &cli.Command{
		Name:  "tasks",
		Usage: "list tasks (--pane P: those from or to P); 'tasks show <id>' for one",
		Flags: []cli.Flag{jsonFlag, rawFlag, &cli.StringFlag{Name: "pane", Usage: "only the tasks from or to `PANE` (id or title)"}},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return unknownCommand(c.Args().First(), "tasks", c.Command.Subcommands)
			}
			return fetch(e, c, func(cl *api.Client) ([]api.TaskInfo, error) { return cl.Tasks(c.Context, c.String("pane")) }, func(ts []api.TaskInfo) error {
				if len(ts) == 0 {
					fmt.Fprintln(e.stderr, "no tasks; give one with: cicy-agent dispatch --to <worker> <task>")
					return nil
				}
				return printTasks(e.stdout, ts, time.Now())
			})
		},
		Subcommands: []*cli.Command{{
			Name:      "show",
			Usage:     "one task in full",
			ArgsUsage: "<id>",
			Flags:     []cli.Flag{jsonFlag, rawFlag},
			Action: func(c *cli.Context) error {
				return withTask(c, "usage: cicy-agent tasks show <id>", func(cl *api.Client, id int64) error {
					return present(e, c, func() (api.TaskInfo, error) { return cl.Task(c.Context, id) }, e.printTask)
				})
			},
		}},
	}
}

// withTask parses the one task id argument (usage is the message when
// there is not one), connects (starting the supervisor if needed) and
// runs f.
func withTask(c *cli.Context, usage string, f func(cl *api.Client, id int64) error) error {
	if c.Args().Len() != 1 {
		return usagef("%s", usage)
	}
	id, err := taskIDArg(c.Args().First())
	if err != nil {
		return err
	}
	return withClient(c, func(cl *api.Client) error { return f(cl, id) })
}

// printTask is tasks show as text: one task in full.
func (e *env) printTask(t api.TaskInfo) error {
	fmt.Fprintf(e.stdout, "task %d  %s → %s  %s (%s)\ncreated %s", t.ID, t.From, t.To, t.Status, t.Reason, t.CreatedAt.Local().Format(time.DateTime))
	if t.DeliveredAt != nil {
		fmt.Fprintf(e.stdout, "  delivered %s", t.DeliveredAt.Local().Format(time.DateTime))
	}
	if t.FinishedAt != nil {
		fmt.Fprintf(e.stdout, "  finished %s", t.FinishedAt.Local().Format(time.DateTime))
	}
	fmt.Fprintf(e.stdout, "\n\n%s\n", t.Text)
	from := ""
	if t.Source != "" {
		from = " (from " + t.Source + ")"
	}
	if t.Result != "" {
		fmt.Fprintf(e.stdout, "\nresult%s:\n%s\n", from, t.Result)
	}
	if t.Error != "" {
		fmt.Fprintf(e.stdout, "\nerror%s: %s\n", from, t.Error)
	}
	if t.Work != nil {
		fmt.Fprintf(e.stdout, "\nwork: %s\n", workText(t.Work))
	}
	return nil
}

// printTasks is the table of tasks; when the tasks' senders and workers
// run on more than one node, a NODE column names each worker's node.
func printTasks(w io.Writer, ts []api.TaskInfo, now time.Time) error {
	var nodes []string
	for _, t := range ts {
		nodes = append(nodes, t.ToNode, t.FromNode)
	}
	many := topology.SpansNodes(nodes...)
	work := slices.ContainsFunc(ts, func(t api.TaskInfo) bool { return t.Work != nil })
	// The cells are measured before they are printed: cleaned first.
	cell := func(s string) string { return s }
	if _, ok := w.(*termsafe.Writer); ok {
		cell = termsafe.Text
	}
	return printTable(w, "ID\tFROM\tTO\t"+nodeHead(many)+"STATUS\tAGE\t"+workHead(work)+"TEXT\tRESULT", ts, func(t api.TaskInfo) string {
		out := t.Result
		if t.Status == api.TaskFailed {
			out = t.Error
		}
		return fmt.Sprintf("%d\t%s\t%s\t%s%s\t%s\t%s%s\t%s", t.ID, t.From, t.To, nodeCell(many, t.ToNode), t.Status,
			now.Sub(t.CreatedAt).Round(time.Second), workCell(work, t.Work), clip.Runes(oneLine(cell(t.Text)), 40), clip.Runes(oneLine(cell(out)), 40))
	})
}

// workHead is the CHANGE column's head when some task left work on a
// worktree.
func workHead(work bool) string {
	if !work {
		return ""
	}
	return "CHANGE\t"
}

// workCell is a task's CHANGE cell: its stat, "-" for a task that left
// none.
func workCell(work bool, w *api.Work) string {
	switch {
	case !work:
		return ""
	case w == nil:
		return "-\t"
	}
	return w.Stat() + "\t"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (e *env) waitCmd() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "block until tasks end (exit 1 if any failed or the timeout passed)",
		ArgsUsage: "<task-id…>",
		Flags:     []cli.Flag{&cli.DurationFlag{Name: "timeout", Usage: "give up after `TIME`, e.g. 90s or 10m", DefaultText: "0, which means no timeout"}, rawFlag},
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 {
				return usagef("usage: cicy-agent wait <task-id…> [--timeout D]")
			}
			var ids []int64
			for _, a := range c.Args().Slice() {
				id, err := taskIDArg(a)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			deadline := time.Now().Add(c.Duration("timeout"))
			var firstErr error
			for _, id := range ids {
				left := time.Duration(0)
				if c.Duration("timeout") > 0 {
					if left = time.Until(deadline); left <= 0 {
						left = time.Millisecond
					}
				}
				t, err := cl.WaitTask(c.Context, id, left)
				if err != nil {
					return err
				}
				out := t.Result
				if t.Status != api.TaskDone {
					out = t.Error
				}
				fmt.Fprintf(e.stdout, "task %d %s: %s\n", t.ID, t.Status, clip.Runes(oneLine(out), 100))
				if err := taskExit(t); err != nil && firstErr == nil {
					firstErr = err
				}
			}
			return firstErr
		},
	}
}

func (e *env) cancelTaskCmd() *cli.Command {
	return &cli.Command{
		Name:      "cancel-task",
		Usage:     "cancel a queued or running task",
		ArgsUsage: "<id>",
		Action: func(c *cli.Context) error {
			return withTask(c, "usage: cicy-agent cancel-task <id>", func(cl *api.Client, id int64) error {
				_, err := cl.CancelTask(c.Context, id)
				return err
			})
		},
	}
}

// readInput reads a file, or stdin for "-", for a command's input (at most
// 16 MB; the supervisor refuses what is too long with a sentence).
func readInput(e *env, path string) ([]byte, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, failf("cannot read %s: %v", path, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, failf("cannot read %s: %v", path, err)
	}
	return b, nil
}

// warnStopped says on stderr when the task's worker is not running: the
// task waits in its queue until the worker is restarted.
func warnStopped(c *cli.Context, cl *api.Client, w io.Writer, t api.TaskInfo) {
	pi, err := cl.Get(c.Context, t.To)
	if err != nil || (pi.State != "exited" && pi.State != "error") {
		return
	}
	fmt.Fprintf(w, "warning: %s is not running (%s): task %d waits until it is; 'cicy-agent restart %s' starts it\n", t.To, pi.Reason, t.ID, t.To)
}
