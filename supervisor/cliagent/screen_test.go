package cliagent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/pane"
)

// corpus is where the screens recorded from the real CLIs are:
// <corpus>/<agent>/<state>/*.txt, state busy, idle or waiting (see
// cmd/cicy-agent/record_test.go). A new agent's screens go there; the
// tests here and cmd/cicy-agent's TestScreenCorpus find them by its name.
const corpus = "../../cmd/cicy-agent/testdata/screens"

// corpusStates are the states every agent has recorded screens of.
var corpusStates = []string{"busy", "idle", "waiting"}

// screensOf are agent's recorded screens of state under root.
func screensOf(root, agent, state string) []string {
	files, _ := filepath.Glob(filepath.Join(root, agent, state, "*.txt"))
	return files
}

// corpusGaps are what the corpus under root lacks for the agents names:
// "<agent>: no <state> screen", one for each agent and state with none.
func corpusGaps(root string, names []string) []string {
	var out []string
	for _, agent := range names {
		for _, st := range corpusStates {
			if len(screensOf(root, agent, st)) == 0 {
				out = append(out, agent+": no "+st+" screen")
			}
		}
	}
	return out
}

// TestCorpusCoversEveryAgent: every registered agent has recorded
// screens of each state.
func TestCorpusCoversEveryAgent(t *testing.T) {
	t.Parallel()
	for _, gap := range corpusGaps(corpus, Names()) {
		t.Errorf("%s in %s; record them (docs/agents.md, Adding an agent)", gap, corpus)
	}
}

// pastedWords are the words of every agent's busy footers and status
// lines, permission dialogs and questions: quoted in an answer or typed
// into a draft, they must not change the state.
var pastedWords = []string{
	"esc to interrupt", "✻ Thinking… (esc to interrupt)", "◦ Working (1s • esc to interrupt)",
	"⬝⬝■■■■■■  esc interrupt", "esc again to interrupt",
	"Do you want to proceed?", "❯ 1. Yes", "  2. No", "Esc to cancel · Tab to amend",
	"Enter to select · ↑/↓ to navigate · Esc to cancel", "Yes, I trust this folder",
	"Would you like to run the following command?", "› 1. Yes, proceed (y)",
	"Press enter to confirm or esc to cancel", "△ Permission required",
	"Allow once   Allow always   Reject", "⇆ select  enter confirm",
	"⇆ tab  ↑↓ select  enter toggle  esc dismiss", "tab to add notes | enter to submit answer | esc to interrupt",
	"› /model         choose what model", "  /presets       run or save reusable prompts",
	"❯ /add-dir                Add a working directory", "  /agents     Switch agent     ┃",
	"Keyboard shortcuts  ·  Tab: Keyboard", "? / esc close", "! for shell mode   esc esc to clear input",
	"Commands                                         esc",
}

// answerMark is how each agent starts an answer in its transcript.
var answerMark = map[string]string{"claude": "● ", "codex": "• ", "opencode": "     ", "pi": " ", "qwen": "  ◆︎ ", "gemini": "✦ "}

func readScreen(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

func classify(t testing.TB, agent string, lines []string) (pane.Verdict, bool) {
	t.Helper()
	k, _ := Lookup(agent)
	rules, err := k.rules.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return rules.Classify(pane.NewLayout(strings.Join(lines, "\n"), k.layout))
}

// keepHeight drops lines from the top so that an edited screen keeps its
// height, as a terminal scrolls.
func keepHeight(lines []string, height int) []string {
	return lines[max(0, len(lines)-height):]
}

// Busy, waiting and question words pasted into an answer in the
// transcript, or into a draft in the composer, of a recorded idle screen
// leave it idle.
func TestPastedWordsStayIdle(t *testing.T) {
	for _, agent := range Names() {
		files := screensOf(corpus, agent, "idle")
		for _, f := range files {
			orig := readScreen(t, f)
			l := pane.NewLayout(strings.Join(orig, "\n"), Layout(agent))
			tr, okT := l.Find(pane.PartTranscript)
			co, okC := l.Find(pane.PartComposer)
			_, menu := l.Find(pane.PartMenu)
			if !okT || !okC && !menu {
				t.Errorf("%s: no transcript or composer in a recorded idle screen: %v", f, l.Describe())
				continue
			}
			name := filepath.Base(f)
			// (a) an answer quoting the words, after the transcript's last line.
			at := pane.LastNonBlank(orig, tr.To-1) + 1
			answer := []string{"", answerMark[agent] + "Here is what the other pane shows: " + pastedWords[0]}
			for _, w := range pastedWords {
				answer = append(answer, "  "+w)
			}
			answer = append(answer, "", answerMark[agent]+strings.Join(pastedWords, " "))
			edited := slices.Concat(orig[:at], answer, orig[at:])
			check(t, agent, name+" with an answer", keepHeight(edited, len(orig)))
			if menu {
				continue // the menu covers the composer: no draft to type into
			}
			// (b) a draft in the composer holding the words, for an agent
			// whose composer this test knows how to type into.
			first, indentBy, prompt, ok := draftSpot(agent, orig, co)
			if !ok {
				continue
			}
			// Drafts of a few lines, so that the composer stays on an 80×24 screen.
			for chunk := range slices.Chunk(pastedWords, 4) {
				draft := []string{prompt + chunk[0]}
				for _, w := range chunk[1:] {
					draft = append(draft, indentBy+w)
				}
				edited = slices.Concat(orig[:first], draft, orig[first+1:])
				check(t, agent, name+" with a draft", keepHeight(edited, len(orig)))
			}
		}
	}
}

// draftSpot is where a draft goes in agent's composer co on screen orig:
// the first line, the indent of the lines after it, and the prompt
// before it. ok is false for an agent whose composer it does not know
// (a new agent's idle screens get the answers of (a) only).
func draftSpot(agent string, orig []string, co pane.Span) (first int, indentBy, prompt string, ok bool) {
	first = co.From
	switch agent {
	case "claude", "qwen":
		first++ // under the composer's top rule
		indentBy = "  "
	case "pi":
		first++ // under the editor's top rule; the draft at column 0
	case "codex":
		indentBy = "  "
	case "opencode":
		first++ // under the box's first, empty line
		indentBy = orig[first][:strings.Index(orig[first], "┃")+len("┃")] + "  "
	case "gemini":
		first = geminiPromptBelow(orig, co.From, co.To) // under the rule and the mode's line
		indentBy = "   "
	default:
		return 0, "", "", false
	}
	prompt = strings.TrimRight(orig[first], " ")
	switch agent {
	case "claude", "codex", "qwen":
		prompt = string([]rune(prompt)[:1]) + " " // the prompt glyph, the placeholder or old draft gone
	case "gemini":
		prompt = prompt[:3] // " > ", the placeholder gone
	}
	return first, indentBy, prompt, true
}

func check(t *testing.T, agent, what string, lines []string) {
	t.Helper()
	v, ok := classify(t, agent, lines)
	if !ok || v.State != pane.Idle {
		l := pane.NewLayout(strings.Join(lines, "\n"), Layout(agent))
		t.Errorf("%s %s: %s by %s in the %s (line %d %q), want idle; parts %v\n%s", agent, what, v.State, v.Rule.Name, v.Part, v.LineNo, v.Line,
			l.Describe(), strings.Join(lines, "\n"))
	}
}

// BenchmarkClassify is the time the screen rules take on a 200×50 screen
// of each agent, busy, idle and waiting (they run every 500 ms per busy
// pane).
func BenchmarkClassify(b *testing.B) {
	for _, agent := range Names() {
		k, _ := Lookup(agent)
		rules, err := k.rules.Compile()
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []string{"busy/thinking-200x50-a", "idle/answered-200x50", "waiting/permission-200x50"} {
			screen := strings.Join(readScreen(b, filepath.Join(corpus, agent, c+".txt")), "\n")
			want := pane.State(strings.Split(c, "/")[0])
			b.Run(agent+"/"+strings.Split(c, "/")[0], func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if v, _ := rules.Classify(pane.NewLayout(screen, k.layout)); v.State != want {
						b.Fatalf("%s: %s", c, v.State)
					}
				}
			})
		}
	}
}

// Menus, overlays and question dialogs, drawn as the agents draw them:
// each is read by its own rule from its own part; the same words quoted
// in an answer in the transcript do not decide.
func TestMenusAndQuestions(t *testing.T) {
	const (
		claudeRule = "────────────────────────────────────────────────────────────"
		claudeFoot = "  ⏵⏵ bypass permissions on (shift+tab to cycle)"
		codexFoot  = "  fake-model default · /tmp/w-1"
		codexHints = "  ← for agents · ? for shortcuts"
		ocBox      = "  ╹▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀"
		ocFoot     = "   /tmp/w-1                                         ctrl+p commands"
	)
	claudeMenu := []string{"  ❯ /add-dir                Add a working directory", "    /auto-mode-setup        Teach auto mode about your", "                            environment"}
	claudeHelp := []string{"  ! for shell     esc esc to clear       ctrl+shift+_ to", "  mode            input                  undo", "  / for commands  shift+tab to cycle     ctrl+z to suspend"}
	codexMenu := []string{"› /model         choose what model and reasoning effort to", "                 use", "  /presets       run or save reusable prompts and slash"}
	codexHelp := []string{"  Keyboard shortcuts", "", "  Compose", "  /        Commands", "  @        Mention files"}
	codexMention := []string{"  main.go", "  create-statusline  Build and enable a custom MCP statusline  Skill", "", "", "  enter/tab insert · esc close · ↑/↓ select · ←/→ filter"}
	claudeMention := []string{"    + main.go", "    * claude (agent)             Catch-all for any task t…"}
	codexAsk := []string{"  Question 1/1 (1 unanswered)", "  Which colors should the buttons be?", "", "  › 1. Red                A warm color",
		"    2. Blue               A cool color", "", "  tab to add notes | enter to submit answer", "  esc to interrupt"}
	ocMenu := []string{"  ┃ /agents       Switch agent                           ┃", "  ┃ /compact      Compact session                        ┃"}
	ocComposer := []string{"  ┃", "  ┃  Ask anything…", "  ┃", "  ┃  Build · fake-model cicy-agent gateway", ocBox, ocFoot}
	ocPalette := []string{"     Commands                                       esc", "", "     Search", "", "     Suggested",
		"     Switch session                            ctrl+x l"}
	ocHelp := []string{"   Help                                         esc/enter", "", "   Press ctrl+p to see all available actions and", "   commands in any context."}
	ocAsk := []string{"  ┃", "  ┃   Colors   Confirm", "  ┃", "  ┃  Which colors should the buttons be? (select all that apply)", "  ┃",
		"  ┃  1. [ ] Red", "  ┃  2. [ ] Blue", "  ┃", "  ┃  ⇆ tab  ↑↓ select  enter toggle  esc dismiss", "  ┃"}
	piFoot := []string{"/tmp/w-1", "↑1.2k ↓20 1.2%/128k (auto)                    fake-model"}
	piAsk := []string{claudeRule, "", " Permission required", " Allow bash: echo x > asked.txt", "", " → Yes", "   No", "",
		" ↑↓ navigate  enter select  escape/ctrl+c cancel", "", claudeRule}
	piModels := []string{claudeRule, "", " Select model", "", " → fake-model", "   other-model", "", " ↑↓ navigate  enter select  escape/ctrl+c cancel", "", claudeRule}
	quote := func(mark string, words []string) []string {
		out := []string{mark + "They show:"}
		for _, w := range words {
			out = append(out, strings.Repeat(" ", len([]rune(mark)))+strings.TrimLeft(w, " "))
		}
		return append(out, "")
	}
	cases := []struct {
		name, agent string
		screen      [][]string
		state       pane.State
		rule        string
		part        pane.Part
	}{
		{"slash menu", "claude", [][]string{{"● done", ""}, claudeMenu, {claudeRule, "❯\u00a0/", claudeRule, claudeFoot}}, pane.Idle, "claude-menu", pane.PartMenu},
		{"shortcut panel", "claude", [][]string{{"● done", "", claudeRule, "❯\u00a0", claudeRule}, claudeHelp}, pane.Idle, "claude-menu", pane.PartMenu},
		{"mention popup", "claude", [][]string{{"● done", ""}, claudeMention, {claudeRule, "❯\u00a0@", claudeRule, claudeFoot}}, pane.Idle, "claude-menu", pane.PartMenu},
		{"quoted menu", "claude", [][]string{quote("● ", append(claudeMenu, claudeHelp...)), {claudeRule, "❯\u00a0/", claudeRule, claudeFoot}}, pane.Idle, "claude-idle-footer", pane.PartFooter},
		{"slash menu", "codex", [][]string{{"• done", ""}, codexMenu, {"", "› /", "", codexFoot}}, pane.Idle, "codex-menu", pane.PartMenu},
		{"shortcut overlay", "codex", [][]string{{"• done", ""}, codexHelp, {"", "› Ask Codex to do anything", "", codexFoot, "  ? / esc close"}}, pane.Idle, "codex-menu", pane.PartMenu},
		{"mention popup", "codex", [][]string{{"• done", ""}, codexMention, {"", "› @m", "", codexFoot}}, pane.Idle, "codex-menu", pane.PartMenu},
		{"quoted mention popup", "codex", [][]string{quote("• ", codexMention), {"› @m", "", codexFoot, codexHints}}, pane.Idle, "codex-idle", pane.PartFooter},
		{"plan-mode question", "codex", [][]string{{"› ask me", ""}, codexAsk}, pane.Waiting, "codex-question", pane.PartDialog},
		// Quoted right above the composer, with the draft "/": the footer
		// keeps its hints, so no popup is open.
		{"quoted menu", "codex", [][]string{quote("• ", append(codexMenu, codexHelp...)), {"› /", "", codexFoot, codexHints}}, pane.Idle, "codex-idle", pane.PartFooter},
		{"quoted question", "codex", [][]string{quote("• ", codexAsk), {"› Ask Codex to do anything", "", codexFoot, codexHints}}, pane.Idle, "codex-idle", pane.PartFooter},
		{"slash menu", "opencode", [][]string{{"     done", ""}, ocMenu, {"  ┃", "  ┃  /", "  ┃", "  ┃  Build · fake-model cicy-agent gateway", ocBox, ocFoot}}, pane.Idle, "opencode-menu", pane.PartMenu},
		{"palette", "opencode", [][]string{{"     done", ""}, ocPalette}, pane.Idle, "opencode-menu", pane.PartMenu},
		{"help", "opencode", [][]string{{"     done", ""}, ocHelp, {""}, ocComposer}, pane.Idle, "opencode-menu", pane.PartMenu},
		{"multiple-choice question", "opencode", [][]string{{"     → Asked 1 question", ""}, ocAsk}, pane.Waiting, "opencode-question", pane.PartDialog},
		// The user's message box joins the composer's, a line of it closed
		// like the popup's: no popup without a draft starting with "/".
		{"closed line in a message", "opencode", [][]string{{"  ┃", "  ┃  it shows ┃ /agents   Switch agent ┃"}, ocComposer}, pane.Idle, "opencode-idle-footer", pane.PartFooter},
		{"quoted question", "opencode", [][]string{quote("     ", slices.Concat(ocAsk, ocMenu, []string{"Commands    esc"})), ocComposer}, pane.Idle, "opencode-idle-footer", pane.PartFooter},
		{"permission", "pi", [][]string{{" $ echo x > asked.txt", "", " ⠇ Working...", ""}, piAsk, piFoot}, pane.Waiting, "pi-permission", pane.PartDialog},
		{"model selector", "pi", [][]string{{" done", ""}, piModels, piFoot}, pane.Idle, "pi-selector", pane.PartDialog},
		// A draft taller than the editor: its upper rule carries the scroll mark.
		{"scrolled draft", "pi", [][]string{{" done", ""}, {"─── ↑ 2 more " + claudeRule[:3*40], "third line", "└ fourth line", claudeRule}, piFoot}, pane.Idle, "pi-idle-footer", pane.PartFooter},
		// (An answer whose last line is a spinner line, right above the
		// editor, would read busy: the screen alone cannot tell it.)
		{"quoted question", "pi", [][]string{quote(" ", slices.Concat(piAsk[1:len(piAsk)-1], []string{"⠇ Working..."})), {" That is all.", "", claudeRule, "", claudeRule}, piFoot}, pane.Idle, "pi-idle-footer", pane.PartFooter},
	}
	for _, c := range cases {
		lines := slices.Concat(c.screen...)
		v, ok := classify(t, c.agent, lines)
		l := pane.NewLayout(strings.Join(lines, "\n"), Layout(c.agent))
		if !ok || v.State != c.state || v.Rule.Name != c.rule || v.Part != c.part {
			t.Errorf("%s %s: %s by %q in the %q (line %d %q), want %s by %q in the %q; parts %v\n%s", c.agent, c.name, v.State, v.Rule.Name, v.Part,
				v.LineNo, v.Line, c.state, c.rule, c.part, l.Describe(), strings.Join(lines, "\n"))
		}
		if _, menu := l.Find(pane.PartMenu); menu != (c.part == pane.PartMenu) {
			t.Errorf("%s %s: parts %v", c.agent, c.name, l.Describe())
		}
	}
}

// hasMenus reports whether agent's layout finds menus (its file's
// layout marks a PartMenu on one of its recorded screens): such an agent
// has recorded answers quoting menus too.
func hasMenus(agent string) bool {
	for _, st := range corpusStates {
		for _, f := range screensOf(corpus, agent, st) {
			b, _ := os.ReadFile(f)
			if _, ok := pane.NewLayout(string(b), Layout(agent)).Find(pane.PartMenu); ok {
				return true
			}
		}
	}
	return false
}

// The recorded answers quoting menus and question dialogs
// (quoted-menus-*) are read idle by the idle footer, with no menu found.
func TestQuotedMenusStayIdle(t *testing.T) {
	for _, agent := range Names() {
		files, _ := filepath.Glob(filepath.Join(corpus, agent, "idle", "quoted-menus-*.txt"))
		if len(files) == 0 && hasMenus(agent) {
			t.Fatalf("%s: no quoted-menus screens", agent)
		}
		for _, f := range files {
			lines := readScreen(t, f)
			v, ok := classify(t, agent, lines)
			l := pane.NewLayout(strings.Join(lines, "\n"), Layout(agent))
			if _, menu := l.Find(pane.PartMenu); !ok || v.State != pane.Idle || v.Part != pane.PartFooter || menu {
				t.Errorf("%s: %s by %q in the %q; parts %v", f, v.State, v.Rule.Name, v.Part, l.Describe())
			}
		}
	}
}

// A menu opened while Codex works leaves it busy: its status line stays
// above the menu, headers and all, and the busy rules come first.
func TestBusyUnderMenu(t *testing.T) {
	status := []string{"› think", "", "◦ Working (9s • esc to interrupt)", ""}
	foot := []string{"", "  fake-model default · /tmp/w-1"}
	for name, screen := range map[string][][]string{
		"slash menu":   {status, {"› /model         choose what model", "  /presets       run or save reusable prompts", ""}, {"› /"}, foot},
		"mention menu": {status, {"  Mentions", "  Files, directories, plugins, skills and tasks", "", "  Type to search mentions", "", "› main.go", "", "  enter/tab insert · esc close", ""}, {"› @"}, foot},
		"shortcuts":    {status, {"  Keyboard shortcuts", "", "  Compose", "  /        Commands", ""}, {"› Ask Codex to do anything"}, foot, {"  ? / esc close"}},
	} {
		lines := slices.Concat(screen...)
		v, _ := classify(t, "codex", lines)
		l := pane.NewLayout(strings.Join(lines, "\n"), Layout("codex"))
		_, menu := l.Find(pane.PartMenu)
		if v.State != pane.Busy || v.Rule.Name != "codex-busy" || !menu {
			t.Errorf("%s: %s by %q; parts %v\n%s", name, v.State, v.Rule.Name, l.Describe(), strings.Join(lines, "\n"))
		}
	}
}

// The pickers and panels a person opened over an idle agent (recorded as
// idle/*-picker-*, idle/*-panel-*) read idle from the menu part: never
// waiting as a question, never busy.
func TestOpenedPickersReadIdle(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpus, "*", "idle", "*.txt"))
	n := 0
	for _, f := range files {
		name := filepath.Base(f)
		if !strings.Contains(name, "-picker-") && !strings.Contains(name, "-panel-") || strings.Contains(name, "-closed-") {
			continue
		}
		agent := filepath.Base(filepath.Dir(filepath.Dir(f)))
		if agent == "pi" {
			continue // its model selector keeps the editor and footer in view
		}
		n++
		lines := readScreen(t, f)
		v, ok := classify(t, agent, lines)
		if !ok || v.State != pane.Idle || v.Part != pane.PartMenu {
			l := pane.NewLayout(strings.Join(lines, "\n"), Layout(agent))
			t.Errorf("%s: %s by %q in the %q; parts %v", f, v.State, v.Rule.Name, v.Part, l.Describe())
		}
	}
	if n < 20 {
		t.Fatalf("%d picker and panel screens in the corpus", n)
	}
}
