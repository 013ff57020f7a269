package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxComplexity is the most branches a function of the daemon, the
// topology or the API may have (cyclomatic complexity, counted as gocyclo
// counts it): one more than that is a function to split.
const maxComplexity = 20

// TestFunctionsStaySmall: no function (tests included) in supervisor/,
// topology/ or api/ is over maxComplexity.
func TestFunctionsStaySmall(t *testing.T) {
	for _, dir := range []string{"supervisor", "topology", "api"} {
		root := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
					if n := complexity(fn); n > maxComplexity {
						t.Errorf("%s: %s has cyclomatic complexity %d (at most %d): split it", fset.Position(fn.Pos()), fn.Name.Name, n, maxComplexity)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// complexity is 1 plus the function's branch points: if, for, range,
// each non-default case and select clause, && and ||.
func complexity(fn *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fn.Body, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// The house's sizes (docs/architecture.md): a package over maxPackageLines
// non-test lines is a room to split out; the supervisor's core, what
// every part needs at once, stays under maxCoreLines.
const (
	maxPackageLines = 5000
	maxCoreLines    = 4000
)

// TestPackagesStayRoomSized: no product package is over maxPackageLines
// non-test lines, and the supervisor's core is under maxCoreLines.
func TestPackagesStayRoomSized(t *testing.T) {
	t.Parallel()
	lines := map[string]int{}
	eachProductFile(t, func(string) bool { return false }, func(fset *token.FileSet, _ *ast.File, rel string) {
		lines[filepath.Dir(rel)] += fset.File(1).LineCount()
	})
	if lines["supervisor"] == 0 || len(lines) < 20 {
		t.Fatalf("counted %d packages, the core %d lines: the walk found too little", len(lines), lines["supervisor"])
	}
	for dir, n := range lines {
		if n > maxPackageLines {
			t.Errorf("%s has %d non-test lines, over %d: split a room out of it", dir, n, maxPackageLines)
		}
	}
	if n := lines["supervisor"]; n >= maxCoreLines {
		t.Errorf("the supervisor's core has %d non-test lines, %d or more: what is not entries, kinds, create, dispatch and the start belongs in a room", n, maxCoreLines)
	}
}
