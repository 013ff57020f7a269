package main

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/attach"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/dashboard"
	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/termsafe"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
)

func (e *env) dashboardCmd() *cli.Command {
	return &cli.Command{
		Name:  "dashboard",
		Usage: "the live terminal dashboard: panes, topology and completion, recent tasks, a preview",
		Description: "Updated by the supervisor's event stream, not by polling. Keys: ↑↓ or j/k select,\n" +
			"Enter attaches (detaching comes back), s sends, d dispatches, c compacts, x kills,\n" +
			"? help, q quits. Lines marked ! need you, and ring the bell when they appear; the\n" +
			"kinds (as 'status' names them):\n" + strings.Join(dashboard.NeedKindLines("  "), "\n"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "bell", Value: true, Usage: "ring the terminal bell when something new needs you (--bell=false: silent)", EnvVars: []string{"CICY_DASHBOARD_BELL"}},
		},
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0, "[--bell=false]"); err != nil {
				return err
			}
			in, ok := e.stdin.(*os.File)
			out, ok2 := e.stdout.(*os.File)
			if !ok || !ok2 || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
				return usagef("dashboard needs an interactive terminal; 'cicy-agent status --watch' follows the team from scripts")
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			// The dashboard is one event loop: a second processor would
			// only spin looking for work at every wake-up (measured: 15%
			// of its CPU).
			runtime.GOMAXPROCS(1)
			h, _ := home(c)
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find this program: %w", err)
			}
			return dashboard.Run(c.Context, cl, dashboard.RunOptions{
				Bell: c.Bool("bell"), In: in, Out: out,
				Attach: func(id string) *exec.Cmd {
					return exec.Command(self, "--home", h.Root, "attach", id)
				},
			})
		},
	}
}

// watchStatus prints the status view each time the team changes, until
// the stream ends or the command is interrupted.
func watchStatus(c *cli.Context, cl *api.Client, w io.Writer, asJSON bool) error {
	st, err := cl.TeamEvents(c.Context)
	if err != nil {
		return err
	}
	defer st.Close()
	clear := false
	if f, ok := termsafe.Underlying(w).(*os.File); ok && term.IsTerminal(int(f.Fd())) && !asJSON {
		clear = true
	}
	team := dashboard.NewTeam()
	for {
		ev, err := st.Next()
		if err != nil {
			if c.Context.Err() != nil {
				return nil
			}
			return failf("the supervisor's event stream ended (did it shut down?)")
		}
		team.Apply(ev)
		if st.Pending() {
			continue // fold what has already arrived into one print
		}
		status := team.Status(time.Now())
		switch {
		case asJSON:
			if err := writeJSONLine(w, status); err != nil {
				return err
			}
		case clear:
			fmt.Fprint(termsafe.Underlying(w), "\x1b[H\x1b[2J")
			printStatus(w, status)
		default:
			fmt.Fprintf(w, "--- %s\n", time.Now().Format("15:04:05"))
			printStatus(w, status)
		}
	}
}

func (e *env) viewCmd() *cli.Command {
	return &cli.Command{
		Name:      "view",
		Usage:     "a tmux window with the team's panes side by side (tiled), each attached",
		ArgsUsage: "[pane…]",
		Description: "Each tile runs 'cicy-agent attach <pane>': CLI agents and cicy agents are watched\n" +
			"together. Inside tmux the view opens as a new window; outside, as a tmux session that\n" +
			"this command attaches to. Closing the view (or a tile) leaves the panes running.\n" +
			"With no panes named, every running pane is shown.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "create the view's tmux session but do not attach to it"},
			&cli.StringFlag{Name: "tmux-socket", Aliases: []string{"L"}, Usage: "the tmux server's socket `NAME` (tmux -L; default: your tmux)"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			var want []string
			for _, a := range c.Args().Slice() {
				id, err := api.ParsePaneID(a)
				if err != nil {
					return err
				}
				want = append(want, id)
			}
			if _, err := exec.LookPath("tmux"); err != nil {
				return failf("view needs tmux on PATH")
			}
			_, panes, err := listPanes(c)
			if err != nil {
				return err
			}
			h, _ := home(c)
			return e.view(c, h, panes, want)
		},
	}
}

// viewResult is what `view --json` prints.
type viewResult struct {
	Session string   `json:"session"`
	Window  string   `json:"window"`
	Panes   []string `json:"panes"`
	Skipped []string `json:"skipped"`
	Attach  []string `json:"attach"`
}

func (e *env) view(c *cli.Context, h supervisor.Home, panes []api.PaneInfo, want []string) error {
	var ids []string
	byID := map[string]api.PaneInfo{}
	for _, p := range panes {
		byID[p.ID] = p
		if len(want) == 0 && p.State != "exited" {
			ids = append(ids, p.ID)
		}
	}
	for _, id := range want {
		if _, ok := byID[id]; !ok {
			return usagef("no pane %s (see 'cicy-agent ls')", id)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return failf("no running panes to view ('cicy-agent ls' lists them)")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program: %w", err)
	}
	base := []string{}
	if s := c.String("tmux-socket"); s != "" {
		base = append(base, "-L", s)
	}
	runner := pane.TmuxRunner{Args: base}
	if len(base) > 0 {
		runner.Env = attach.WithoutTMUX(os.Environ())
	}
	tmux := func(args ...string) (string, error) {
		out, err := runner.Run(c.Context, nil, args...)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(out)), nil
	}
	tile := func(id string) string {
		return cliagent.ShellQuote(self) + " --home " + cliagent.ShellQuote(h.Root) + " attach " + id
	}
	inside := os.Getenv("TMUX") != "" && len(base) == 0
	sum := sha1.Sum([]byte(h.Root))
	res := viewResult{Session: "cicy-view-" + hex.EncodeToString(sum[:3]), Window: "team", Skipped: []string{}}
	var target string
	if inside {
		if target, err = tmux("new-window", "-P", "-F", "#{window_id}", "-n", "team", tile(ids[0])); err != nil {
			return err
		}
		if res.Session, err = tmux("display-message", "-p", "-t", target, "#{session_name}"); err != nil {
			return err
		}
	} else {
		// The view is a set of viewers: an old one is replaced. The new
		// session comes first: killing the server's only session ends the
		// server, and a new-session racing its exit fails ("server exited
		// unexpectedly").
		w, hgt := 200, 50
		if f, ok := e.stdout.(*os.File); ok {
			if cw, ch, err := term.GetSize(int(f.Fd())); err == nil {
				w, hgt = cw, ch
			}
		}
		next := res.Session + "-next"
		_, _ = tmux("kill-session", "-t", "="+next)
		if target, err = tmux("new-session", "-d", "-P", "-F", "#{window_id}", "-s", next, "-n", "team",
			"-x", fmt.Sprint(w), "-y", fmt.Sprint(hgt), tile(ids[0])); err != nil {
			return err
		}
		_, _ = tmux("kill-session", "-t", "="+res.Session)
		if _, err := tmux("rename-session", "-t", "="+next, res.Session); err != nil {
			return err
		}
	}
	_, _ = tmux("set-option", "-w", "-t", target, "pane-border-status", "top")
	_, _ = tmux("set-option", "-w", "-t", target, "pane-border-format", " #{pane_title} ")
	title := func(pane, id string) {
		p := byID[id]
		_, _ = tmux("select-pane", "-t", pane, "-T", id+" "+p.Title+" ("+p.Type+")")
	}
	first, err := tmux("display-message", "-p", "-t", target, "#{pane_id}")
	if err != nil {
		return err
	}
	title(first, ids[0])
	res.Panes = append(res.Panes, ids[0])
	for _, id := range ids[1:] {
		pane, err := tmux("split-window", "-P", "-F", "#{pane_id}", "-t", target, tile(id))
		if err != nil {
			// No room for another tile: show what fits, say what did not.
			res.Skipped = append(res.Skipped, id)
			continue
		}
		title(pane, id)
		res.Panes = append(res.Panes, id)
		_, _ = tmux("select-layout", "-t", target, "tiled")
	}
	_, _ = tmux("select-layout", "-t", target, "tiled")
	res.Attach = append(append([]string{"tmux"}, base...), "attach", "-t", "="+res.Session)
	// Recorded, so that the view ends with its panes (down) or with the
	// supervisor (shutdown).
	if sock, err := tmux("display-message", "-p", "-t", target, "#{socket_path}"); err == nil && sock != "" {
		v := screens.View{Socket: sock, Session: res.Session, Panes: res.Panes}
		if inside {
			v.Session, v.Window = "", target
		}
		if err := screens.SaveView(h.ViewFile(), v); err != nil {
			fmt.Fprintf(e.stderr, "warning: %v; the view stays after shutdown\n", err)
		}
	}
	if c.Bool("json") {
		return printJSON(e.stdout, res)
	}
	if len(res.Skipped) > 0 {
		fmt.Fprintf(e.stderr, "warning: no room for %s; name fewer panes, or use a bigger terminal\n", strings.Join(res.Skipped, ", "))
	}
	in, isFile := e.stdin.(*os.File)
	if inside || c.Bool("detach") || !isFile || !term.IsTerminal(int(in.Fd())) {
		fmt.Fprintf(e.stdout, "view of %s in tmux session %s", strings.Join(res.Panes, " "), res.Session)
		if !inside {
			fmt.Fprintf(e.stdout, "; attach: %s", strings.Join(res.Attach, " "))
		}
		fmt.Fprintln(e.stdout)
		return nil
	}
	cmd := exec.Command(res.Attach[0], res.Attach[1:]...)
	cmd.Env = attach.WithoutTMUX(os.Environ())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, e.stdout, e.stderr
	if err := cmd.Run(); err != nil {
		return failf("tmux attach failed: %v", err)
	}
	return nil
}
