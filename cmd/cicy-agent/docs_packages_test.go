package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The package list at the top of docs/architecture.md names every
// package of the module, one line each, and nothing that is not one (but
// the folders of the layout that hold no Go: examples/, scripts/). A
// package added, moved or removed without its line fails here.

// modulePackages are the module's packages as folders from its root
// (slash-separated): every folder holding a Go file that is not a test,
// test helpers included; testdata and hidden folders are not the module's.
func modulePackages(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(seen))
}

// architectureList is the first word of each line of the first code
// block of docs/architecture.md (its package list), less a trailing /.
func architectureList(t *testing.T) []string {
	t.Helper()
	text := repoFile(t, "docs/architecture.md")
	_, rest, ok := strings.Cut(text, "\n```\n")
	block, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed {
		t.Fatal("docs/architecture.md: no code block with the package list")
	}
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, strings.TrimSuffix(f[0], "/"))
		}
	}
	return out
}

// TestDocsArchitectureListsEveryPackage: docs/architecture.md's package
// list names each package of the module once, and every name in it is a
// package or a folder of the layout without Go files.
func TestDocsArchitectureListsEveryPackage(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	pkgs := modulePackages(t, root)
	listed := architectureList(t)
	count := map[string]int{}
	for _, name := range listed {
		count[name]++
	}
	for _, p := range pkgs {
		if count[p] == 0 {
			t.Errorf("docs/architecture.md: the package list leaves out %s; add a line saying what it holds (its doc.go)", p)
		}
	}
	for name, n := range count {
		if n > 1 {
			t.Errorf("docs/architecture.md: the package list names %s %d times", name, n)
		}
		if slices.Contains(pkgs, name) {
			continue
		}
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(name)))
		switch {
		case err != nil || !st.IsDir():
			t.Errorf("docs/architecture.md: the package list names %s, which is no folder of the module (moved or removed?)", name)
		default:
			if goFiles, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(name), "*.go")); len(goFiles) > 0 {
				t.Errorf("docs/architecture.md: the package list names %s, whose Go files are only tests", name)
			}
		}
	}
}

// TestEveryPackageHasItsDoc: each package of the module says what it
// holds in a package comment (a doc.go, or its main file's), which the
// architecture's list follows.
func TestEveryPackageHasItsDoc(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	for _, p := range modulePackages(t, root) {
		dir := filepath.Join(root, filepath.FromSlash(p))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		documented := false
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if af.Doc != nil && strings.TrimSpace(af.Doc.Text()) != "" {
				documented = true
				break
			}
		}
		if !documented {
			t.Errorf("%s has no package comment; say what it holds and why in its doc.go", p)
		}
	}
}

// TestDocsGoFilesExist: every Go file a doc names by its path from the
// repository's root (`supervisor/tasks.go`, **pane/tmux.go**) is there,
// so a file moved by a refactor takes its docs with it.
func TestDocsGoFilesExist(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile("(?:\\*\\*|`)([a-z][a-z0-9_/-]*/[a-z0-9_-]+\\.go)(?:\\*\\*|`)")
	for _, doc := range listedDocs(t) {
		for _, m := range re.FindAllStringSubmatch(repoFile(t, doc), -1) {
			if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(m[1]))); err != nil {
				t.Errorf("%s names %s, which is not there (moved?)", doc, m[1])
			}
		}
	}
}
