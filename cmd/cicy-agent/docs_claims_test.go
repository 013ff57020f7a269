package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/supervisor"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway/modelapi"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The claims of the README, docs/, examples/README.md and the package docs
// that state a number or a list are checked here against the code that
// decides it: the demo team files, the model APIs modelapi serves, the
// pane types and CLI agents of the registry, the team tools. A claim is a
// regular expression whose first group is the span that states it; a
// claim no longer found fails too, so that rewording one keeps it checked.

// repoFile is the text of a file of the repository, by its path from the
// repository's root.
func repoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// spans are the first groups of every match of re in the file at path,
// their whitespace (line breaks, a comment's //) collapsed to one space;
// none is an error.
func spans(t *testing.T, path, re string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(repoFile(t, path), -1) {
		out = append(out, strings.Join(strings.Fields(strings.ReplaceAll(m[1], "//", " ")), " "))
	}
	if len(out) == 0 {
		t.Errorf("%s: the claim %q is not found; if it was reworded, update it here", path, re)
	}
	return out
}

// numberWords are the numbers as the docs write them.
var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}

// number reads a number the docs write in words or digits; -1 if neither.
func number(s string) int {
	if i := slices.Index(numberWords, strings.ToLower(s)); i >= 0 {
		return i
	}
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return -1
}

// wordRe is a whole word w.
func wordRe(w string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(w) + `($|[^\w-])`)
}

// demoTeam is an examples/ team file, loaded.
func demoTeam(t *testing.T, name string) *topology.Team {
	t.Helper()
	team, err := topology.LoadTeam(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return team
}

// teamCount counts what a claim about a team file states: its panes, its
// workers, its workers of one type ("workers:cicy"), or its nodes.
func teamCount(team *topology.Team, what string) int {
	n := 0
	nodes := map[string]bool{}
	for _, p := range team.Panes {
		nodes[p.Node] = true
		typ := p.Type
		if typ == "" {
			typ = "cicy"
		}
		switch {
		case what == "panes",
			what == "workers" && p.Role == topology.RoleWorker,
			what == "workers:"+typ && p.Role == topology.RoleWorker:
			n++
		}
	}
	if what == "nodes" {
		return len(nodes)
	}
	return n
}

// Every number the docs state about a demo team is that of its team file
// in examples/.
func TestDocsDemoTeamNumbers(t *testing.T) {
	t.Parallel()
	claims := []struct{ path, re, team, what string }{
		{"README.md", `a coordinator, (\w+) cicy engineers`, "demo.yaml", "workers:cicy"},
		{"docs/demos-and-tests.md", `a coordinator, (\w+) cicy engineers`, "demo.yaml", "workers:cicy"},
		{"docs/demos-and-tests.md", `dispatches (\w+) tasks`, "demo.yaml", "workers"},
		{"docs/demos-and-tests.md", `a cicy coordinator and (\w+) workers`, "mixed.yaml", "workers"},
		{"docs/demos-and-tests.md", `all (\w+) changes are on`, "mixed.yaml", "workers"},
		{"docs/demos-and-tests.md", `across (\w+) nodes`, "demo-cluster.yaml", "nodes"},
		{"examples/README.md", `splits the goal into (\w+) tasks`, "demo.yaml", "workers"},
		{"examples/README.md", "creates the (\\w+) panes", "demo.yaml", "panes"},
		{"examples/README.md", "calls `dispatch` (\\w+) times —", "demo.yaml", "workers"},
		{"examples/README.md", "calls `dispatch` (\\w+) times, one change per worker", "mixed.yaml", "workers"},
		{"examples/README.md", `many of the\s+(\w+) changes`, "mixed.yaml", "workers"},
		{"examples/README.md", `all (\w+) changes are on`, "mixed.yaml", "workers"},
		{"examples/README.md", `With all (\w+) on`, "mixed.yaml", "workers"},
		{"examples/demo.yaml", `one coordinator and (\w+) workers`, "demo.yaml", "workers"},
	}
	for _, c := range claims {
		want := teamCount(demoTeam(t, c.team), c.what)
		for _, got := range spans(t, c.path, c.re) {
			if number(got) != want {
				t.Errorf("%s says %q (%s), but examples/%s has %d %s", c.path, got, c.re, c.team, want, c.what)
			}
		}
	}
}

// mdTable is the rows of the first Markdown table after heading, each a
// list of its cells (the header and the rule left out).
func mdTable(t *testing.T, path, heading string) [][]string {
	t.Helper()
	text := repoFile(t, path)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s: no heading %q", path, heading)
	}
	var rows [][]string
	for _, line := range strings.Split(text[i+len(heading)+2:], "\n") {
		switch {
		case strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "| "), "|")
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			rows = append(rows, cells)
		case len(rows) > 0:
			return rows[2:]
		}
	}
	return nil
}

// examples/README.md's tables of the demo teams list the panes of their
// team files: title, type and role, in order.
func TestDocsDemoTeamTables(t *testing.T) {
	t.Parallel()
	for heading, file := range map[string]string{"## The cicy team": "demo.yaml", "## The mixed team": "mixed.yaml"} {
		var want, got []string
		for _, p := range demoTeam(t, file).Panes {
			want = append(want, p.Title+" "+p.Type+" "+p.Role)
		}
		for _, row := range mdTable(t, "examples/README.md", heading) {
			got = append(got, strings.Join(row[:3], " "))
		}
		if !slices.Equal(got, want) {
			t.Errorf("examples/README.md %q lists the panes\n%s\nbut examples/%s has\n%s", heading, strings.Join(got, "\n"), file, strings.Join(want, "\n"))
		}
	}
}

// checkNames fails unless each name is in every span of the claim
// (matched by want), and each of absent is in none.
func checkNames(t *testing.T, path, re string, names, absent []string, want func(span, name string) bool) {
	t.Helper()
	for _, span := range spans(t, path, re) {
		for _, n := range names {
			if !want(span, n) {
				t.Errorf("%s: %q does not name %s (claim %s)", path, span, n, re)
			}
		}
		for _, n := range absent {
			if want(span, n) {
				t.Errorf("%s: %q names %s, which it should not (claim %s)", path, span, n, re)
			}
		}
	}
}

// hasWord: name is a word of span. hasCode: it is there in backquotes.
func hasWord(span, name string) bool { return wordRe(name).MatchString(span) }
func hasCode(span, name string) bool { return strings.Contains(span, "`"+name+"`") }

// Where the docs list the model APIs served (by modelapi, so by the
// scripted model behind the gateway and the test fake, and by the
// gateway), they name each of modelapi.APIs.
func TestDocsModelAPIs(t *testing.T) {
	t.Parallel()
	var names []string
	for _, api := range modelapi.APIs() {
		title := modelapi.APITitle(api)
		if title == "" {
			t.Fatalf("modelapi serves the API %q, which has no title", api)
		}
		names = append(names, strings.TrimPrefix(title, "OpenAI "))
	}
	if len(names) != 4 {
		t.Errorf("modelapi serves %d APIs (%s); the docs say four: update them and this test", len(names), strings.Join(names, ", "))
	}
	for _, c := range []struct{ path, re string }{
		{"supervisor/gateway/modelapi/doc.go", `(?s)it serves\n// them (.*?)streamed`},
		{"supervisor/gateway/modelapi/doc.go", `(?s)A \[Handler\] answers:(.*?)GET /v1/models`},
		{"cicy/fakellm/doc.go", `(?s)the model APIs of(.*?)GET /v1/models`},
		{"supervisor/gateway/doc.go", `(?s)It serves(.*?)streaming and not`},
		{"docs/gateway.md", `(?s)## What it serves(.*?)Streaming and not`},
		{"docs/gateway.md", `(?s)in the API it speaks \((.*?)\)`},
		{"docs/demos-and-tests.md", "(?s)\\(`cicy/fakellm`:(.*?)\\)"},
		{"docs/architecture.md", `supervisor/gateway +the local AI gateway:([^\n]*)`},
		{"docs/architecture.md", `supervisor/gateway/modelapi +the model wire APIs([^\n]*)`},
		{"docs/scripted-model.md", `(?s)in each agent's own\s+API \((.*?)\)`},
	} {
		checkNames(t, c.path, c.re, names, nil, strings.Contains)
	}
}

// Where the docs list the pane types, they name each of the registry's.
func TestDocsPaneTypes(t *testing.T) {
	t.Parallel()
	types := panetype.All()
	checkNames(t, "docs/team-files.md", `type: cicy +#([^\n]*)`, types, nil, hasWord)
	for _, c := range []struct{ path, re string }{
		{"docs/team-files.md", "\\| `type` \\| `cicy` \\|([^\\n]*)"},
		{"docs/role-templates.md", "\\| `\\{\\{AGENT_TYPE\\}\\}` \\|([^\\n]*)"},
		{"examples/README.md", "`type` \\(([^)]*)\\)"},
	} {
		checkNames(t, c.path, c.re, types, nil, hasCode)
	}
}

// agentNames are the CLI agents' names in prose, by pane type: a type the
// registry adds needs its name here, and in the docs.
var agentNames = map[string]string{
	"claude": "Claude Code", "codex": "Codex", "opencode": "opencode",
	"qwen": "Qwen Code", "pi": "pi", "gemini": "Gemini CLI",
}

// agentsBy are the prose names of the registry's CLI agents that keep
// (or, with keep false, fail) pred, by their pane types' order.
func agentsBy(t *testing.T, pred func(cliagent.Kind) bool, keep bool) []string {
	t.Helper()
	var out []string
	for _, typ := range panetype.Agents() {
		name, ok := agentNames[typ]
		if !ok {
			t.Fatalf("the CLI agent %q has no name in agentNames: add it, and to the docs", typ)
		}
		k, ok := cliagent.Lookup(typ)
		if !ok {
			t.Fatalf("pane type %q is a CLI agent the cliagent registry does not hold", typ)
		}
		if pred(k) == keep {
			out = append(out, name)
		}
	}
	return out
}

// Where the docs list the CLI agents, they name each of the registry's;
// where they list those that can be masters, those alone; where they list
// the pinned packages, each pin.
func TestDocsCLIAgents(t *testing.T) {
	t.Parallel()
	all := agentsBy(t, func(cliagent.Kind) bool { return true }, true)
	for _, c := range []struct{ path, re string }{
		{"README.md", `one PostgreSQL: CLI\s+agents \(([^)]*)\)`},
		{"docs/getting-started.md", `running the real ([^;]*)`},
		{"docs/cli-agents.md", `# CLI agents: ([^\n]*)`},
		{"docs/demos-and-tests.md", `on a git repository: ([^\n]*)`},
		{"docs/architecture.md", `supervisor/cliagent +the CLI agents \(([^)]*)\)`},
		{"docs/gateway.md", `(?s)and every (.*?) pane reaches`},
		{"docs/hooks.md", `(?s)\A# [^\n]*\n\n(.*?) gets its state`},
		{"examples/README.md", `(?s)\(\x60make demo\x60\), and \x60mixed.yaml\x60, (.*?) each in`},
		{"examples/mixed.yaml", `(?s)leads (.*?), each in`},
		{"cicy/fakellm/doc.go", `(?s)drive the real (.*?) offline`},
		{"supervisor/gateway/doc.go", `(?s)that the CLI agents \((.*?)\)`},
	} {
		checkNames(t, c.path, c.re, all, nil, hasWord)
	}
	leads := agentsBy(t, cliagent.Kind.Leads, true)
	workersOnly := agentsBy(t, cliagent.Kind.Leads, false)
	checkNames(t, "docs/cli-masters.md", "(?s)`team` tools\\. (.*?) pane\\s+with role", leads, workersOnly, hasWord)
	var pins []string
	for _, typ := range panetype.Agents() {
		k, _ := cliagent.Lookup(typ)
		pins = append(pins, k.Pin())
	}
	checkNames(t, "docs/demos-and-tests.md", `(?s)installs the pinned real CLI agents \((.*?)\)`, pins, nil, hasCode)
}

// Where the docs list a CLI master's team tools (cicy-agent mcp's), they
// name each one.
func TestDocsTeamTools(t *testing.T) {
	t.Parallel()
	var tools []string
	for _, tl := range supervisor.TeamToolDefs() {
		tools = append(tools, tl.Name)
	}
	checkNames(t, "docs/commands.md", "\\| `mcp \\[--pane P\\]` \\|([^\\n]*)", tools, nil, hasCode)
	checkNames(t, "docs/cli-masters.md", "(?s)The tools are those of `cicy-agent mcp`:(.*?)A worker's result", tools, nil, hasCode)
}
