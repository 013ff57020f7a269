package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
)

// taskStatuses is every task status: package api's constants are their
// one spelling.
var taskStatuses = []string{api.TaskQueued, api.TaskDelivered, api.TaskDone, api.TaskFailed, api.TaskCancelled}

// TestTaskStatusesNamedByTheirConstants: outside package api no product
// code spells a task status to compare or switch a status with — no
// `t.Status == "done"`, no `case "failed":` on a `.Status` — it names
// api.TaskQueued … api.TaskCancelled (or asks api.Ended). So a status is
// one word, and a renamed one cannot leave a comparison behind that
// never matches again.
func TestTaskStatusesNamedByTheirConstants(t *testing.T) {
	t.Parallel()
	eachProductFile(t, func(rel string) bool { return strings.HasPrefix(rel, "api/") }, func(fset *token.FileSet, f *ast.File, _ string) {
		for _, at := range statusSpellings(f) {
			t.Errorf("%s: %s: name it api.Task… (or ask api.Ended); a turn's status is cicy.Turn…", fset.Position(at.pos), at.what)
		}
	})
}

// TestStatusSpellingsFound: the guard above finds what it looks for.
func TestStatusSpellingsFound(t *testing.T) {
	t.Parallel()
	const src = `package p
func f(t T, status string) {
	_ = t.Status == "done"
	_ = "queued" != t.Status
	_ = status == "cancelled"
	switch t.Status {
	case "failed":
	case api.TaskDone:
	}
	switch {
	case t.Status == "delivered":
	}
	_ = t.Status == api.TaskDone
	_ = t.Kind == "done"
	_ = t.Status == "completed"
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(statusSpellings(f)); got != 5 {
		t.Errorf("found %d spellings of a task status, want 5: %+v", got, statusSpellings(f))
	}
}

// statusSpellings are the places in f that compare a status with a task
// status's literal, or switch on a status with a case spelling one.
func statusSpellings(f *ast.File) []naming {
	return literalUses(f, isStatusExpr, func(e ast.Expr) bool { return stringIn(e, taskStatuses) },
		"a status compared with a task status's literal", "a case spelling a task status")
}

// isStatusExpr reports whether e reads like a status: x.Status, or a
// variable status.
func isStatusExpr(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "Status"
	case *ast.Ident:
		return x.Name == "status"
	}
	return false
}
