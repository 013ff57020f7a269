package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
)

func (e *env) usageCmd() *cli.Command {
	return &cli.Command{
		Name:  "usage",
		Usage: "tokens, cache-hit ratio and cost of the panes' model calls, by pane, model or day",
		Description: "Every model call a pane makes is recorded in the usage ledger (a removed pane's calls stay).\n" +
			"One line per group, then TOTAL. CALLS counts every call; INPUT, OUTPUT, CACHE-READ, CACHE-WRITE\n" +
			"and COST include the aux calls too, and AUX / AUX-TOK are how many of the calls were side calls\n" +
			"(compact, memory, a CLI's title generation or token counting) and their tokens. CACHE is\n" +
			"cache-read tokens over all input tokens, as in 'ls'. COST is at the price table (built in, plus\n" +
			"lite-config.json's \"prices\"); it is \"-\" when a model has no price, and the models without one\n" +
			"are named on stderr.\n\n" +
			"Examples:\n" +
			"  cicy-agent usage                       # every pane, all time\n" +
			"  cicy-agent usage --by model --since 7d # per model, the last seven days\n" +
			"  cicy-agent usage --pane build --by day # one pane, per day",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "pane", Usage: "only the calls of `PANE`: an id (a removed pane's too) or a live pane's title, e.g. --pane w-2"},
			&cli.StringFlag{Name: "since", Usage: "only the calls since `WHEN`: a time back from now (90m, 2h, 7d, 2w) or a date from 00:00 UTC (2026-12-01)"},
			&cli.StringFlag{Name: "by", Value: "pane", Usage: "one line per `GROUP`: pane, model or day (UTC), e.g. --by model"},
			&cli.BoolFlag{Name: "json", Usage: "print {by, pane, since, groups, total, unpriced} for scripts (the fields of docs/http-api.md)"},
		},
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0, "[--pane P] [--since D] [--by pane|model|day] [--json]"); err != nil {
				return err
			}
			q, err := usageQuery(c)
			if err != nil {
				return err
			}
			return fetch(e, c, func(cl *api.Client) (api.UsageReport, error) { return cl.Usage(c.Context, q) }, e.printUsageReport)
		},
	}
}

// printUsageReport is usage as text: the table, and on stderr what is
// not recorded or has no price.
func (e *env) printUsageReport(rep api.UsageReport) error {
	if len(rep.Groups) == 0 {
		fmt.Fprintln(e.stderr, "no model calls recorded"+usageScope(rep))
		return nil
	}
	printUsage(e.stdout, rep)
	if len(rep.Unpriced) > 0 {
		fmt.Fprintf(e.stderr, "no price for %s: add it to \"prices\" in $CICY_HOME/db/lite-config.json, then cicy-agent shutdown\n", strings.Join(rep.Unpriced, ", "))
	}
	return nil
}

// usageQuery checks the flags here, so a mistake needs no supervisor; a
// --since is sent as the time it means now.
func usageQuery(c *cli.Context) (api.UsageQuery, error) {
	by, err := api.CheckUsageBy(c.String("by"))
	if err != nil {
		return api.UsageQuery{}, err
	}
	q := api.UsageQuery{By: by, Pane: c.String("pane")}
	if c.IsSet("pane") && q.Pane == "" {
		return api.UsageQuery{}, usagef("--pane must not be empty")
	}
	if c.IsSet("since") {
		t, err := api.ParseSince(c.String("since"), time.Now())
		if err != nil {
			return api.UsageQuery{}, err
		}
		q.Since = t.Format(time.RFC3339Nano)
	}
	return q, nil
}

// usageScope is " for w-2 since …" as far as the report was narrowed.
func usageScope(rep api.UsageReport) string {
	s := ""
	if rep.Pane != "" {
		s += " for " + rep.Pane
	}
	if rep.Since != nil {
		s += " since " + rep.Since.Local().Format("2006-01-02 15:04")
	}
	return s
}

// printUsage prints the report as a table with a TOTAL line.
func printUsage(w io.Writer, rep api.UsageReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	byPane := rep.By == api.UsageByPane
	head := strings.ToUpper(rep.By) + "\t"
	if byPane {
		head += "TITLE\t"
	}
	fmt.Fprintln(tw, head+"CALLS\tAUX\tINPUT\tOUTPUT\tCACHE-READ\tCACHE-WRITE\tCACHE\tAUX-TOK\tCOST")
	row := func(key, title string, u api.UsageSums) {
		lead := key + "\t"
		if byPane {
			lead += title + "\t"
		}
		fmt.Fprintf(tw, "%s%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\n", lead, u.Calls, u.AuxCalls, u.InputTokens, u.OutputTokens,
			u.CacheReadInputTokens, u.CacheCreationInputTokens, percent(u.CacheHit), u.AuxTokens, usd(u.CostUSD))
	}
	for _, g := range rep.Groups {
		key, title := g.Key, clip.Runes(g.Title, 24)
		if key == "" {
			key = "-"
		}
		if byPane && title == "" {
			title = "-" // removed
		}
		row(key, title, g.UsageSums)
	}
	row("TOTAL", "", rep.Total)
	tw.Flush()
}

// usd is a cost, or "-" when it is unknown.
func usd(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *v)
}
