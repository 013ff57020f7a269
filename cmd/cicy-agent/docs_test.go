package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// outsideRefRe finds what a user who cloned the repository cannot follow:
// a path out of it into ../shared, or a section of a document it does not
// hold.
var outsideRefRe = regexp.MustCompile(`\.\./shared|SPEC\s*§`)

// helpPaths is the argv of every command and subcommand of the app, for
// `--help`, the app's own first.
func helpPaths(prefix []string, cmds []*cli.Command) [][]string {
	var out [][]string
	for _, c := range cmds {
		p := append(append([]string(nil), prefix...), c.Name)
		out = append(out, p)
		out = append(out, helpPaths(p, c.Subcommands)...)
	}
	return out
}

// Every --help the binary prints, the README, BENCHMARKS.md, docs/,
// examples/ and the seeded role templates are readable by someone who has
// only the repository: none cites ../shared or a SPEC section.
func TestUserTextsStayInTheRepository(t *testing.T) {
	app := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	paths := append([][]string{{}}, helpPaths(nil, app.Commands)...)
	for _, p := range paths {
		var stdout, stderr bytes.Buffer
		argv := append(append([]string{"cicy-agent"}, p...), "--help")
		if code := run(argv, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Errorf("%s: exit %d: %s", strings.Join(argv, " "), code, stderr.String())
			continue
		}
		if stdout.Len() == 0 {
			t.Errorf("%s printed nothing", strings.Join(argv, " "))
		}
		if m := outsideRefRe.FindString(stdout.String() + stderr.String()); m != "" {
			t.Errorf("%s cites %q", strings.Join(argv, " "), m)
		}
	}
	if len(paths) < 20 {
		t.Errorf("walked %d commands; the command tree was not found", len(paths))
	}

	var files []string
	for _, f := range []string{"README.md", "BENCHMARKS.md"} {
		files = append(files, filepath.Join("..", "..", f))
	}
	for _, dir := range []string{"docs", "examples", filepath.Join("cicy", "templates")} {
		root := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", root, err)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outsideRefRe.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q", f, i+1, m)
			}
		}
	}
}

// mdLinkRe is a relative Markdown link target (no scheme, no bare anchor).
var mdLinkRe = regexp.MustCompile(`\]\(([^)#:\s]+)(#[^)]*)?\)`)

// Every relative link of the README and docs/ names a file of the
// repository.
func TestDocLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md found (%v)", err)
	}
	pages = append(pages, filepath.Join("..", "..", "README.md"), filepath.Join("..", "..", "examples", "README.md"))
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLinkRe.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Join(filepath.Dir(page), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, m[1])
			}
		}
	}
}
