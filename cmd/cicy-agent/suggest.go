package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

// A mistyped command or flag gets a "did you mean …?": the closest name,
// by the Jaro-Winkler similarity of urfave/cli's App.Suggest, when it is
// close enough to be the one meant. App.Suggest itself only acts where
// urfave/cli prints its own usage errors (a help dump, and a suggestion
// even for a name like no other), which onUsageError and CommandNotFound
// replace here with one sentence and exit status 2.

// suggestAt is the similarity below which nothing is suggested: "stauts"
// is status (0.96) and "lst" ls (0.91), but "foo" is not hook (0.72).
const suggestAt = 0.8

// closest returns the name most like typed, or "" when none is close.
func closest(typed string, names []string) string {
	best, score := "", 0.0
	for _, n := range names {
		// urfave/cli's parameters: boost above 0.7, a common prefix of up to 4.
		if s := smetrics.JaroWinkler(typed, n, 0.7, 4); s > score {
			best, score = n, s
		}
	}
	if score < suggestAt {
		return ""
	}
	return best
}

// didYouMean is " (did you mean X?)" for the closest name, or "".
func didYouMean(typed string, names []string) string {
	if s := closest(typed, names); s != "" {
		return fmt.Sprintf(" (did you mean %s?)", s)
	}
	return ""
}

// commandNames are the names and aliases of the visible commands.
func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	return names
}

// flagNames are the visible flags as typed (--json, -n) and --help.
func flagNames(flags []cli.Flag) []string {
	names := []string{"--help"}
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, "-"+n)
			} else {
				names = append(names, "--"+n)
			}
		}
	}
	return names
}

// unknownCommand is the error for a command that does not exist: at the
// top level (parent ""), or a subcommand of parent (memory, tasks).
func unknownCommand(typed, parent string, cmds []*cli.Command) error {
	where, what := "cicy-agent", "command"
	if parent != "" {
		where, what = "cicy-agent "+parent, parent+" subcommand"
	}
	hint := didYouMean(typed, commandNames(cmds))
	if hint == "" && (typed == "help" || typed == "h") {
		hint = " (did you mean --help?)"
	}
	return usagef("unknown %s %q%s; see '%s --help'", what, typed, hint, where)
}

// unknownFlag is the message for a flag the command does not have.
func unknownFlag(name string, flags []cli.Flag) string {
	return "unknown flag " + name + didYouMean(name, flagNames(flags))
}

// commandPath is the command c runs as typed after the program's name
// ("memory ls"), or "" at the top level.
func commandPath(c *cli.Context) string {
	var names []string
	for _, x := range c.Lineage() {
		if x.Command != nil && x.Command.Name != "" && x.Command.Name != c.App.Name {
			names = append([]string{x.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}
