package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
)

// Shell completion is urfave/cli's: the app answers a command line ending
// in --generate-bash-completion with the words that may come next
// (subcommands, or the flags of the command when the word starts with
// "-"; a pane where the command takes one: see completePanes). The bash
// and zsh scripts below ask it; fish gets the app's own generated
// completions (commands and flags).

const bashCompletion = `# bash completion for cicy-agent. Load it in this shell with
#   source <(cicy-agent completion bash)
# or for every shell: cicy-agent completion bash > ~/.local/share/bash-completion/completions/cicy-agent
_cicy_agent() {
	local cur=${COMP_WORDS[COMP_CWORD]}
	local -a line=("${COMP_WORDS[@]:0:COMP_CWORD}")
	if [[ $cur == -* ]]; then
		line+=("$cur")
	fi
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$("${line[@]}" --generate-bash-completion 2>/dev/null)" -- "$cur"))
}
complete -o bashdefault -o default -F _cicy_agent cicy-agent
`

const zshCompletion = `#compdef cicy-agent
# zsh completion for cicy-agent. Load it in this shell with
#   source <(cicy-agent completion zsh)
# or save it as _cicy-agent in a folder of your $fpath.
_cicy_agent() {
	local -a line choices
	line=("${words[@]:0:CURRENT-1}")
	if [[ ${words[CURRENT]} == -* ]]; then
		line+=("${words[CURRENT]}")
	fi
	# With $0 ending in zsh, the program adds each word's description.
	choices=("${(@f)$(env 0=zsh "${line[@]}" --generate-bash-completion 2>/dev/null)}")
	if [[ -n ${choices[1]} ]]; then
		_describe 'cicy-agent' choices
	else
		_files
	fi
}
compdef _cicy_agent cicy-agent
`

func (e *env) completionCmd() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Load it in the running shell:\n" +
			"  bash: source <(cicy-agent completion bash)\n" +
			"  zsh:  source <(cicy-agent completion zsh)\n" +
			"  fish: cicy-agent completion fish | source\n" +
			"or save it where the shell loads completions (the script's first lines say where).",
		Action: func(c *cli.Context) error {
			a, err := args(c, 1, 1, "bash|zsh|fish")
			if err != nil {
				return err
			}
			switch a[0] {
			case "bash":
				_, err = fmt.Fprint(e.stdout, bashCompletion)
			case "zsh":
				_, err = fmt.Fprint(e.stdout, zshCompletion)
			case "fish":
				var s string
				if s, err = c.App.ToFishCompletion(); err == nil {
					_, err = fmt.Fprint(e.stdout, s)
				}
			default:
				return usagef("no completion for %q; choose bash, zsh or fish", a[0])
			}
			return err
		},
	}
}

// paneFlags are the flags whose value is a pane.
var paneFlags = []string{"to", "master", "pane"}

// completePanes makes every command that takes a pane complete one: its
// first argument (every argument for view's [pane…]) and the value of
// --to, --master and --pane complete to the panes' ids and one-word
// titles, asked of the running supervisor. With none running (or none
// answering within a second) nothing is started and nothing is offered.
func (e *env) completePanes(cmds []*cli.Command) {
	for _, c := range cmds {
		e.completePanes(c.Subcommands)
		many := strings.HasPrefix(c.ArgsUsage, "[pane…]")
		first := many || strings.HasPrefix(c.ArgsUsage, "<pane>") || strings.HasPrefix(c.ArgsUsage, "[<pane>") ||
			strings.HasPrefix(c.ArgsUsage, "<task|pane")
		var flags []string
		for _, f := range c.Flags {
			if slices.Contains(paneFlags, f.Names()[0]) {
				flags = append(flags, "--"+f.Names()[0], "-"+f.Names()[0])
			}
		}
		if !first && len(flags) == 0 {
			continue
		}
		def := cli.DefaultCompleteWithFlags(c)
		if own := c.BashComplete; own != nil {
			def = own // what the command offers after its pane (answer's actions)
		}
		c.BashComplete = func(ctx *cli.Context) {
			// The word before the one completed, as urfave/cli reads it.
			last := ""
			if len(os.Args) > 2 {
				last = os.Args[len(os.Args)-2]
			}
			switch {
			case slices.Contains(flags, last):
				e.printPanes(ctx)
			case strings.HasPrefix(last, "-"):
				def(ctx)
			case first && (many || ctx.NArg() == 0):
				e.printPanes(ctx)
			default:
				def(ctx)
			}
		}
	}
}

// printPanes prints the ids of the panes of the running supervisor, and
// the titles that name one pane and are one shell word (a title with a
// space is typed quoted, which bash's word list cannot offer); zsh (its script
// sets $0 to zsh) gets each with what it is.
func (e *env) printPanes(c *cli.Context) {
	h, err := home(c)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.Context, time.Second)
	defer cancel()
	panes, err := api.NewClient(h).List(ctx) // never Ensure: completion starts nothing
	if err != nil {
		return
	}
	zsh := strings.HasSuffix(os.Getenv("0"), "zsh")
	titles := map[string]int{}
	for _, p := range panes {
		titles[p.Title]++
	}
	for _, p := range panes {
		if zsh {
			fmt.Fprintf(e.stdout, "%s:%s (%s)\n", p.ID, zshEscape(p.Title), p.Type)
		} else {
			fmt.Fprintln(e.stdout, p.ID)
		}
	}
	for _, p := range panes {
		// A title names a pane only when one pane has it and it does
		// not read as an id (paneRef).
		if titles[p.Title] != 1 || p.Title == "" || strings.HasPrefix(p.Title, "w-") || strings.ContainsAny(p.Title, " \t\n'\"\\$`;&|<>()*?[]{}!#~:=") {
			continue
		}
		if zsh {
			fmt.Fprintf(e.stdout, "%s:%s\n", p.Title, p.ID)
		} else {
			fmt.Fprintln(e.stdout, p.Title)
		}
	}
}

// zshEscape makes text safe as a _describe description.
func zshEscape(s string) string { return strings.ReplaceAll(s, ":", "\\:") }
