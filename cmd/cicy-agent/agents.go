package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/agentpane"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

func (e *env) agentsCmd() *cli.Command {
	return &cli.Command{
		Name:  "agents",
		Usage: "list the kinds of pane create --type takes: each CLI agent's pinned version, whether it is installed, its model APIs and signals",
		Description: "cicy panes run their turn loop in the supervisor, shell panes any command; a CLI agent's\n" +
			"program is looked for on PATH, then where 'make clis' installs the pinned versions\n" +
			"($CICY_CLI_DIR, default ~/.cache/cicy-agent/clis), as the supervisor looks for it. Its\n" +
			"model APIs are the ones its gateway token is good for; its signals are where its state\n" +
			"comes from besides its screen: its hooks, its model requests through the gateway, its\n" +
			"built-in screen rules. RESUME is how it takes up one of its sessions by id (ls and explain\n" +
			"show a pane's session id); \"no\" when it cannot. Asks no supervisor.",
		Flags: []cli.Flag{jsonFlag,
			&cli.BoolFlag{Name: "missing", Usage: "print the CLI agents not installed at their pinned version, one per line with its recipe: \"npm PACKAGE@VERSION\" for one make clis installs into its folder, \"path PROGRAM@VERSION\" for one not on npm, looked for on PATH (what scripts/install-clis.sh reads)"}},
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0, "[--json] [--missing]"); err != nil {
				return err
			}
			if c.Bool("missing") {
				for _, pin := range missingPins(os.Getenv) {
					fmt.Fprintln(e.stdout, pin)
				}
				return nil
			}
			all := agentTypes(os.Getenv)
			if c.Bool("json") {
				return printJSON(e.stdout, all)
			}
			return printAgents(e.stdout, all)
		},
	}
}

// agentTypes is every kind of pane, the CLI agents looked for with getenv.
func agentTypes(getenv func(string) string) []api.AgentType {
	out := []api.AgentType{{Type: "cicy", Builtin: true, APIs: []string{"anthropic", "chat"}, Signals: []string{"turn loop"}}}
	for _, name := range cliagent.Names() {
		k, _ := cliagent.Lookup(name)
		at := api.AgentType{Type: name, Program: k.Bin, Package: k.Package, Version: k.Version, APIs: k.APIs, Signals: k.Signals()}
		at.Resume, at.ResumesByID = k.ResumeArgs(sessionPlaceholder)
		if path, err := agentpane.FindCLI(k, getenv); err == nil {
			at.Path, at.Installed = path, k.InstalledVersion(path)
		} else {
			at.Missing = err.Error()
		}
		out = append(out, at)
	}
	return append(out, api.AgentType{Type: "shell", Builtin: true, APIs: []string{}, Signals: []string{"exit status"}})
}

// sessionPlaceholder stands for a session id in the resume arguments
// agents shows.
const sessionPlaceholder = "ID"

// resumeText is how a CLI agent resumes a session by id: "claude --resume
// <id>"; "no" when it cannot, "-" for cicy and shell panes.
func resumeText(a api.AgentType) string {
	switch {
	case a.Builtin:
		return "-"
	case !a.ResumesByID:
		return "no"
	}
	args := slices.Clone(a.Resume)
	for i, s := range args {
		if s == sessionPlaceholder {
			args[i] = "<id>"
		}
	}
	return a.Program + " " + strings.Join(args, " ")
}

// missingPins are the CLI agents not installed at their pinned version,
// each as its recipe and pin: "npm PACKAGE@VERSION" when the folder make
// clis installs into lacks it, "path PROGRAM@VERSION" when a program not
// on npm is not on PATH at that version.
func missingPins(getenv func(string) string) []string {
	dir := agentpane.CLIDir(getenv)
	var out []string
	for _, name := range cliagent.Names() {
		k, _ := cliagent.Lookup(name)
		if !k.FromNPM() {
			if path, err := agentpane.FindCLI(k, getenv); err != nil || k.InstalledVersion(path) != k.Version {
				out = append(out, "path "+k.Pin())
			}
			continue
		}
		bin := filepath.Join(dir, "node_modules", ".bin", k.Bin)
		if dir == "" || k.InstalledVersion(bin) != k.Version {
			out = append(out, "npm "+k.Pin())
		}
	}
	return out
}

// printAgents is the table of agent types.
func printAgents(w io.Writer, all []api.AgentType) error {
	return printTable(w, "TYPE\tPIN\tINSTALLED\tAPIS\tSIGNALS\tRESUME", all, func(a api.AgentType) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", a.Type, orDash(pinOf(a)), installedText(a), orDash(strings.Join(a.APIs, ", ")), strings.Join(a.Signals, ", "), resumeText(a))
	})
}

func pinOf(a api.AgentType) string {
	switch {
	case a.Builtin:
		return ""
	case a.Package == "":
		return a.Program + "@" + a.Version
	}
	return a.Package + "@" + a.Version
}

// installedText is where a CLI agent is and at what version: "2.1.332
// ~/.cache/…/bin/claude", "(not the pin: 2.0.1) …", "no"; built in for
// cicy and shell.
func installedText(a api.AgentType) string {
	switch {
	case a.Builtin:
		return "built in"
	case a.Path == "":
		return "no (make clis installs it)"
	case a.Installed == "":
		return a.Path
	case a.Installed != a.Version:
		return a.Installed + " (not the pin) " + a.Path
	}
	return a.Installed + " " + a.Path
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
