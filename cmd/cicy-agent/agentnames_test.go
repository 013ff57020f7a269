package main

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// agentNameAllowed are the places in product code that may write a
// registered agent's name as a string, "file:name" (the file's base name,
// so that it holds when the file moves to another package) → why.
var agentNameAllowed = map[string]string{
	"handler.go:gemini": "llmserve's APIGemini is the Gemini API's name (as anthropic, chat, responses), not the agent",
	"prices.go:claude":  "a model-name prefix (claude-sonnet-4-5) that picks the upstream API, not the agent",
	"prices.go:gemini":  "a model-name prefix (gemini-2.5-pro) that picks the upstream API, not the agent",
}

// TestAgentNamesStayInTheirFiles: a registered CLI agent's name written
// as a string literal in product code (not tests) is flagged outside its
// own file in supervisor/cliagent (<name>.go) and the registry package:
// what code needs of an agent it asks cliagent.Lookup, so a new agent is
// its file and no other code names it.
func TestAgentNamesStayInTheirFiles(t *testing.T) {
	t.Parallel()
	names := cliagent.Names()
	eachProductFile(t, func(rel string) bool { return strings.HasPrefix(rel, "panetype/") }, func(fset *token.FileSet, f *ast.File, rel string) {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, name := range names {
				if s != name || rel == "supervisor/cliagent/"+name+".go" || agentNameAllowed[filepath.Base(rel)+":"+name] != "" {
					continue
				}
				t.Errorf("%s: the agent %q named outside its file supervisor/cliagent/%s.go; ask cliagent.Lookup (or allow it in agentNameAllowed, saying why)", fset.Position(lit.Pos()), name, name)
			}
			return true
		})
	})
}
