package cicy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/liteconfig"
)

// LiteConfig is the tool-group part of $CICY_HOME/db/lite-config.json.
type LiteConfig struct {
	ToolGroups map[string][]string `json:"toolGroups"`
}

// DefaultLiteConfig holds the built-in tool groups: what a pane gets when
// lite-config.json does not exist, and what the file's groups add to.
func DefaultLiteConfig() LiteConfig {
	return LiteConfig{ToolGroups: map[string][]string{
		"core": {"shell", "skill"},
		"team": {"dispatch", "workers", "task_status", "diff", "merge"},
	}}
}

// LoadLiteConfig is the built-in tool groups with those of lite-config.json
// over them: a group of the file adds to the built-in ones, or replaces the
// one of the same name. A file without "toolGroups" (one with only prices
// or screen rules, or {}) keeps the built-in groups. It is re-read every
// turn, so an edit takes effect with no restart.
func LoadLiteConfig(home string) (LiteConfig, error) {
	var file LiteConfig
	if _, err := liteconfig.Read(home, &file); err != nil {
		return LiteConfig{}, err
	}
	lc := DefaultLiteConfig()
	for name, tools := range file.ToolGroups {
		lc.ToolGroups[name] = tools
	}
	return lc, nil
}

// toolOrder is the fixed order tools are offered in, whatever the order
// of groups in meta.yaml: the request's tools stay byte-stable.
var toolOrder = []string{"shell", "skill", "dispatch", "workers", "task_status", "diff", "merge"}

// Expand turns meta.yaml's tools list (group or tool names) into tool
// names in the fixed order. An unknown name is an error.
func (lc LiteConfig) Expand(want []string) ([]string, error) {
	set := map[string]bool{}
	for _, w := range want {
		w = strings.TrimSpace(w)
		if g, ok := lc.ToolGroups[w]; ok {
			for _, n := range g {
				set[n] = true
			}
			continue
		}
		if !knownTool(w) {
			return nil, fmt.Errorf("meta.yaml lists %q, which is neither a tool group of lite-config.json nor a tool", w)
		}
		set[w] = true
	}
	var out []string
	for _, n := range toolOrder {
		if set[n] {
			out = append(out, n)
			delete(set, n)
		}
	}
	for n := range set {
		return nil, fmt.Errorf("lite-config.json names an unknown tool %q", n)
	}
	return out, nil
}

// MemoryCap is the most of MEMORY.md a request carries.
const MemoryCap = 6000

// loadMemories reads <workspace>/.cicy/memory/MEMORY.md, cut at a line
// boundary at MemoryCap bytes. The store that writes it is the memory
// loop; this is the injection point.
func loadMemories(workspace string) string {
	b, err := os.ReadFile(filepath.Join(workspace, ".cicy", "memory", "MEMORY.md"))
	if err != nil {
		return ""
	}
	return capAtLine(strings.TrimSpace(string(b)), MemoryCap)
}

// memories is MEMORY.md as the next request carries it, rebuilt first when
// a memory file changed on disk (a hand edit): the check is one read of the
// folder.
func (a *Agent) memories() string {
	rebuilt, probs, err := a.store.Refresh()
	if err != nil {
		a.log.WithError(err).Warn("Could not check the memory files; MEMORY.md is used as it is")
	}
	if rebuilt {
		a.log.WithField("skipped", len(probs)).Info("Memory files changed on disk; MEMORY.md rebuilt")
		for _, p := range probs {
			a.log.WithField("file", p.File).Warn("Memory file skipped: " + p.Err)
		}
	}
	return loadMemories(a.cfg.Workspace)
}

// capAtLine cuts s to at most n bytes, at the end of a line.
func capAtLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n+1], '\n')
	if cut < 0 {
		return ""
	}
	return s[:cut]
}
