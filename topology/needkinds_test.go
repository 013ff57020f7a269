package topology

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// NeedKinds explains every kind of attention declared here (a Need…
// constant), and nothing else: the dashboard's help and --help list it.
func TestNeedKindsListsEveryKind(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Need") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					declared[v] = true
				}
			}
			return true
		})
	}
	listed := map[string]bool{}
	for _, k := range NeedKinds {
		if listed[k.Kind] || k.Means == "" {
			t.Errorf("NeedKinds: %q twice or without a meaning", k.Kind)
		}
		listed[k.Kind] = true
		if !declared[k.Kind] {
			t.Errorf("NeedKinds lists %q, which no Need constant declares", k.Kind)
		}
	}
	for k := range declared {
		if !listed[k] {
			t.Errorf("kind %q is not in NeedKinds", k)
		}
	}
	if len(declared) < 8 {
		t.Errorf("found only %d Need constants: %v", len(declared), declared)
	}
}
