package cliagent

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cicy-ai/cicy-agent/panetype"
)

// A CLI agent's file registers its Kind from init; registerIn checks it
// and fills in what was left out, so a new agent is that one file (and
// its recorded screens, see docs/agents.md). A Kind that cannot work is a
// programming error: init panics, naming the field and what to do.
//
// Required: Name (its pane type), Bin (the program), Version and one
// install recipe (Package, or VersionArgs), prepare (how a pane's config
// is seeded and its command line), and toolName unless the agent is
// workerOnly (a master shows the team tools to its model). Built-in
// screen rules must compile, be named <name>-…, each read a part of the
// screen other than the transcript, and come with the layout that finds
// the parts.
//
// Defaults: no Title → its Name; a workerOnly agent's prepare refuses a master; no interpret → the agent has no hooks: every event is
// ignored and its signals say "screen only" unless the gateway is one;
// no guidance → the generic AGENTS.md, in its own folder under the
// pane's.

// binRe is a program's name as looked up on PATH: no path.
var binRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// nameRe is an agent's name: its pane type (see panetype).
var nameRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// registerIn adds k to kinds and its pane type through addType, after
// checkKind; a bad Kind or a name taken twice panics.
func registerIn(kinds map[string]Kind, addType func(name, guidanceFile string), k Kind) {
	if err := checkKind(k); err != nil {
		panic(fmt.Sprintf("cliagent: agent %q: %v", k.Name, err))
	}
	if _, ok := kinds[k.Name]; ok {
		panic("CLI agent " + k.Name + " registered twice")
	}
	k = withDefaults(k)
	kinds[k.Name] = k
	addType(k.Name, filepath.Base(k.guidance("")))
}

// checkKind says which field of k is missing or wrong.
func checkKind(k Kind) error {
	if err := checkInstall(k); err != nil {
		return err
	}
	switch {
	case k.prepare == nil:
		return errors.New("field prepare is nil; set how a pane's config is seeded and its command line")
	case k.toolName == nil && !k.workerOnly:
		return errors.New("field toolName is nil; set how the agent shows the team tools to its model, or mark it workerOnly")
	case k.answer.option != nil && (len(k.answer.approve) == 0 || len(k.answer.deny) == 0):
		return errors.New("field answer has options but no approve or deny keys")
	}
	return checkRules(k)
}

// checkInstall checks what names the agent and installs it.
func checkInstall(k Kind) error {
	switch {
	case !nameRe.MatchString(k.Name):
		return errors.New("field Name must be its pane type: 1 to 32 lowercase letters, digits and -, starting with a letter")
	case panetype.InProcess(k.Name) || panetype.RunsShellTasks(k.Name):
		return errors.New("field Name is a built-in pane type; choose another")
	case !binRe.MatchString(k.Bin):
		return errors.New("field Bin must be the program's name as looked up on PATH (no path)")
	case k.Version == "":
		return errors.New("field Version is empty; set the version cicy-agent is tested with")
	case k.Package == "" && len(k.VersionArgs) == 0:
		return errors.New("no install recipe: set Package (the npm package) or VersionArgs (how Bin prints its version, for a program on PATH)")
	case k.Package != "" && len(k.VersionArgs) > 0:
		return errors.New("fields Package and VersionArgs are both set; an agent has one install recipe")
	}
	return nil
}

// checkRules checks the built-in screen rules and their layout.
func checkRules(k Kind) error {
	if _, err := k.rules.Compile(); err != nil {
		return fmt.Errorf("field rules: %w", err)
	}
	for _, r := range k.rules {
		switch {
		case !strings.HasPrefix(r.Name, k.Name+"-"):
			return fmt.Errorf("field rules: rule %q must be named %s-… (explain shows whose rule decided)", r.Name, k.Name)
		case r.SeesTranscript():
			return fmt.Errorf("field rules: rule %q reads the transcript (part %q), where an answer can quote anything; give it a part of the layout", r.Name, r.Part)
		}
	}
	if k.prompts && k.interpret == nil {
		return errors.New("field prompts is set without interpret: only hooks tell prompts")
	}
	if len(k.rules) > 0 && k.layout == nil {
		return errors.New("field layout is nil; the rules read parts of the screen, which layout finds")
	}
	return nil
}

// withDefaults fills in what k left out (see the top of this file).
func withDefaults(k Kind) Kind {
	if k.Title == "" {
		k.Title = k.Name
	}
	k.hooks = k.interpret != nil
	if !k.hooks {
		name := k.Name
		k.interpret = func(event string, _ []byte) Effect { return unused(name, event) }
	}
	if k.guidance == nil {
		name := k.Name
		k.guidance = func(dir string) string { return filepath.Join(dir, name, panetype.DefaultGuidance) }
	}
	if k.toolName == nil {
		k.toolName = func(tool string) string { return tool }
	}
	if k.workerOnly {
		name, prepare := k.Name, k.prepare
		k.prepare = func(s Setup) ([]string, []string, error) {
			if s.MCP != nil {
				return nil, nil, fmt.Errorf("%s has no MCP client to give the team tools to: a %s pane can be a worker, not a master", name, name)
			}
			return prepare(s)
		}
	}
	return k
}
