package cliagent

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/pane"
)

// The keys each agent takes, as read off its dialogs and checked against
// the real CLIs (testdata/script/cli_*.txtar); every key is one `send
// --key` takes.
func TestAnswerKeys(t *testing.T) {
	want := map[string][3][]string{ // approve, deny, option:3
		"claude":   {{"1"}, {"Escape"}, {"3"}},
		"codex":    {{"y"}, {"Escape"}, {"3"}},
		"gemini":   {{"1"}, {"Escape"}, {"3"}},
		"qwen":     {{"1"}, {"Escape"}, {"3"}},
		"opencode": {{"Enter"}, {"Escape"}, {"Down", "Down", "Enter"}},
		"pi":       {{"Enter"}, {"Escape"}, {"Down", "Down", "Enter"}},
	}
	for _, agent := range Names() {
		k, _ := Lookup(agent)
		w, known := want[agent] // a new agent's keys are only checked to be keys
		for i, action := range []string{"approve", "deny", "option:3"} {
			got, err := k.AnswerKeys(action)
			if known && (err != nil || !slices.Equal(got, w[i])) {
				t.Errorf("%s %s = %q, %v; want %q", agent, action, got, err, w[i])
			}
			for _, key := range got {
				if _, err := pane.KeyBytes(key); err != nil {
					t.Errorf("%s %s: %v", agent, action, err)
				}
			}
		}
		for _, bad := range []string{"", "yes", "option:", "option:0", "option:10", "option:x", "restart"} {
			if got, err := k.AnswerKeys(bad); err == nil {
				t.Errorf("%s %q = %q; want an error", agent, bad, got)
			}
		}
	}
}

// wantDialog is what each recorded waiting screen asks, by the screen's
// name before its size.
var wantDialog = map[string]Dialog{
	"claude/permission": {Kind: "approval", Text: "echo x > asked.txt",
		Options: []string{"Yes", "Yes, and always allow access to /tmp/TestRecordScreensclaude869866619/001/workspaces/w-2 from this project", "Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}},
	"claude/question": {Kind: "question", Text: "Which color should the button be?",
		Options: []string{"Red", "Blue", "Type something.", "Chat about this"}},
	"claude/multi-question": {Kind: "question", Text: "Which colors should the buttons be?",
		Options: []string{"Red", "Blue", "Type something", "Chat about this"}},
	"codex/permission": {Kind: "approval", Text: "touch asked.txt",
		Options: []string{"Yes, proceed (y)", "Yes, and don't ask again for commands that start with `touch asked.txt` (p)", "No, and tell Codex what to do differently (esc)"}},
	"codex/plan-question": {Kind: "question", Text: "Which colors should the buttons be?",
		Options: []string{"Red", "Blue", "None of the above"}},
	"gemini/permission": {Kind: "approval", Text: "Shell echo x > asked.txt",
		Options: []string{"Allow once", "Allow for this session", "No, suggest changes (esc)"}},
	"gemini/question": {Kind: "question", Text: "Which color should the button be",
		Options: []string{"Red", "Blue", "Enter a custom value"}},
	"opencode/permission": {Kind: "approval", Text: "echo x > asked.txt",
		Options: []string{"Allow once", "Allow always", "Reject"}},
	"opencode/question": {Kind: "question", Text: "Which color should the button be?",
		Options: []string{"Red", "Blue", "Type your own answer"}},
	"opencode/multi-question": {Kind: "question", Text: "Which colors should the buttons be? (select all that apply)",
		Options: []string{"Red", "Blue", "Type your own answer"}},
	"pi/permission": {Kind: "approval", Text: "Allow bash: echo x > asked.txt", Options: []string{"Yes", "No"}},
	"qwen/permission": {Kind: "approval", Text: "Shell echo x > asked.txt (fake-llm shell directive)",
		Options: []string{"Yes, allow once", "Always allow run 'echo *' commands in this project", "Always allow run 'echo *' commands for this user", "No, suggest changes (esc)"}},
	"qwen/question": {Kind: "question", Text: "Which color should the button be?",
		Options: []string{"Red", "Blue", "Type something..."}},
}

// dialogsKnown reports whether wantDialog holds the dialogs of agent.
func dialogsKnown(agent string) bool {
	for name := range wantDialog {
		if strings.HasPrefix(name, agent+"/") {
			return true
		}
	}
	return false
}

// Every recorded waiting screen of every agent reads as its dialog, at
// every size (a long option wrapped on a narrow screen keeps its first
// line); no idle or busy screen shows one.
func TestReadDialogCorpus(t *testing.T) {
	seen := map[string]bool{}
	for _, agent := range Names() {
		k, _ := Lookup(agent)
		for _, f := range screensOf(corpus, agent, "waiting") {
			base := filepath.Base(f)
			name := agent + "/" + base[:strings.LastIndexByte(base, '-')]
			want, ok := wantDialog[name]
			if !ok && dialogsKnown(agent) {
				t.Errorf("%s: no expected dialog for %s", f, name)
				continue
			}
			if !ok { // an agent this table does not know: its dialogs read as dialogs
				if d := k.ReadDialog(readScreen(t, f)); k.answer.option != nil && d.Kind == "" {
					t.Errorf("%s: a waiting screen reads as no dialog", f)
				}
				continue
			}
			seen[name] = true
			checkDialog(t, f, k.ReadDialog(readScreen(t, f)), want)
		}
		for _, state := range []string{"idle", "busy"} {
			files, _ := filepath.Glob(filepath.Join(corpus, agent, state, "*.txt"))
			for _, f := range files {
				if d := k.ReadDialog(readScreen(t, f)); d.Kind != "" && !(agent == "pi" && strings.Contains(f, "selector")) {
					t.Errorf("%s: a %s screen reads as a dialog: %+v", f, state, d)
				}
			}
		}
	}
	for name := range wantDialog {
		if !seen[name] {
			t.Errorf("no recorded screen %s", name)
		}
	}
}

// checkDialog compares the dialog read off screen f with want.
func checkDialog(t *testing.T, f string, got, want Dialog) {
	t.Helper()
	if got.Kind != want.Kind || got.Text != want.Text {
		t.Errorf("%s: %q %q; want %q %q", f, got.Kind, got.Text, want.Kind, want.Text)
	}
	if len(got.Options) != len(want.Options) {
		t.Errorf("%s: options %q; want %q", f, got.Options, want.Options)
		return
	}
	for i := range want.Options {
		// A narrow screen wraps a long option: its first line is kept.
		if !strings.HasPrefix(want.Options[i], got.Options[i]) || got.Options[i] == "" {
			t.Errorf("%s: option %d %q; want %q", f, i+1, got.Options[i], want.Options[i])
		}
	}
}

// A dialog's text is cut to DialogTextMax characters.
func TestReadDialogCutsText(t *testing.T) {
	k, _ := Lookup("codex")
	long := strings.Repeat("é", 500)
	lines := []string{"  Would you like to run the following command?", "", "  $ " + long, "", "› 1. Yes, proceed (y)", "  2. No (esc)", "", "  Press enter to confirm or esc to cancel"}
	d := k.ReadDialog(lines)
	if n := len([]rune(d.Text)); n != DialogTextMax || !strings.HasSuffix(d.Text, "…") {
		t.Errorf("text of %d characters %q; want %d ending in …", n, d.Text[:20], DialogTextMax)
	}
}

// An option is checked against the dialog's, and picked the way the
// dialog is drawn: opencode's permission prompt is a row (Right), its
// questions a list (Down).
func TestAnswerKeysFor(t *testing.T) {
	oc, _ := Lookup("opencode")
	perm := oc.ReadDialog(readScreen(t, filepath.Join(corpus, "opencode", "waiting", "permission-120x40.txt")))
	question := oc.ReadDialog(readScreen(t, filepath.Join(corpus, "opencode", "waiting", "question-120x40.txt")))
	for _, c := range []struct {
		d      Dialog
		action string
		want   []string
	}{
		{perm, "option:3", []string{"Right", "Right", "Enter"}},
		{perm, "approve", []string{"Enter"}},
		{question, "option:2", []string{"Down", "Enter"}},
	} {
		if got, err := oc.AnswerKeysFor(c.action, c.d); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("opencode %s of a %s: %q, %v; want %q", c.action, c.d.Kind, got, err, c.want)
		}
	}
	if _, err := oc.AnswerKeysFor("option:4", perm); err == nil || !strings.Contains(err.Error(), "the dialog has 3 options") {
		t.Errorf("option:4 of a 3-option dialog: %v", err)
	}
	cl, _ := Lookup("claude")
	q := cl.ReadDialog(readScreen(t, filepath.Join(corpus, "claude", "waiting", "question-120x40.txt")))
	if got, err := cl.AnswerKeysFor("option:2", q); err != nil || !slices.Equal(got, []string{"2"}) {
		t.Errorf("claude option:2: %q, %v", got, err)
	}
}
