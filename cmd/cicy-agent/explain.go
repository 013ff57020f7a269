package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
	"github.com/cicy-ai/cicy-agent/topology"
)

func (e *env) explainCmd() *cli.Command {
	return &cli.Command{
		Name:      "explain",
		Usage:     "why a pane has its state; or the state the screen rules give a saved screen",
		ArgsUsage: "<pane> | --type TYPE --screen FILE",
		Description: "With a pane: its state, the reason and the signal behind it (the hook, gateway request or\n" +
			"screen rule that decided, and when; a cicy pane's turn), a CLI agent's model requests in flight\n" +
			"and how often its signals disagreed, what the screen rules say of its screen now, and the\n" +
			"screen itself.\n\n" +
			"With --type and --screen: the state the screen rules give a saved screen (plain text as\n" +
			"'tmux capture-pane -p' prints it; 'cicy-agent screen <pane>' saves one). The screen is cut\n" +
			"into the parts of the agent's layout (transcript, status, composer, footer, dialog, menu),\n" +
			"and each rule reads one part. Rules come from $CICY_HOME/db/lite-config.json (\"screenRules\":\n" +
			"{\"claude\": [{\"name\": …, \"state\": \"busy|idle|waiting\", \"part\": \"footer\", \"match\":\n" +
			"\"<Go regexp>\", \"last\": N}]}), which go first, then the built-in rules. The first line is\n" +
			"busy, idle, waiting or unknown (no rule matched: the pane keeps its state); then the rule,\n" +
			"the part and line it matched, the parts found, and a warning when the rule names no part.\n\n" +
			"Examples: cicy-agent explain w-3\n" +
			"          cicy-agent screen w-3 > s.txt; cicy-agent explain --type claude --screen s.txt",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "type", Usage: "agent `TYPE` of a saved screen: " + topology.List(screenTypes(), "or")},
			&cli.StringFlag{Name: "screen", Usage: "the saved screen `FILE` (- for stdin)"},
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Value: 15, Usage: "with a pane: print the last `N` lines of its screen (0: all)"},
			jsonFlag, rawFlag,
		},
		Action: func(c *cli.Context) error {
			switch {
			case c.NArg() == 1 && !c.IsSet("type") && !c.IsSet("screen"):
				return e.explainPane(c)
			case c.NArg() == 0 && c.IsSet("type") && c.IsSet("screen"):
				return e.explainScreen(c)
			}
			return usagef("usage: cicy-agent explain <pane>, or cicy-agent explain --type TYPE --screen FILE")
		},
	}
}

// explainPane explains a live pane.
func (e *env) explainPane(c *cli.Context) error {
	if c.Int("lines") < 0 {
		return usagef("--lines must not be negative")
	}
	return withPane(c, func(cl *api.Client, id string) error {
		return present(e, c, func() (api.Explanation, error) { return cl.Explain(c.Context, id) }, func(x api.Explanation) error {
			printExplanation(e.stdout, x, c.Int("lines"), time.Now())
			return nil
		})
	})
}

func printExplanation(w io.Writer, x api.Explanation, lines int, now time.Time) {
	p := x.Pane
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%s (%s ago)", t.Local().Format("15:04:05"), now.Sub(t).Round(time.Second))
	}
	fmt.Fprintf(w, "%s %q: %s pane", p.ID, p.Title, p.Type)
	if p.Backend != "" && !panetype.InProcess(p.Type) {
		fmt.Fprintf(w, " (%s)", p.Backend)
	}
	fmt.Fprintln(w)
	if x.FoundAtRestart {
		// Not the time it ended: no supervisor watched it then.
		fmt.Fprintf(w, "state:   %s, found so when the supervisor started at %s; it ended before, while no supervisor watched it\n", p.State, when(p.Since))
	} else {
		fmt.Fprintf(w, "state:   %s since %s\n", p.State, when(p.Since))
	}
	fmt.Fprintf(w, "reason:  %s\n", p.Reason)
	fmt.Fprintf(w, "signal:  %s: %s\n", x.Signal.Kind, x.Signal.Detail)
	if h := x.LastHook; h != nil {
		fmt.Fprintf(w, "hook:    last %s at %s; screen rules may overrule it from %s\n", h.Event, when(h.At), h.ScreenRulesFrom.Local().Format("15:04:05"))
	} else if panetype.IsAgent(p.Type) {
		fmt.Fprintln(w, "hook:    none since the supervisor started; the screen rules decide")
	}
	if p.CameBack != "" {
		fmt.Fprintf(w, "back:    %s\n", p.CameBack)
	}
	if p.SessionID != "" {
		fmt.Fprintf(w, "session: %s", p.SessionID)
		if p.SessionAt != nil {
			fmt.Fprintf(w, " since %s", when(*p.SessionAt))
		}
		if len(p.ResumeArgs) > 0 {
			fmt.Fprintf(w, "; resumed with %s", strings.Join(p.ResumeArgs, " "))
		}
		fmt.Fprintln(w)
	} else if panetype.IsAgent(p.Type) {
		fmt.Fprintln(w, "session: none seen yet (the agent tells its session id in its hooks or events)")
	}
	if h := x.LastIgnored; h != nil {
		fmt.Fprintf(w, "ignored: %s at %s: %s\n", h.Event, when(h.At), h.Why)
	}
	for _, a := range x.Answers {
		by := a.By
		if by == "" {
			by = "someone"
		}
		line := fmt.Sprintf("answer:  %s by %s from the %s at %s", a.Action, by, a.Via, when(a.At))
		if a.Task > 0 {
			line += fmt.Sprintf(" (task %d)", a.Task)
		}
		fmt.Fprintln(w, line)
	}
	if g := p.Signals; g != nil {
		printSignals(w, *g, when)
	}
	if t := x.Turn; t != nil {
		if t.ID == "" {
			fmt.Fprintf(w, "turn:    none yet; %d messages in the history\n", t.Messages)
		} else {
			calls := fmt.Sprintf("%d tool calls", t.ToolCalls)
			if t.ToolCalls == 1 {
				calls = "1 tool call"
			}
			fmt.Fprintf(w, "turn:    %s %s, started %s, %s; %d messages in the history\n", t.ID, t.Status, when(t.StartedAt), calls, t.Messages)
		}
	}
	r := x.Rules
	switch {
	case !r.Applies:
		fmt.Fprintf(w, "rules:   %s\n", r.Note)
	case r.Rule != "":
		fmt.Fprintf(w, "rules:   the screen now says %s: %s\n         line %q\n", r.State, r.Note, r.Line)
	default:
		fmt.Fprintf(w, "rules:   %s\n", r.Note)
	}
	if r.Overruled != "" {
		fmt.Fprintf(w, "         overruled: %s\n", r.Overruled)
	}
	if x.Pane.Upstream != "" {
		fmt.Fprintf(w, "upstream: %s\n", x.Pane.Upstream)
	}
	if x.Pane.ProviderError != "" {
		fmt.Fprintf(w, "provider: %s\n", x.Pane.ProviderError)
	}
	printParts(w, r)
	screen := strings.TrimRight(x.Screen, "\n ")
	if screen == "" {
		fmt.Fprintln(w, "screen:  (empty)")
		return
	}
	all := strings.Split(screen, "\n")
	if lines > 0 && len(all) > lines {
		fmt.Fprintf(w, "screen:  (last %d of %d lines)\n", lines, len(all))
		all = all[len(all)-lines:]
	} else {
		fmt.Fprintln(w, "screen:")
	}
	for _, l := range all {
		fmt.Fprintf(w, "  │ %s\n", l)
	}
}

// printSignals prints a CLI agent's requests in flight and how often its
// signals disagreed.
func printSignals(w io.Writer, g api.Signals, when func(time.Time) string) {
	flying := fmt.Sprintf("%d model requests", g.InFlight)
	switch g.InFlight {
	case 0:
		flying = "no model request"
	case 1:
		flying = "1 model request"
	}
	d := g.Disagreements
	fmt.Fprintf(w, "gateway: %s in flight", flying)
	if g.LastGateway != nil {
		fmt.Fprintf(w, "; the count last changed at %s", when(*g.LastGateway))
	}
	fmt.Fprintln(w)
	if s := g.LastScreen; s != nil {
		fmt.Fprintf(w, "screen:  the last look said %s", s.State)
		if s.Rule != "" {
			fmt.Fprintf(w, " (rule %s in the %s)", s.Rule, cmp.Or(s.Part, "whole screen"))
		}
		fmt.Fprintf(w, " at %s\n", when(s.At))
	}
	fmt.Fprintf(w, "signals: disagreed hook vs screen %d, gateway vs hook %d, gateway vs screen %d times\n",
		d.HookVsScreen, d.GatewayVsHook, d.GatewayVsScreen)
}

// screenTypes are the pane types with screen rules: the CLI agents and
// shell.
func screenTypes() []string { return append(panetype.Agents(), "shell") }

// explainScreen classifies a saved screen with a type's screen rules.
func (e *env) explainScreen(c *cli.Context) error {
	typ := c.String("type")
	if types := screenTypes(); !slices.Contains(types, typ) {
		return usagef("unknown type %q (choose %s)", typ, topology.List(types, "or"))
	}
	b, err := readInput(e, c.String("screen"))
	if err != nil {
		return err
	}
	h, err := home(c)
	if err != nil {
		return err
	}
	v, err := screens.ScreenVerdict(h.Root, typ, string(b))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(e.stdout, v)
	}
	fmt.Fprintln(e.stdout, v.State)
	switch {
	case v.Rule != "":
		fmt.Fprintf(e.stdout, "%s\nline %d: %q\n", v.Note, v.LineNo, v.Line)
	case panetype.RunsShellTasks(typ):
		fmt.Fprintln(e.stdout, "shell panes have no screen rules: they are busy while output flows and idle once it is quiet")
	default:
		fmt.Fprintf(e.stdout, "no %s rule matched; the pane keeps its previous state\n", typ)
	}
	printParts(e.stdout, v)
	return nil
}

// printParts prints the parts of the layout found on a screen, and the
// warning about a rule that reads the transcript.
func printParts(w io.Writer, v api.RulesVerdict) {
	if len(v.Parts) > 0 {
		parts := make([]string, len(v.Parts))
		for i, p := range v.Parts {
			parts[i] = fmt.Sprintf("%s %d-%d", p.Part, p.From, p.To)
		}
		fmt.Fprintf(w, "parts:   %s\n", strings.Join(parts, ", "))
	}
	if v.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", v.Warning)
	}
}
