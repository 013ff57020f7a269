package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
	"github.com/cicy-ai/cicy-agent/topology"
)

func (e *env) upCmd() *cli.Command {
	return &cli.Command{
		Name:      "up",
		Usage:     "start a whole team from a team file and hand the master its goal",
		ArgsUsage: "<team.yaml>",
		Description: "The team file's keys and defaults are in docs/team-files.md of the cicy-agent repository.\n" +
			"Every pane of the file is created, or re-used when a pane with its title exists\n" +
			"(restarted if it had exited). Masters come first, so workers link to them. The goal goes\n" +
			"to its master. With --wait the command follows the master's tasks and exits 0 when the\n" +
			"goal is done: every task it dispatched has ended, the master was told of each, and it\n" +
			"is idle again; 1 if a task failed, the timeout passed, or a pane of the team cannot make\n" +
			"a model call (its provider has no key in the supervisor's environment: said at once).",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "wait", Usage: "follow the goal to its end and print the final status"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "with --wait: give up after `TIME`"},
		},
		Action: func(c *cli.Context) error {
			a, err := args(c, 1, 1, "<team.yaml>")
			if err != nil {
				return err
			}
			team, err := topology.LoadTeam(a[0])
			if err != nil {
				return usagef("%v", err)
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			e.warnProvider(c.Context, cl)
			ids, err := e.bringUp(c.Context, cl, team)
			if err != nil {
				return err
			}
			noModel, err := e.cannotCall(c.Context, cl, ids)
			if err != nil {
				return err
			}
			if team.Goal == nil {
				if noModel != "" {
					fmt.Fprintf(e.stderr, "warning: %s\n", noModel)
				}
				return nil
			}
			if noModel != "" && c.Bool("wait") {
				return failf("%s", noModel)
			} else if noModel != "" {
				fmt.Fprintf(e.stderr, "warning: %s\n", noModel)
			}
			master := ids[team.Goal.To]
			if _, err := cl.Send(c.Context, master, api.SendRequest{Text: team.Goal.Text}); err != nil {
				return fmt.Errorf("hand the goal to %s: %w", master, err)
			}
			fmt.Fprintf(e.stderr, "goal sent to %s (%s)\n", master, team.Goal.To)
			if !c.Bool("wait") {
				return nil
			}
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
			defer cancel()
			return e.followGoal(ctx, cl, master, ids, c.Duration("timeout"))
		},
	}
}

// bringUp creates or re-uses every pane of the team, masters first. If a
// create fails, the panes this run created are removed again: nothing is
// left half-made.
func (e *env) bringUp(ctx context.Context, cl *api.Client, team *topology.Team) (map[string]string, error) {
	existing, err := cl.List(ctx)
	if err != nil {
		return nil, err
	}
	byTitle := map[string]api.PaneInfo{}
	for _, p := range existing {
		byTitle[p.Title] = p
	}
	panes := append([]topology.TeamPane(nil), team.Panes...)
	sort.SliceStable(panes, func(i, j int) bool {
		return panes[i].Role == topology.RoleMaster && panes[j].Role != topology.RoleMaster
	})
	// Its sinks hear of its panes from their start.
	if err := teamSinks(ctx, cl, team); err != nil {
		return nil, err
	}
	// The team's budget is in force before its panes start.
	unbudget, err := e.teamBudget(ctx, cl, team)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	var created []string
	undo := func() {
		for _, id := range created {
			_ = cl.Kill(context.Background(), id)
		}
		unbudget()
	}
	for _, p := range panes {
		if ex, ok := byTitle[p.Title]; ok {
			if ex.Type != p.Type || ex.Role != p.Role {
				undo()
				return nil, usagef("%s line %d: a pane titled %q exists as a %s %s (%s); the team file wants a %s %s", team.Path, p.Line, p.Title, ex.Role, ex.Type, ex.ID, p.Role, p.Type)
			}
			if err := e.paneBudget(ctx, cl, ex, p); err != nil {
				undo()
				return nil, err
			}
			if ex.State == "exited" || ex.State == "error" {
				if err := cl.Restart(ctx, ex.ID); err != nil {
					undo()
					return nil, fmt.Errorf("restart %s (%s): %w", ex.ID, p.Title, err)
				}
			}
			ids[p.Title] = ex.ID
			fmt.Fprintf(e.stderr, "re-using %s %s\n", ex.ID, p.Title)
			continue
		}
		req := api.CreateRequest{
			Title: p.Title, Type: p.Type, Role: p.Role, RoleTemplate: p.RoleTemplate, Workspace: p.Workspace,
			Provider: p.Provider, Model: p.Model, Command: p.Command, Team: team.Name, Master: ids[p.Master],
			Env: p.Env, BudgetUSD: p.BudgetUSD, AllowAll: p.AllowAll, Node: p.Node, Worktree: p.InWorktree(), Restart: p.Restart,
		}
		resp, err := cl.Create(ctx, req)
		if err != nil {
			undo()
			var ae *api.Error
			if errors.As(err, &ae) {
				ae.Message = fmt.Sprintf("%s line %d: pane %q: %s", team.Path, p.Line, p.Title, ae.Message)
			}
			return nil, err
		}
		created = append(created, resp.ID)
		ids[p.Title] = resp.ID
		fmt.Fprintf(e.stderr, "created %s %s (%s %s)\n", resp.ID, p.Title, p.Type, p.Role)
	}
	return ids, nil
}

// teamBudget sets the team's budget from the file when the team has none
// and returns how to remove it again; a budget already set (by an earlier
// up, or by the budget command) is kept, and up says so when the file's
// differs.
func (e *env) teamBudget(ctx context.Context, cl *api.Client, team *topology.Team) (undo func(), err error) {
	undo = func() {}
	if team.BudgetUSD == 0 {
		return undo, nil
	}
	ref := api.TeamRef + team.Name
	cur, err := cl.Budget(ctx, ref)
	if err != nil {
		return nil, err
	}
	if cur.BudgetUSD != nil {
		if *cur.BudgetUSD != team.BudgetUSD {
			fmt.Fprintf(e.stderr, "team %s keeps its budget of %s (the file says %s); change it with: cicy-agent budget %s %s\n",
				team.Name, api.USD(*cur.BudgetUSD), api.USD(team.BudgetUSD), ref, api.Amount(team.BudgetUSD))
		}
		return undo, nil
	}
	if _, err := cl.SetBudget(ctx, ref, api.BudgetRequest{BudgetUSD: &team.BudgetUSD, Create: true}); err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "budget of team %s: %s\n", team.Name, api.USD(team.BudgetUSD))
	return func() { _, _ = cl.SetBudget(context.Background(), ref, api.BudgetRequest{Create: true}) }, nil
}

// paneBudget gives a re-used pane the file's budget when it has none; a
// budget it has is kept, and up says so when the file's differs.
func (e *env) paneBudget(ctx context.Context, cl *api.Client, ex api.PaneInfo, p topology.TeamPane) error {
	switch {
	case p.BudgetUSD == 0:
	case ex.BudgetUSD == nil:
		if _, err := cl.SetBudget(ctx, ex.ID, api.BudgetRequest{BudgetUSD: &p.BudgetUSD}); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "budget of %s %s: %s\n", ex.ID, p.Title, api.USD(p.BudgetUSD))
	case *ex.BudgetUSD != p.BudgetUSD:
		fmt.Fprintf(e.stderr, "%s %s keeps its budget of %s (the file says %s); change it with: cicy-agent budget %s %s\n",
			ex.ID, p.Title, api.USD(*ex.BudgetUSD), api.USD(p.BudgetUSD), ex.ID, api.Amount(p.BudgetUSD))
	}
	return nil
}

// followGoal prints the master's tasks as they change and returns when
// the goal is done (see up's description), failed, or ctx ends.
func (e *env) followGoal(ctx context.Context, cl *api.Client, master string, ids map[string]string, timeout time.Duration) error {
	seen := map[int64]string{}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var g goalTally
	// The timeout may end a request to the supervisor as well as the wait.
	timedOut := func(err error) error {
		if ctx.Err() == nil {
			return err
		}
		return failf("the goal was not done within %s (%d of %d tasks still open; see 'cicy-agent status')", timeout, g.pending, g.total)
	}
	for {
		tasks, err := cl.Tasks(ctx, master)
		if err != nil {
			return timedOut(err)
		}
		g = e.tally(tasks, master, seen)
		m, err := cl.Get(ctx, master)
		if err != nil {
			return timedOut(err)
		}
		if g.total > 0 && g.pending == 0 && m.State == "idle" && m.Since.After(g.lastNotified) {
			return e.goalDone(ctx, cl, master, g.failed)
		}
		// A pane of the team that cannot make a model call stops the
		// wait: nothing it should do will happen.
		if why, err := e.cannotCall(ctx, cl, ids); err != nil {
			return timedOut(err)
		} else if why != "" {
			return failf("%s", why)
		}
		select {
		case <-ctx.Done():
			return timedOut(ctx.Err())
		case <-tick.C:
		}
	}
}

// cannotCall says which panes of the team (ids, by title) cannot make a
// model call, and why (needs-you kind provider); "" when all can.
func (e *env) cannotCall(ctx context.Context, cl *api.Client, ids map[string]string) (string, error) {
	st, err := cl.Status(ctx)
	if err != nil {
		return "", err
	}
	ours := map[string]string{}
	for title, id := range ids {
		ours[id] = title
	}
	var out []string
	for _, n := range st.NeedsYou {
		if title, ok := ours[n.ID]; ok && n.Kind == topology.NeedProvider {
			out = append(out, fmt.Sprintf("%s (%s) cannot make a model call: %s", n.ID, title, n.Reason))
		}
	}
	if len(out) == 0 {
		return "", nil
	}
	sort.Strings(out)
	return strings.Join(out, "; ") + " (the running supervisor keeps the environment it was started with: set the variable there, or 'cicy-agent shutdown' and run again with it set)", nil
}

// warnProvider says when this command's CICY_PROVIDER is not the running
// supervisor's: the panes follow the supervisor's.
func (e *env) warnProvider(ctx context.Context, cl *api.Client) {
	mine := os.Getenv("CICY_PROVIDER")
	h, err := cl.Health(ctx)
	if err != nil || mine == "" || mine == h.Provider {
		return
	}
	theirs := "unset (anthropic)"
	if h.Provider != "" {
		theirs = h.Provider
	}
	fmt.Fprintf(e.stderr, "warning: CICY_PROVIDER is %s here but %s in the running supervisor (pid %d), whose cicy panes use its own; 'cicy-agent shutdown' and run again to start one with this environment\n",
		mine, theirs, h.PID)
}

// goalTally is what the master's tasks say about its goal.
type goalTally struct {
	pending, total int // tasks still open (or not yet told to the master), all tasks
	failed         []string
	lastNotified   time.Time // when the master was last told of a task
}

// tally prints each task of master whose status changed since seen, and
// counts them.
func (e *env) tally(tasks []api.TaskInfo, master string, seen map[int64]string) goalTally {
	var g goalTally
	for _, t := range tasks {
		if t.From != master {
			continue
		}
		g.total++
		if seen[t.ID] != t.Status {
			seen[t.ID] = t.Status
			line := fmt.Sprintf("task %d → %s: %s", t.ID, t.To, t.Status)
			switch t.Status {
			case api.TaskDone:
				line += ": " + clip.Runes(oneLine(t.Result), 70)
			case api.TaskFailed:
				line += ": " + clip.Runes(oneLine(t.Error), 70)
			}
			fmt.Fprintln(e.stdout, line)
		}
		switch {
		case t.Status == api.TaskQueued || t.Status == api.TaskDelivered:
			g.pending++
		case t.NotifiedAt == nil && t.Status != api.TaskCancelled:
			g.pending++ // the master has not been told yet
		case t.NotifiedAt != nil && t.NotifiedAt.After(g.lastNotified):
			g.lastNotified = *t.NotifiedAt
		}
		if t.Status == api.TaskFailed {
			g.failed = append(g.failed, fmt.Sprintf("task %d (%s): %s", t.ID, t.To, t.Error))
		}
	}
	return g
}

func (e *env) goalDone(ctx context.Context, cl *api.Client, master string, failed []string) error {
	if sc, err := cl.Screen(ctx, master, 0); err == nil && sc.Screen != "" {
		fmt.Fprintf(e.stdout, "\n%s:\n%s\n", master, sc.Screen)
	}
	st, err := cl.Status(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	printStatus(e.stdout, st)
	if len(failed) > 0 {
		return failf("the goal ended with %d failed task(s): %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

func (e *env) downCmd() *cli.Command {
	return &cli.Command{
		Name:      "down",
		Usage:     "stop and remove the panes of a team (their workspaces stay)",
		ArgsUsage: "[team.yaml]",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "team", Usage: "the team `NAME` (default: the file's, or the only team running)"}},
		Action: func(c *cli.Context) error {
			a, err := args(c, 0, 1, "[team.yaml] [--team NAME]")
			if err != nil {
				return err
			}
			name := c.String("team")
			if len(a) == 1 {
				team, err := topology.LoadTeam(a[0])
				if err != nil {
					return usagef("%v", err)
				}
				name = team.Name
			}
			cl, panes, err := listPanes(c)
			if err != nil {
				return err
			}
			teams := map[string][]string{}
			for _, p := range panes {
				if p.Team != "" {
					teams[p.Team] = append(teams[p.Team], p.ID)
				}
			}
			if name == "" {
				if len(teams) != 1 {
					var names []string
					for n := range teams {
						names = append(names, n)
					}
					sort.Strings(names)
					return usagef("name the team to stop (running teams: %s)", strings.Join(append(names, "none")[:max(len(names), 1)], ", "))
				}
				for n := range teams {
					name = n
				}
			}
			if len(teams[name]) == 0 {
				return usagef("no pane belongs to team %q", name)
			}
			for _, id := range teams[name] {
				res, err := cl.KillPane(c.Context, id)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "stopped %s\n", id)
				if res.Kept != "" {
					fmt.Fprintf(e.stderr, "  %s\n", res.Kept)
				}
			}
			// A view of only these panes goes with them.
			if h, err := home(c); err == nil {
				if err := screens.EndView(h.ViewFile(), teams[name]...); err != nil {
					fmt.Fprintf(e.stderr, "warning: could not end the view: %v\n", err)
				}
			}
			return nil
		},
	}
}

// teamSinks adds (or replaces) the team file's notification sinks, their
// secrets read from the files it names.
func teamSinks(ctx context.Context, cl *api.Client, team *topology.Team) error {
	for _, s := range team.Notify {
		req := api.NotifyAddRequest{Name: s.Name, Type: s.Type, URL: s.URL, Chat: s.Chat, Events: s.Events, SecretEnv: s.SecretEnv, Team: team.Name}
		if s.SecretFile != "" {
			secret, err := readSecretFile(s.SecretFile)
			if err != nil {
				return fmt.Errorf("%s line %d: sink %s: %w", team.Path, s.Line, s.Name, err)
			}
			req.Secret = secret
		}
		if _, err := cl.AddNotifySink(ctx, req); err != nil {
			return fmt.Errorf("%s line %d: sink %s: %w", team.Path, s.Line, s.Name, err)
		}
	}
	return nil
}
