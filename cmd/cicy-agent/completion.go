package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// Shell completion is urfave/cli's: the app answers a command line ending
// in --generate-bash-completion with the words that may come next
// (subcommands, or the flags of the command when the word starts with
// "-"). The bash and zsh scripts below ask it; fish gets the app's own
// generated completions.

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
