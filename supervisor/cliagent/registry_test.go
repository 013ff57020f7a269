package cliagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/panetype"
)

// demoKind is a throwaway agent as a new user's file would hold it: a
// program on PATH that is not on npm, its config seeded, its screen read
// by one rule; no hooks, no gateway, no guidance file of its own.
func demoKind() Kind {
	return Kind{
		Name: "demo", Bin: "demo-cli", Version: "1.2.3", VersionArgs: []string{"--version"},
		prepare:    func(Setup) ([]string, []string, error) { return []string{"demo-cli"}, nil, nil },
		workerOnly: true,
		rules:      pane.Rules{{Name: "demo-busy", State: pane.Busy, Part: pane.PartFooter, Match: `^working`}},
		// Its footer is its last line.
		layout: func(lines []string) []pane.Span {
			return []pane.Span{{Part: pane.PartFooter, From: len(lines) - 1, To: len(lines)}}
		},
	}
}

// registered registers k in a registry of its own (not the program's) and
// returns the panic message ("" when it registered).
func registered(kinds map[string]Kind, types *panetype.Registry, k Kind) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
			if msg == "" {
				msg = "a panic that is not a message"
			}
		}
	}()
	registerIn(kinds, types.Register, k)
	return ""
}

// TestAddingAnAgent is docs/agents.md's "Adding an agent": a new agent's
// file registers it, the checks pass, the defaults apply, the pane type is
// one create takes, and its signals say "screen only".
func TestAddingAnAgent(t *testing.T) {
	t.Parallel()
	kinds, types := map[string]Kind{}, panetype.NewRegistry()
	if msg := registered(kinds, types, demoKind()); msg != "" {
		t.Fatalf("the demo agent is refused: %s", msg)
	}
	k, ok := kinds["demo"]
	if !ok || !types.IsAgent("demo") || !slices.Contains(types.All(), "demo") {
		t.Fatalf("demo is not registered: kinds %v, types %v", ok, types.All())
	}
	if k.Pin() != "demo-cli@1.2.3" || k.FromNPM() {
		t.Errorf("pin %s, from npm %v", k.Pin(), k.FromNPM())
	}
	if k.ToolName("wait") != "wait" || k.Leads() {
		t.Errorf("a worker-only agent: tool %s, leads %v", k.ToolName("wait"), k.Leads())
	}
	if _, _, err := k.Prepare(Setup{MCP: &MCPServer{}}); err == nil || !strings.Contains(err.Error(), "a demo pane can be a worker, not a master") {
		t.Errorf("a worker-only agent made a master: %v", err)
	}
	if argv, _, err := k.Prepare(Setup{}); err != nil || argv[0] != "demo-cli" {
		t.Errorf("a worker: %q, %v", argv, err)
	}
	if v, ok := mustCompile(t, k.rules).Classify(pane.NewLayout("hello\nworking", k.layout)); !ok || v.State != pane.Busy {
		t.Errorf("its rule does not read its footer: %+v", v)
	}
	checkDemoDefaults(t, k, types)
}

// checkDemoDefaults checks what register filled in for the demo agent.
func checkDemoDefaults(t *testing.T, k Kind, types *panetype.Registry) {
	t.Helper()
	if got := k.Signals(); !slices.Equal(got, []string{ScreenOnly, "screen rules"}) {
		t.Errorf("signals %v; want screen only (no hooks claimed)", got)
	}
	if eff := k.Interpret("Stop", []byte(`{}`)); eff != (Effect{Ignored: "event Stop of demo is not used"}) {
		t.Errorf("an event of an agent with no hooks: %+v", eff)
	}
	if k.Title != "demo" {
		t.Errorf("title %q; want its name", k.Title)
	}
	if g := types.GuidanceFile("demo"); g != "AGENTS.md" {
		t.Errorf("guidance file %s; want AGENTS.md", g)
	}
	if at := k.GuidanceAt("/p"); at != filepath.Join("/p", "demo", "AGENTS.md") {
		t.Errorf("guidance at %s", at)
	}
}

// TestAddingAnAgentScreens: a new agent's recorded screens are found by
// its name, as the corpus tests find the real agents' (screen_test.go,
// cmd/cicy-agent TestScreenCorpus); without them the corpus test names
// what is missing.
func TestAddingAnAgentScreens(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if gaps := corpusGaps(root, []string{"demo"}); len(gaps) != len(corpusStates) {
		t.Errorf("an empty corpus: gaps %v", gaps)
	}
	for _, st := range corpusStates {
		if err := os.MkdirAll(filepath.Join(root, "demo", st), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "demo", st, "a-80x24.txt"), []byte("working\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if gaps := corpusGaps(root, []string{"demo"}); len(gaps) != 0 {
		t.Errorf("the demo's screens are not found: %v", gaps)
	}
}

// TestBadKindPanics: a Kind that cannot work is refused at init, naming
// the field.
func TestBadKindPanics(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		what string
		edit func(*Kind)
		want string
	}{
		{"no name", func(k *Kind) { k.Name = "" }, "field Name must be"},
		{"a name in capitals", func(k *Kind) { k.Name = "Demo" }, "field Name must be"},
		{"a built-in name", func(k *Kind) { k.Name = "shell" }, "field Name is a built-in"},
		{"no program", func(k *Kind) { k.Bin = "" }, "field Bin must be"},
		{"a program's path", func(k *Kind) { k.Bin = "/usr/bin/demo" }, "field Bin must be"},
		{"no version", func(k *Kind) { k.Version = "" }, "field Version is empty"},
		{"no recipe", func(k *Kind) { k.VersionArgs = nil }, "no install recipe"},
		{"two recipes", func(k *Kind) { k.Package = "demo-cli" }, "one install recipe"},
		{"no prepare", func(k *Kind) { k.prepare = nil }, "field prepare is nil"},
		{"a master with no tool names", func(k *Kind) { k.workerOnly = false }, "field toolName is nil"},
		{"a rule that does not compile", func(k *Kind) { k.rules[0].Match = "(" }, "field rules: "},
		{"a rule named for another agent", func(k *Kind) { k.rules[0].Name = "busy" }, `rule "busy" must be named demo-`},
		{"a rule on the transcript", func(k *Kind) { k.rules[0].Part = pane.PartTranscript }, "reads the transcript"},
		{"rules with no layout", func(k *Kind) { k.layout = nil }, "field layout is nil"},
		{"options with no approve", func(k *Kind) { k.answer = answerSpec{option: digit} }, "field answer has options"},
	} {
		k := demoKind()
		c.edit(&k)
		kinds, types := map[string]Kind{}, panetype.NewRegistry()
		msg := registered(kinds, types, k)
		if !strings.Contains(msg, c.want) || !strings.HasPrefix(msg, "cliagent: agent ") {
			t.Errorf("%s: panic %q; want one naming %q", c.what, msg, c.want)
		}
		if len(kinds) != 0 || len(types.Agents()) != 0 {
			t.Errorf("%s: registered anyway", c.what)
		}
	}
	kinds, types := map[string]Kind{}, panetype.NewRegistry()
	registered(kinds, types, demoKind())
	if msg := registered(kinds, types, demoKind()); !strings.Contains(msg, "registered twice") {
		t.Errorf("a name taken twice: %q", msg)
	}
}

// TestRegisteredAgentsKeepTheirOwn: the program's agents, registered by
// their files, keep what their files gave (the defaults fill only gaps):
// an agent whose file interprets its signals claims hooks.
func TestRegisteredAgentsKeepTheirOwn(t *testing.T) {
	t.Parallel()
	for _, n := range Names() {
		k, _ := Lookup(n)
		if err := checkKind(k); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		if k.interpret == nil || k.guidance == nil || k.toolName == nil {
			t.Errorf("%s: a default is missing after register", n)
		}
		if (k.hooks || len(k.APIs) > 0) == slices.Contains(k.Signals(), ScreenOnly) {
			t.Errorf("%s: signals %v", n, k.Signals())
		}
	}
}

func mustCompile(t *testing.T, rs pane.Rules) pane.Rules {
	t.Helper()
	c, err := rs.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestInstalledVersionOnPath: a program not on npm tells its version
// itself (VersionArgs); one that prints none, or fails, has none.
func TestInstalledVersionOnPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Each program is written by a child process, not by this one: a
	// program another test forks while this process holds the file open
	// for writing would keep it open, and running it would fail with
	// "text file busy".
	n := 0
	write := func(name, body string) string {
		n++
		p := filepath.Join(dir, strconv.Itoa(n), name)
		w := exec.Command("sh", "-c", `mkdir -p "${1%/*}" && cat > "$1" && chmod 755 "$1"`, "sh", p)
		w.Stdin = strings.NewReader("#!/bin/sh\n" + body + "\n")
		if out, err := w.CombinedOutput(); err != nil {
			t.Fatalf("write %s: %v %s", p, err, out)
		}
		return p
	}
	k := demoKind()
	for _, c := range []struct{ body, want string }{
		{`[ "$1" = --version ] && echo "demo-cli version 1.2.3 (build 2026-01-02)"`, "1.2.3"},
		{`echo "demo 2.0-beta.1"`, "2.0-beta.1"},
		{`echo "no version here"`, ""},
		{`exit 3`, ""},
	} {
		if got := k.InstalledVersion(write("demo-cli", c.body)); got != c.want {
			t.Errorf("%s: version %q, want %q", c.body, got, c.want)
		}
	}
}
