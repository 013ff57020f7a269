package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/panetype"
)

// TestPaneTypesAskedOfTheRegistry: outside the registry (package
// panetype, package cliagent's one file per agent) no code names a pane
// type to decide what to do — no `x.Type == "cicy"`, no `case "claude":`
// on a type — and the old isAgent is gone: it asks the registry
// (panetype.InProcess, RunsShellTasks, IsAgent, GuidanceFile;
// cliagent.Lookup). So a new agent is one file, and no switch elsewhere
// forgets it.
func TestPaneTypesAskedOfTheRegistry(t *testing.T) {
	t.Parallel()
	types := panetype.All()
	if !slices.Contains(types, "claude") {
		t.Fatalf("the CLI agents are not registered: %v", types)
	}
	eachProductFile(t, func(rel string) bool {
		return strings.HasPrefix(rel, "panetype/") || strings.HasPrefix(rel, "supervisor/cliagent/")
	}, func(fset *token.FileSet, f *ast.File, _ string) {
		for _, at := range typeNamings(f, types) {
			t.Errorf("%s: %s: ask the registry (panetype.InProcess, RunsShellTasks, IsAgent, cliagent.Lookup)", fset.Position(at.pos), at.what)
		}
	})
}

// eachProductFile parses every product .go file of the module (no test
// file, nothing under testdata, dot folders or node_modules) but those
// skip says to leave (rel: the path from the module's root, with
// slashes), and hands each to visit.
func eachProductFile(t *testing.T, skip func(rel string) bool, visit func(fset *token.FileSet, f *ast.File, rel string)) {
	t.Helper()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "node_modules"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if skip(rel) {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		visit(fset, f, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// stringIn reports whether e is a string literal of one of set.
func stringIn(e ast.Expr, set []string) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && slices.Contains(set, s)
}

type naming struct {
	pos  token.Pos
	what string
}

// typeNamings are the places in f that compare a pane type with a type's
// name, switch on a type with a case naming one, or call isAgent.
func typeNamings(f *ast.File, types []string) []naming {
	out := literalUses(f, isTypeExpr, func(e ast.Expr) bool { return stringIn(e, types) },
		"a pane type compared with a type's name", "a case naming a pane type")
	ast.Inspect(f, func(n ast.Node) bool {
		if x, ok := n.(*ast.CallExpr); ok {
			if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "isAgent" {
				out = append(out, naming{x.Pos(), "isAgent"})
			}
		}
		return true
	})
	return out
}

// literalUses are the places in f that compare a subject (an expression
// subject accepts) with a literal (one literal accepts), saying compared,
// or switch on a subject with a case holding such a literal, saying cased.
func literalUses(f *ast.File, subject, literal func(ast.Expr) bool, compared, cased string) []naming {
	var out []naming
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if (x.Op == token.EQL || x.Op == token.NEQ) && (subject(x.X) && literal(x.Y) || subject(x.Y) && literal(x.X)) {
				out = append(out, naming{x.Pos(), compared})
			}
		case *ast.SwitchStmt:
			if x.Tag != nil && subject(x.Tag) {
				for _, s := range x.Body.List {
					if cc, ok := s.(*ast.CaseClause); ok && slices.ContainsFunc(cc.List, literal) {
						out = append(out, naming{cc.Pos(), cased})
					}
				}
			}
		}
		return true
	})
	return out
}

// isTypeExpr reports whether e reads like a pane type: x.Type,
// x.AgentType, or a variable typ, agentType or paneType.
func isTypeExpr(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "Type" || x.Sel.Name == "AgentType"
	case *ast.Ident:
		return x.Name == "typ" || x.Name == "agentType" || x.Name == "paneType"
	}
	return false
}

// TestTypeNamingsFound: the guard above finds what it looks for.
func TestTypeNamingsFound(t *testing.T) {
	t.Parallel()
	const src = `package p
func f(p P, typ string) {
	_ = p.Type == "claude"
	_ = "shell" != typ
	switch p.AgentType {
	case "codex":
	case other:
	}
	_ = isAgent(typ)
	_ = p.Type == "nothing-registered"
	_ = p.Title == "claude"
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := typeNamings(f, []string{"claude", "shell", "codex"}); len(got) != 4 {
		t.Errorf("found %d namings of a pane type, want 4: %+v", len(got), got)
	}
}
