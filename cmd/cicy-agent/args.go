package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// permuteArgs lets flags follow positional arguments, as users type them
// (`create t --type shell -- bash`): urfave/cli v2 stops reading flags at
// the first positional argument. For the command named in args it moves
// every flag (with its value) ahead of the positionals and puts a "--"
// between them; a "--" the user typed, and everything after it, stays
// positional and in place.
func permuteArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	// Skip the global flags to find the command.
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		if takesValue(app.Flags, args[i]) {
			i++
		}
		i++
	}
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	// Descend into subcommands (memory ls …).
	for cmd != nil && len(cmd.Subcommands) > 0 && i+1 < len(args) {
		sub := cmd.Command(args[i+1])
		if sub == nil {
			break
		}
		cmd, i = sub, i+1
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	head := append([]string{}, args[:i+1]...)
	var flags, pos []string
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--":
			pos = append(pos, rest[j:]...)
			j = len(rest)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags = append(flags, a)
			if takesValue(cmd.Flags, a) && j+1 < len(rest) {
				flags = append(flags, rest[j+1])
				j++
			}
		default:
			pos = append(pos, a)
		}
	}
	out := append(head, flags...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}

// takesValue reports whether the flag token names a flag that needs a value
// in the next argument (not --name=value, not a boolean).
func takesValue(flags []cli.Flag, tok string) bool {
	if strings.Contains(tok, "=") {
		return false
	}
	name := strings.TrimLeft(tok, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if bf, ok := f.(*cli.BoolFlag); ok && bf != nil {
				return false
			}
			return true
		}
	}
	return false
}

// splitDashDash splits positionals at the first "--" the user typed.
func splitDashDash(args []string) (before, after []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:]
		}
	}
	return args, nil
}
