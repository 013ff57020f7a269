package main

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The routes docs/http-api.md names are the routes the supervisor serves:
// those of package httpapi's mux and of the rooms that mount their own
// (the notifications, the web page's management), read from the code.

// routePlaceholder is a path's {name} or {name...}: compared as {}.
var routePlaceholder = regexp.MustCompile(`\{[^}]*\}`)

// route is "METHOD /api/path" with its placeholders unnamed.
func route(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	return method + " " + routePlaceholder.ReplaceAllString(path, "{}")
}

// servedRoutes are the API routes registered in the supervisor's Go files
// (its tests left out): every mux pattern "METHOD /api/…".
func servedRoutes(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`Handle(?:Func)?\("(GET|POST|PUT|DELETE|PATCH) (/api/[^"]*)"`)
	seen := map[string]bool{}
	root := filepath.Join("..", "..", "supervisor")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			seen[route(m[1], m[2])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(seen))
}

// TestDocsHTTPAPIRoutes: every route docs/http-api.md names is served,
// and every route served is in docs/http-api.md.
func TestDocsHTTPAPIRoutes(t *testing.T) {
	t.Parallel()
	served := servedRoutes(t)
	if len(served) == 0 {
		t.Fatal("no routes found in supervisor/; has the mux moved?")
	}
	named := map[string]bool{}
	re := regexp.MustCompile("(GET|POST|PUT|DELETE|PATCH) (/api/(?:\\{[^}]*\\}|[^`\\s|{])*)")
	for _, m := range re.FindAllStringSubmatch(repoFile(t, "docs/http-api.md"), -1) {
		named[route(m[1], m[2])] = true
	}
	for _, r := range served {
		if !named[r] {
			t.Errorf("docs/http-api.md does not name the route %s; add it to the table of routes", r)
		}
	}
	for r := range named {
		if !slices.Contains(served, r) {
			t.Errorf("docs/http-api.md names %s, which the supervisor does not serve", r)
		}
	}
}
