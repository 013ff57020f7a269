package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/topology"
)

func (e *env) budgetCmd() *cli.Command {
	return &cli.Command{
		Name:      "budget",
		Usage:     "show or set the spending limit of a pane or a team",
		ArgsUsage: "[<pane>|team:<name> [<usd>|none]] [--create]",
		Description: "A budget is in US dollars at the price table (the cost 'usage' shows). A pane's spend is\n" +
			"the cost of its model calls; a team's is the sum of its live panes' (the team a pane came\n" +
			"from with 'up': the team file's name). Once a spend reaches its budget, the pane's next\n" +
			"model request (every team pane's) is refused with an error its agent shows, naming the\n" +
			"budget and this command, and the pane is in 'status' under needs you (kind budget) until\n" +
			"the budget is raised. Nothing is sent to the model, and nothing is retried.\n" +
			"A team's budget is set only for a team there is (a pane of it, or a budget of it), so that\n" +
			"a mistyped name is refused; --create sets it for a team not started yet.\n" +
			"Calls of a model with no price cannot be counted: the budget names such models.\n\n" +
			"Examples:\n" +
			"  cicy-agent budget                    # every budget set\n" +
			"  cicy-agent budget w-3                # w-3's budget (and its team's), spend and what is left\n" +
			"  cicy-agent budget build 2.50         # set the budget of the pane titled build to $2.50\n" +
			"  cicy-agent budget team:demo 10       # set team demo's budget to $10\n" +
			"  cicy-agent budget team:qa 5 --create # set the budget of team qa before 'up' starts it\n" +
			"  cicy-agent budget w-3 none           # remove w-3's budget (0 is not a budget)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "create", Usage: "set the budget of a team that is not known yet (no pane of it, no budget of it)"},
			&cli.BoolFlag{Name: "json", Usage: "print the budget document (a list without arguments) for scripts: docs/http-api.md"},
		},
		Action: func(c *cli.Context) error {
			a, err := args(c, 0, 2, "[<pane>|team:<name> [<usd>|none]] [--create] [--json]")
			if err != nil {
				return err
			}
			if c.Bool("create") && (len(a) != 2 || !strings.HasPrefix(a[0], api.TeamRef)) {
				return usagef("--create is for setting a team's budget: cicy-agent budget team:<name> <usd> --create")
			}
			if len(a) > 0 {
				if name, ok := api.TeamName(a[0]); ok {
					if err := api.CheckTeamName(name); err != nil {
						return err
					}
				}
			}
			var amount *float64
			if len(a) == 2 {
				if amount, err = api.ParseBudget(a[1]); err != nil {
					return err
				}
			}
			cl, err := client(c)
			if err != nil {
				return err
			}
			var out []api.Budget
			switch len(a) {
			case 0:
				out, err = cl.Budgets(c.Context)
			case 1:
				var b api.Budget
				b, err = cl.Budget(c.Context, a[0])
				out = []api.Budget{b}
			default:
				var b api.Budget
				b, err = cl.SetBudget(c.Context, a[0], api.BudgetRequest{BudgetUSD: amount, Create: c.Bool("create")})
				out = []api.Budget{b}
			}
			if err != nil {
				return err
			}
			return e.printBudgets(c.Bool("json"), len(a) == 0, out)
		},
	}
}

// printBudgets prints budgets as JSON (a list, or the one asked for) or
// as a table with the refusals and warnings after it.
func (e *env) printBudgets(asJSON, list bool, bs []api.Budget) error {
	if asJSON && list {
		return printJSON(e.stdout, bs)
	}
	if asJSON {
		return printJSON(e.stdout, bs[0])
	}
	if len(bs) == 0 {
		fmt.Fprintln(e.stderr, "no budgets set; set one with: cicy-agent budget <pane>|team:<name> <usd>")
		return nil
	}
	var rows []api.Budget
	for _, b := range bs {
		rows = append(rows, b)
		if b.Team != nil && !list {
			rows = append(rows, *b.Team)
		}
	}
	printBudgetTable(e.stdout, rows)
	for _, b := range rows {
		if b.Refusal != "" {
			fmt.Fprintf(e.stdout, "refused: %s\n", b.Refusal)
		}
		if len(b.Unpriced) > 0 {
			fmt.Fprintf(e.stderr, "warning: %s spent on %s, which has no price, so its budget cannot count it; add a price to \"prices\" in $CICY_HOME/db/lite-config.json, then cicy-agent shutdown\n",
				budgetRef(b), strings.Join(b.Unpriced, ", "))
		}
		if b.Scope == api.BudgetTeam && len(b.Panes) == 0 {
			fmt.Fprintf(e.stderr, "note: no pane belongs to team %s (yet): panes join a team with 'up' of a team file named %s\n", b.Name, b.Name)
		}
	}
	return nil
}

// printBudgetTable prints one line per budget: who, the budget, the spend,
// what is left and whether it is reached.
func printBudgetTable(w io.Writer, rows []api.Budget) {
	_ = printTable(w, "OF\tTITLE\tBUDGET\tSPENT\tLEFT\tSTATE", rows, func(b api.Budget) string {
		limit, left, state := "none", "-", "-"
		if b.BudgetUSD != nil {
			limit, left, state = api.USD(*b.BudgetUSD), api.USD(*b.LeftUSD), "ok"
			if b.Reached {
				state = "reached"
			}
		}
		title := clip.Runes(b.Title, 24)
		if title == "" {
			title = "-"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", budgetRef(b), title, limit, api.USD(b.SpentUSD), left, state)
	})
}

// budgetRef names a budget's owner as the budget command takes it.
func budgetRef(b api.Budget) string {
	if b.Scope == api.BudgetTeam {
		return api.TeamRef + b.Name
	}
	return b.Name
}

// budgetFlag is create's --budget-usd, checked here so a mistake needs no
// supervisor.
func budgetFlag(c *cli.Context) (float64, error) {
	if !c.IsSet("budget-usd") {
		return 0, nil
	}
	s := c.String("budget-usd")
	v, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
	if err != nil {
		return 0, usagef("--budget-usd %q is not an amount of dollars; give one like 0.50", s)
	}
	if err := topology.CheckBudget(v); err != nil {
		return 0, usagef("--budget-usd %v (leave it out for no budget)", err)
	}
	return v, nil
}
