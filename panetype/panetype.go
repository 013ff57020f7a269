package panetype

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The two pane types built in: a cicy pane is a turn loop inside the
// supervisor, a shell pane a program in a terminal whose tasks are shell
// commands. Every other type is a CLI agent.
const (
	cicy  = "cicy"
	shell = "shell"
)

// Default is the type of a pane that names none.
const Default = cicy

// DefaultGuidance is the guidance file of a type that names no other:
// the file most agents read in their workspace.
const DefaultGuidance = "AGENTS.md"

// nameRe is a CLI agent's type: it names a folder and is typed on the
// command line.
var nameRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// Registry holds the CLI agents' pane types and their guidance files.
// The program has one (the package's functions); a test can make its own.
type Registry struct {
	mu       sync.Mutex
	guidance map[string]string // agent type → guidance file name
}

// NewRegistry is a registry with only the types built in.
func NewRegistry() *Registry { return &Registry{guidance: map[string]string{}} }

// std is the program's registry.
var std = NewRegistry()

// Register adds a CLI agent's pane type and the name of the guidance file
// it reads in its workspace ("" for AGENTS.md). A bad name, a guidance
// file that is a path, or a name taken twice is a programming error: it
// panics, naming what is wrong.
func (r *Registry) Register(name, guidanceFile string) {
	if err := check(name, guidanceFile); err != nil {
		panic("pane type " + fmt.Sprintf("%q", name) + ": " + err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.guidance[name]; ok || name == cicy || name == shell {
		panic("pane type " + name + " registered twice")
	}
	if guidanceFile == "" {
		guidanceFile = DefaultGuidance
	}
	r.guidance[name] = guidanceFile
}

// check is what Register refuses.
func check(name, guidanceFile string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("the name must be 1 to 32 lowercase letters, digits and -, starting with a letter")
	}
	if guidanceFile != "" && (filepath.Base(guidanceFile) != guidanceFile || strings.HasPrefix(guidanceFile, ".")) {
		return fmt.Errorf("the guidance file %q must be a file name, not a path", guidanceFile)
	}
	return nil
}

// GuidanceFile is the name of the guidance file a pane of type t reads
// in its workspace: its agent's own (CLAUDE.md) or AGENTS.md.
func (r *Registry) GuidanceFile(t string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.guidance[t]; g != "" {
		return g
	}
	return DefaultGuidance
}

// Agents are the CLI agents' pane types, by name.
func (r *Registry) Agents() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.guidance))
	for n := range r.guidance {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// All are the kinds of pane in the order messages list them: cicy, the
// CLI agents by name, shell.
func (r *Registry) All() []string {
	return append(append([]string{cicy}, r.Agents()...), shell)
}

// IsAgent reports whether t is a CLI agent's pane type (not cicy or
// shell, which run no agent program of their own).
func (r *Registry) IsAgent(t string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.guidance[t]
	return ok
}

// Resolve fills in the default type and reports whether t is a pane type.
func (r *Registry) Resolve(t string) (string, bool) {
	if t == "" {
		t = Default
	}
	return t, slices.Contains(r.All(), t)
}

// Register adds a CLI agent's pane type to the program's registry (see
// Registry.Register); package cliagent calls it for each agent.
func Register(name, guidanceFile string) { std.Register(name, guidanceFile) }

// InProcess reports whether a pane of type t runs inside the supervisor
// (a cicy turn loop) rather than as a program in a terminal.
func InProcess(t string) bool { return t == cicy }

// RunsShellTasks reports whether a pane of type t is a shell whose tasks
// are shell commands (not an agent's prompts).
func RunsShellTasks(t string) bool { return t == shell }

// GuidanceFile is the name of the guidance file a pane of type t reads
// in its workspace: its agent's own (CLAUDE.md) or AGENTS.md.
func GuidanceFile(t string) string { return std.GuidanceFile(t) }

// All are the kinds of pane in the order messages list them: cicy, the
// CLI agents by name, shell.
func All() []string { return std.All() }

// Agents are the CLI agents' pane types, by name.
func Agents() []string { return std.Agents() }

// IsAgent reports whether t is a CLI agent's pane type.
func IsAgent(t string) bool { return std.IsAgent(t) }

// Resolve fills in the default type and reports whether t is a pane type.
func Resolve(t string) (string, bool) { return std.Resolve(t) }
