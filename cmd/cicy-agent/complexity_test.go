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
