package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// Lists of agents in help texts and docs come from the registry or are
// checked against it here: a text that names several CLI agents names
// them all, so a new agent cannot be left out of a list (and an old list
// of three cannot stay). A text that names one or two (an example, a
// fact about one agent) is not a list.

// listAt is how many agents a text names to be read as a list of them.
const listAt = 3

// agentWords are the ways each registered agent is named in text: its
// pane type and its title ("Claude Code").
func agentWords() map[string][]string {
	out := map[string][]string{}
	for _, n := range cliagent.Names() {
		k, _ := cliagent.Lookup(n)
		out[n] = []string{n, k.Title}
	}
	return out
}

// namedAgents are the registered agents text names, each as a whole word
// (claude, not claude1 or claude-sonnet-4-5).
func namedAgents(text string) []string {
	var out []string
	for n, words := range agentWords() {
		for _, w := range words {
			if regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(w) + `($|[^\w-])`).MatchString(text) {
				out = append(out, n)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// listGap is, for a text that lists agents, the registered ones it
// leaves out ("" when it lists none or all).
func listGap(text string) string {
	named := namedAgents(text)
	if len(named) < listAt {
		return ""
	}
	var left []string
	for _, n := range cliagent.Names() {
		if !slices.Contains(named, n) {
			left = append(left, n)
		}
	}
	return strings.Join(left, ", ")
}

// chunks are the units of a text a list lives in: its paragraphs, with
// each table row, list item and flag line a unit of its own.
func chunks(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	itemRe := regexp.MustCompile(`^\s*([*-] |\d+\. |\||--|-[a-z], --)`)
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case itemRe.MatchString(line):
			flush()
			cur = append(cur, line)
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return out
}

// docListAllowed are lists of agents in the docs that may name only some:
// each entry is a text of the list and why.
var docListAllowed = map[string]string{
	"only makes opencode and pi speak OpenAI Chat Completions, as Qwen Code does": "which agents OPENAI_BASE_URL switches to Chat Completions: a fact of those three, not a list of the agents",
	"| claude, codex, qwen `":                                "hooks.md's table of signals: a row names the agents that send that event (the three on Claude Code's hook format), not the agents",
	"| | Claude Code | Codex | opencode |":                   "cli-masters.md's table of what three masters' configs hold; the paragraphs under it give Qwen Code's, Gemini CLI's and pi's",
	"| the environment the server gets |":                    "a row of that same cli-masters.md table of three masters",
	"| part | what it is | Claude Code | Codex | opencode |": "lite-config.md's table of three agents' screen layouts; the paragraph under it gives the other three",
}

// listedDocs are the docs whose lists of agents are checked: every one a
// user reads (README.md, docs/*.md, examples/README.md).
func listedDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	out := []string{"README.md", "examples/README.md"}
	for _, d := range docs {
		out = append(out, "docs/"+filepath.Base(d))
	}
	return out
}

// TestDocListsEveryAgent: in every doc, a paragraph, table row or list
// item that names three or more CLI agents names every registered one.
func TestDocListsEveryAgent(t *testing.T) {
	t.Parallel()
	for _, name := range listedDocs(t) {
		f := filepath.Join("..", "..", filepath.FromSlash(name))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks(string(b)) {
			if gap := listGap(c); gap != "" && !allowedList(c) {
				t.Errorf("%s: a list of agents leaves out %s:\n%s", f, gap, c)
			}
		}
	}
}

// allowedList reports whether chunk holds one of docListAllowed.
func allowedList(chunk string) bool {
	for text := range docListAllowed {
		if strings.Contains(chunk, text) {
			return true
		}
	}
	return false
}

// TestHelpListsEveryAgent: every --help text that lists CLI agents lists
// them all, and the ones that must list them do: create's --type and
// --env, hook's --agent, and agents itself.
func TestHelpListsEveryAgent(t *testing.T) {
	t.Parallel()
	app := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	helps := map[string]string{}
	for _, p := range append([][]string{{}}, helpPaths(nil, app.Commands)...) {
		var stdout, stderr bytes.Buffer
		argv := append(append([]string{"cicy-agent"}, p...), "--help")
		if code := run(argv, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(argv, " "), code, stderr.String())
		}
		helps[strings.Join(p, " ")] = stdout.String()
		for _, c := range chunks(stdout.String()) {
			if gap := listGap(c); gap != "" {
				t.Errorf("%s: a list of agents leaves out %s:\n%s", strings.Join(argv, " "), gap, c)
			}
		}
	}
	for _, must := range []struct{ cmd, flag string }{{"create", "--type"}, {"create", "--env"}, {"hook", "--agent"}} {
		line := flagLine(helps[must.cmd], must.flag)
		if got := namedAgents(line); !slices.Equal(got, cliagent.Names()) {
			t.Errorf("%s --help, %s names %v; want every agent %v:\n%s", must.cmd, must.flag, got, cliagent.Names(), line)
		}
	}
	var out bytes.Buffer
	if code := run([]string{"cicy-agent", "agents"}, strings.NewReader(""), &out, &bytes.Buffer{}); code != 0 {
		t.Fatalf("agents: exit %d", code)
	}
	for _, n := range cliagent.Names() {
		if !regexp.MustCompile(`(?m)^` + n + ` `).MatchString(out.String()) {
			t.Errorf("agents does not list %s:\n%s", n, out.String())
		}
	}
}

// flagLine is the help of flag in a --help text: its line and the lines
// that continue it.
func flagLine(help, flag string) string {
	for _, c := range chunks(help) {
		if strings.HasPrefix(strings.TrimSpace(c), flag+" ") || strings.Contains(c, ", "+flag+" ") {
			return c
		}
	}
	return ""
}

// TestMissingSaysTheRecipe: agents --missing names every agent missing
// from an empty folder and PATH, each with its recipe (what
// scripts/install-clis.sh reads: npm ones installed, path ones named).
func TestMissingSaysTheRecipe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"CICY_CLI_DIR": dir, "PATH": dir, "HOME": dir}
	got := missingPins(func(k string) string { return env[k] })
	var want []string
	for _, n := range cliagent.Names() {
		k, _ := cliagent.Lookup(n)
		recipe := "path "
		if k.FromNPM() {
			recipe = "npm "
		}
		want = append(want, recipe+k.Pin())
	}
	if !slices.Equal(got, want) {
		t.Errorf("missing %q; want %q", got, want)
	}
}
