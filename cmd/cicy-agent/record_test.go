package main

// The screen corpus (testdata/screens/<agent>/<state>/<situation>-<cols>x<rows>.txt)
// is recorded from the real CLI agents by
//
//	go test ./cmd/cicy-agent -run TestRecordScreens -timeout 30m -args -record
//
// (add -run 'TestRecordScreens/codex' for one agent, and -only with a
// comma-separated list of recordOrder's groups, e.g. -args -record -only
// overlays,ask-forms, to record only those; it overwrites the screens it
// records and no others; -record-to DIR saves them in DIR instead). Each agent runs in its own subtest, in
// parallel, with its own CICY_HOME, tmux server and fake model server
// (cicy/fakellm), and is driven through the situations below at 120×40,
// 80×24 and 200×50 (the overlays and question forms at 100×30, 60×20,
// 160×45 and 250×60); `cicy-agent screen` is saved at each moment. The label (the state folder) is the fake server's truth at the
// moment of the screenshot, read just before and just after it
// (fakellm.Server.Truth): a model request in flight, a retry the server
// asked for, or a tool call not yet answered by its result that runs by
// itself is busy; an unanswered call that needs a person (a question tool,
// or any tool in a pane that asks before running tools) is waiting;
// nothing outstanding is idle. The recorder states what it expects at each
// screenshot and fails, saving nothing, when the truth disagrees.
//
// For new CLI versions: update the CLIs (make clis), delete
// testdata/screens/*/ and re-run; then run TestScreenCorpus and mend the
// agent's layout parser or rules (supervisor/cliagent) until every screen
// is read right again.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/fakellm"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

var (
	record     = flag.Bool("record", false, "record the screen corpus from the real CLI agents")
	recordTo   = flag.String("record-to", "testdata/screens", "with -record: the folder the screens are saved in")
	recordOnly = flag.String("only", "", "with -record: record only these comma-separated groups of situations ("+strings.Join(recordOrder, ", ")+"); all when empty")
	recordOf   = flag.String("agents", "", "with -record: record only these comma-separated agents; all when empty")
)

func TestRecordScreens(t *testing.T) {
	if !*record {
		t.Skip("records the screen corpus; run with -record")
	}
	if !haveCLIs() {
		t.Fatal("the real CLI agents are not installed (make clis)")
	}
	for _, g := range strings.Split(*recordOnly, ",") {
		if _, ok := recordGroups[g]; !ok && *recordOnly != "" {
			t.Fatalf("-only: no group %q (choose among %v)", g, recordOrder)
		}
	}
	out, err := filepath.Abs(*recordTo)
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range cliagent.Names() {
		if *recordOf != "" && !slices.Contains(strings.Split(*recordOf, ","), agent) {
			continue
		}
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			recordAgent(t, agent, out)
		})
	}
}

// The sizes every situation is recorded at, the first one the panes
// start with.
var recordSizes = [][2]int{{120, 40}, {80, 24}, {200, 50}}

// overlaySizes are the sizes the overlays, menus and question dialogs of
// recordOverlays and recordAskForms are recorded at, the first one the
// one they are opened at.
var overlaySizes = [][2]int{{100, 30}, {60, 20}, {160, 45}, {250, 60}}

// recordGroups are the groups of situations, in the order they are
// recorded; -only picks some of them. Those before "permission" run in
// one pane; "permission" starts a pane that asks first.
var recordGroups = map[string]func(r *recorder, id string){
	"basics": recordBasics, "quotes": recordQuotes, "drafts": recordDrafts, "errors": recordErrors,
	"question": recordQuestion, "retry": recordRetry, "overlays": recordOverlays, "mentions": recordMentions, "busy-menus": recordBusyMenus, "ask-forms": recordAskForms,
	"pickers": recordPickers, "interrupts": recordInterrupts,
	"permission": func(r *recorder, _ string) { recordPermission(r) },
}

var recordOrder = []string{"basics", "quotes", "drafts", "errors", "question", "retry", "overlays", "mentions", "busy-menus", "ask-forms", "pickers", "interrupts", "permission"}

// recordWants reports whether -only selects group.
func recordWants(group string) bool {
	return *recordOnly == "" || slices.Contains(strings.Split(*recordOnly, ","), group)
}

// Words of the agents' busy footers and permission dialogs, quoted in
// answers and drafts, which must not decide a screen's state.
const (
	busyWords = `esc to interrupt · Working (12s • esc to interrupt) · esc interrupt · esc again to interrupt`
	permWords = `Do you want to proceed?\n❯ 1. Yes\n  2. No\n\n` +
		`Would you like to run the following command?\n› 1. Yes, proceed (y)\n  2. No, and tell Codex what to do differently (esc)\n\n` +
		`△ Permission required\n  Allow once   Allow always   Reject`
)

// questionTools are the tools by which a model asks the person a question.
var questionTools = []string{"AskUserQuestion", "question", "request_user_input", "ask_user_question", "ask_user"}

type recorder struct {
	t      *testing.T
	home   string
	env    []string
	agent  string
	out    string
	socket string
	srv    *fakellm.Server
	asks   bool            // the current pane asks before running a tool
	gone   map[string]bool // calls of killed panes or dismissed questions
}

func (r *recorder) run(args ...string) string {
	r.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), args...)
	cmd.Env = r.env
	b, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("cicy-agent %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return string(b)
}

// truth is the state the fake server's truth gives the pane now.
func (r *recorder) truth() (string, fakellm.Truth) {
	tr := r.srv.Truth()
	if tr.InFlight > 0 || tr.RetryAfter > 0 {
		return "busy", tr
	}
	state := "idle"
	for _, c := range tr.Calls {
		switch {
		case r.gone[c.ID]:
		case r.asks || slices.Contains(questionTools, c.Name):
			return "waiting", tr
		default:
			state = "busy"
		}
	}
	return state, tr
}

// forget makes the truth ignore the calls outstanding now: their pane is
// gone, or the person dismissed them.
func (r *recorder) forget() {
	for _, c := range r.srv.Truth().Calls {
		r.gone[c.ID] = true
	}
}

// waitTruth waits until the truth is want, then (unless busy, whose
// screens animate) until the screen holds still while it stays want.
func (r *recorder) waitTruth(id, want string, d time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		got, tr := r.truth()
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the truth never became %s (is %s: %+v):\n%s", want, got, tr, r.run("screen", id))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if want == "busy" {
		time.Sleep(1500 * time.Millisecond)
		return
	}
	prev, still := "", 0
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && still < 2; {
		time.Sleep(600 * time.Millisecond)
		s := r.run("screen", id)
		if got, _ := r.truth(); got != want {
			prev, still = "", 0
			continue
		}
		if s == prev {
			still++
		} else {
			prev, still = s, 0
		}
	}
}

// turns is how many model requests offering tools (the agent's turns,
// not its title or summary requests) the server has had.
func (r *recorder) turns() int {
	n := 0
	for _, q := range r.srv.Requests() {
		var body struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if q.Method == "POST" && !strings.Contains(q.Path, "count_tokens") && json.Unmarshal(q.Body, &body) == nil && len(body.Tools) > 0 {
			n++
		}
	}
	return n
}

// turn sends prompt and waits for the turn to reach the model.
func (r *recorder) turn(id, prompt string) {
	r.t.Helper()
	n := r.turns()
	r.run("send", id, prompt)
	deadline := time.Now().Add(60 * time.Second)
	for r.turns() == n {
		if time.Now().After(deadline) {
			r.t.Fatalf("%q never reached the model:\n%s", prompt, r.run("screen", id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// save writes the pane's screen as <want>/<name>.txt when the fake
// server's truth is want just before and just after the screenshot.
func (r *recorder) save(id, want, name string) {
	r.t.Helper()
	before, tr1 := r.truth()
	screen := r.run("screen", id)
	after, tr2 := r.truth()
	if before != want || after != want {
		r.t.Errorf("%s: expected %s, but the fake server's truth was %s (%+v) before the screenshot and %s (%+v) after; not saved:\n%s",
			name, want, before, tr1, after, tr2, screen)
		return
	}
	dir := filepath.Join(r.out, r.agent, want)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(screen), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *recorder) resize(id string, size [2]int) string {
	r.t.Helper()
	if b, err := exec.Command("tmux", "-L", r.socket, "resize-window", "-t", "="+id+":main", "-x", fmt.Sprint(size[0]), "-y", fmt.Sprint(size[1])).CombinedOutput(); err != nil {
		r.t.Fatalf("resize: %v %s", err, b)
	}
	time.Sleep(1500 * time.Millisecond) // let the agent redraw
	return fmt.Sprintf("%dx%d", size[0], size[1])
}

// atSizes saves the pane's screen as <situation>-<size> at every size of
// recordSizes, ending at the first size; before, if set, runs after each
// resize.
func (r *recorder) atSizes(id, want, situation string, before func()) {
	r.t.Helper()
	r.atTheseSizes(recordSizes, id, want, situation, before)
}

// atTheseSizes is atSizes at the given sizes.
func (r *recorder) atTheseSizes(sizes [][2]int, id, want, situation string, before func()) {
	r.t.Helper()
	for _, size := range sizes[1:] {
		tag := r.resize(id, size)
		if before != nil {
			before()
		}
		r.save(id, want, situation+"-"+tag)
	}
	tag := r.resize(id, sizes[0])
	if before != nil {
		before()
	}
	r.save(id, want, situation+"-"+tag)
}

// create starts a pane that asks before running tools or not, at the
// first size, and waits for it to be ready.
func (r *recorder) create(name string, asks bool) string {
	r.t.Helper()
	args := []string{"create", name, "--type", r.agent}
	if !asks {
		args = append(args, "--allow-all")
	}
	if r.agent != "claude" {
		args = append(args, "--model", "fake-model")
	}
	id := strings.TrimSpace(r.run(args...))
	r.asks = asks
	r.resize(id, recordSizes[0])
	deadline := time.Now().Add(3 * time.Minute) // opencode took over 90 s on a loaded machine
	for !strings.Contains(r.run("ls", "--json"), `"state": "idle"`) {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s never started:\n%s", id, r.run("screen", id))
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.waitTruth(id, "idle", 30*time.Second)
	return id
}

func (r *recorder) kill(id string) {
	r.forget()
	r.run("kill", id)
}

// offered is the first of names that the agent's last model request
// offered as a tool, or "".
func (r *recorder) offered(names ...string) string {
	reqs := r.srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		var body struct {
			Tools []struct {
				Name     string `json:"name"`
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
				// Gemini: a tool of function declarations.
				Decls []struct {
					Name string `json:"name"`
				} `json:"functionDeclarations"`
			} `json:"tools"`
		}
		if json.Unmarshal(reqs[i].Body, &body) != nil || len(body.Tools) == 0 {
			continue
		}
		var have []string
		for _, tl := range body.Tools {
			have = append(have, tl.Name+tl.Function.Name)
			for _, d := range tl.Decls {
				have = append(have, d.Name)
			}
		}
		for _, n := range names {
			if slices.Contains(have, n) {
				return n
			}
		}
		r.t.Logf("%s offers none of %v; it offers %v", r.agent, names, have)
		return ""
	}
	return ""
}

// typeDraft types text into the composer without sending it.
func (r *recorder) typeDraft(id, text string) {
	r.run("send", "--no-enter", id, text)
	time.Sleep(time.Second)
}

// clearDraft erases a draft of n characters.
func (r *recorder) clearDraft(id string, n int) {
	args := []string{"send", "--no-enter", id, ""}
	for range n + 5 {
		args = append(args, "--key", "BSpace")
	}
	r.run(args...)
	time.Sleep(time.Second)
}

func recordAgent(t *testing.T, agent, out string) {
	home := t.TempDir()
	srv, err := fakellm.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	r := &recorder{t: t, home: home, agent: agent, out: out, socket: pane.NewTmuxServer(home, nil).Socket, srv: srv, gone: map[string]bool{}}
	r.env = append(os.Environ(), "CICY_HOME="+home, "PATH="+cliDir+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=sk-ant-cicy-record-0123456789",
		"OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-cicy-record",
		"GOOGLE_GEMINI_BASE_URL="+srv.URL, "GEMINI_API_KEY=sk-cicy-record")
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "shutdown")
		cmd.Env = r.env
		_ = cmd.Run()
		_ = exec.Command("tmux", "-L", r.socket, "kill-server").Run()
	})
	id := ""
	for _, g := range recordOrder {
		if !recordWants(g) {
			continue
		}
		if g == "permission" && id != "" {
			r.kill(id)
			id = ""
		}
		if id == "" && g != "permission" {
			id = r.create("rec", false)
		}
		recordGroups[g](r, id)
		if g == "retry" { // the pane retries on and on
			r.kill(id)
			id = ""
		}
	}
	if id != "" {
		r.kill(id)
	}
}

// recordBasics: a fresh pane, a long model turn, its answer, a slow
// shell command and its answer, at each size.
func recordBasics(r *recorder, id string) {
	for _, size := range recordSizes {
		tag := r.resize(id, size)
		r.save(id, "idle", "fresh-"+tag)
		r.turn(id, "think about it [[delay=7]]")
		time.Sleep(2 * time.Second)
		r.save(id, "busy", "thinking-"+tag+"-a")
		time.Sleep(2500 * time.Millisecond)
		r.save(id, "busy", "thinking-"+tag+"-b")
		r.waitTruth(id, "idle", 60*time.Second)
		r.save(id, "idle", "answered-"+tag)
		// Not a command that starts with sleep: Qwen Code refuses those.
		r.turn(id, "run it [[shell=echo started && sleep 6 && echo slept]]")
		time.Sleep(3 * time.Second)
		r.save(id, "busy", "tool-"+tag)
		r.waitTruth(id, "idle", 60*time.Second)
		r.save(id, "idle", "after-tool-"+tag)
	}
}

// recordQuotes: answers quoting the busy footers and the permission
// dialogs; a busy turn under such an answer; a long session whose
// scrollback holds them.
func recordQuotes(r *recorder, id string) {
	r.turn(id, "quote the busy footers [[reply=The footers say:\n"+busyWords+"\nthat is all.]]")
	r.waitTruth(id, "idle", 60*time.Second)
	r.atSizes(id, "idle", "quoted-busy", nil)

	r.turn(id, "quote the permission dialogs [[reply=They ask:\n"+permWords+"]]")
	r.waitTruth(id, "idle", 60*time.Second)
	r.atSizes(id, "idle", "quoted-permission", nil)

	r.turn(id, "think again [[delay=14]]")
	r.waitTruth(id, "busy", 30*time.Second)
	r.atSizes(id, "busy", "busy-under-quote", nil)
	r.waitTruth(id, "idle", 60*time.Second)

	for i := 1; i <= 8; i++ {
		reply := fmt.Sprintf("turn %d done", i)
		switch i {
		case 3:
			reply = "They ask:\n" + permWords
		case 6:
			reply = "The footers say:\n" + busyWords
		}
		r.turn(id, fmt.Sprintf("turn %d [[reply=%s]]", i, reply))
		r.waitTruth(id, "idle", 60*time.Second)
	}
	r.atSizes(id, "idle", "eight-turns", nil)
}

// recordDrafts: drafts typed into the composer and not sent.
func recordDrafts(r *recorder, id string) {
	drafts := []struct{ name, text string }{
		{"draft", "please refactor the parser next"},
		{"draft-busy-words", "why does it say " + busyWords},
		{"draft-permission-words", "it asked Do you want to proceed? ❯ 1. Yes 2. No, then Allow once Allow always Reject"},
		{"draft-multiline", "first line of a long draft\nsecond line: esc to interrupt\nthird line: Do you want to proceed?\n❯ 1. Yes\n  2. No\nlast line"},
	}
	for _, d := range drafts {
		r.typeDraft(id, d.text)
		r.atSizes(id, "idle", d.name, nil)
		r.clearDraft(id, len([]rune(d.text)))
	}
}

// recordErrors: a turn that ended in an HTTP 400 from the model server.
func recordErrors(r *recorder, id string) {
	r.turn(id, "fail [[status=400]]")
	r.waitTruth(id, "idle", 60*time.Second)
	r.atSizes(id, "idle", "error-400", nil)
}

// recordQuestion: the model's multiple-choice question to the person,
// then the answered question.
func recordQuestion(r *recorder, id string) {
	if r.agent == "codex" {
		// Codex offers request_user_input, but answers it "unavailable in
		// Default mode" itself, without showing the question.
		return
	}
	name := r.offered(questionTools...)
	if name == "" {
		return
	}
	q := map[string]any{"question": "Which color should the button be?", "header": "Color",
		"options": []map[string]any{{"label": "Red", "description": "A warm color"}, {"label": "Blue", "description": "A cool color"}}}
	switch name {
	case "AskUserQuestion", "ask_user_question":
		q["multiSelect"] = false
	case "ask_user":
		q["type"], q["multiSelect"] = "choice", false
	case "request_user_input":
		q["id"] = "color"
	}
	args, _ := json.Marshal(map[string]any{"questions": []any{q}}) // maps of strings always marshal
	r.turn(id, fmt.Sprintf("ask me [[tool=%s %s]]", name, args))
	r.waitTruth(id, "waiting", 60*time.Second)
	r.atSizes(id, "waiting", "question", nil)
	r.run("send", "--no-enter", id, "", "--key", "Enter")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got, _ := r.truth(); got == "idle" {
			break
		}
		if time.Now().After(deadline) {
			r.t.Logf("%s: the question was not answered by Enter; dismissing it:\n%s", r.agent, r.run("screen", id))
			r.run("send", "--no-enter", id, "", "--key", "Escape")
			time.Sleep(2 * time.Second)
			r.forget()
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.waitTruth(id, "idle", 60*time.Second)
	r.atSizes(id, "idle", "question-answered", nil)
}

// recordRetry: the agent retrying after 503s (opencode also with Esc
// pressed once, in a long turn and while retrying).
func recordRetry(r *recorder, id string) {
	// One Esc press: opencode forgets a press after about 5 s, so the
	// presses before each size's screenshot are 6 s apart.
	esc := func() {
		time.Sleep(6 * time.Second)
		r.run("send", "--no-enter", id, "", "--key", "Escape")
		time.Sleep(500 * time.Millisecond)
	}
	if r.agent == "opencode" {
		r.turn(id, "think long [[delay=40]]")
		r.waitTruth(id, "busy", 30*time.Second)
		r.atSizes(id, "busy", "thinking-esc", esc)
		r.waitTruth(id, "idle", 60*time.Second)
	}
	r.turn(id, "fail and retry [[status=503]] [[retry=25]]")
	r.waitTruth(id, "busy", 30*time.Second)
	time.Sleep(2 * time.Second)
	r.atSizes(id, "busy", "retrying", nil)
	if r.agent == "opencode" {
		r.atSizes(id, "busy", "retrying-esc", esc)
	}
}

// recordPermission: a pane that asks first, showing its permission
// dialog.
func recordPermission(r *recorder) {
	id := r.create("ask", true)
	ask := "make it [[shell=echo x > asked.txt]]"
	if r.agent == "codex" {
		ask = `make it [[tool=exec_command {"cmd":"touch asked.txt","sandbox_permissions":"require_escalated","justification":"needs it"}]]`
	}
	r.turn(id, ask)
	r.waitTruth(id, "waiting", 60*time.Second)
	r.atSizes(id, "waiting", "permission", nil)
	r.kill(id) // opencode outlives the tmux server's SIGHUP
}

// Words of the agents' menus, overlays and question dialogs, quoted in an
// answer, which must not decide a screen's state.
const overlayWords = `/model         choose what model and reasoning effort to use\n` +
	`  Keyboard shortcuts  ·  Tab: Keyboard\n? / esc close\n` +
	`  Commands                                         esc\n` +
	`tab to add notes | enter to submit answer | esc to interrupt\n` +
	`⇆ tab  ↑↓ select  enter toggle  esc dismiss`

// recordOverlays: an answer quoting the overlays' and questions' words;
// then over it, at overlaySizes, the slash-command menu (/ typed at the
// idle prompt) and each agent's help: Claude Code's and Codex's shortcut
// overlay (? at the empty prompt), opencode's command palette (ctrl+p)
// and help dialog (/help).
func recordOverlays(r *recorder, id string) {
	r.resize(id, overlaySizes[0])
	r.turn(id, "quote the menus [[reply=They show:\n"+overlayWords+"]]")
	r.waitTruth(id, "idle", 60*time.Second)
	r.atTheseSizes(overlaySizes, id, "idle", "quoted-menus", nil)

	r.typeDraft(id, "/")
	r.atTheseSizes(overlaySizes, id, "idle", "slash-menu", nil)
	r.clearDraft(id, 1)

	switch r.agent {
	case "opencode":
		r.run("send", "--no-enter", id, "", "--key", "C-p")
		time.Sleep(time.Second)
		r.atTheseSizes(overlaySizes, id, "idle", "palette", nil)
		r.run("send", "--no-enter", id, "", "--key", "Escape")
		time.Sleep(time.Second)
		r.run("send", id, "/help")
		time.Sleep(time.Second)
		r.atTheseSizes(overlaySizes, id, "idle", "help", nil)
	default:
		r.typeDraft(id, "?")
		r.atTheseSizes(overlaySizes, id, "idle", "help", nil)
	}
	r.run("send", "--no-enter", id, "", "--key", "Escape")
	time.Sleep(time.Second)
	r.waitTruth(id, "idle", 30*time.Second)
}

// recordMentions: the file-mention popup (@ typed at the idle prompt),
// at overlaySizes, with a file in the workspace to mention.
func recordMentions(r *recorder, id string) {
	if err := os.WriteFile(filepath.Join(r.home, "workspaces", id, "main.go"), []byte("package main\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.resize(id, overlaySizes[0])
	r.typeDraft(id, "@")
	r.atTheseSizes(overlaySizes, id, "idle", "mention-menu", nil)
	r.clearDraft(id, 1)
	r.waitTruth(id, "idle", 30*time.Second)
}

// recordBusyMenus: the menus opened while the agent works, which leave
// it busy, at overlaySizes: the slash-command and mention popups and the
// help (Codex's ? overlay, opencode's palette). Not Claude Code's: its
// popups hide the spinner line, and its footer shows no interrupt hint
// then, so the screen cannot tell.
func recordBusyMenus(r *recorder, id string) {
	if r.agent == "claude" {
		return
	}
	if err := os.WriteFile(filepath.Join(r.home, "workspaces", id, "main.go"), []byte("package main\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.resize(id, overlaySizes[0])
	help, closeHelp := []string{"?"}, []string{"", "--key", "Escape"}
	if r.agent == "opencode" {
		help = []string{"", "--key", "C-p"}
	}
	for _, m := range []struct {
		name       string
		open, shut []string
	}{
		{"busy-slash-menu", []string{"/"}, []string{"", "--key", "BSpace"}},
		{"busy-mention-menu", []string{"@"}, []string{"", "--key", "BSpace"}},
		{"busy-help", help, closeHelp},
	} {
		r.turn(id, "think under a menu [[delay=30]]")
		r.waitTruth(id, "busy", 30*time.Second)
		r.run(append([]string{"send", "--no-enter", id}, m.open...)...)
		time.Sleep(time.Second)
		r.atTheseSizes(overlaySizes, id, "busy", m.name, nil)
		r.run(append([]string{"send", "--no-enter", id}, m.shut...)...)
		r.waitTruth(id, "idle", 60*time.Second)
	}
}

// recordAskForms: the question dialogs beyond recordQuestion's, at
// overlaySizes: Codex's plan-mode question (request_user_input, which
// Codex shows only in Plan mode, shift+tab from the default mode) and a
// multiple-choice question (Claude Code's AskUserQuestion with
// multiSelect, opencode's question with multiple).
func recordAskForms(r *recorder, id string) {
	r.resize(id, overlaySizes[0])
	q := map[string]any{"question": "Which colors should the buttons be?", "header": "Colors",
		"options": []map[string]any{{"label": "Red", "description": "A warm color"}, {"label": "Blue", "description": "A cool color"}}}
	situation, name := "multi-question", r.offered(questionTools...)
	switch name {
	case "AskUserQuestion":
		q["multiSelect"] = true
	case "ask_user":
		q["type"], q["multiSelect"] = "choice", true
	case "question":
		q["multiple"] = true
	case "request_user_input":
		situation, q["id"] = "plan-question", "colors"
		r.run("send", "--no-enter", id, "", "--key", "BTab") // to Plan mode
		time.Sleep(time.Second)
	default:
		return
	}
	args, _ := json.Marshal(map[string]any{"questions": []any{q}}) // maps of strings always marshal
	r.turn(id, fmt.Sprintf("ask me [[tool=%s %s]]", name, args))
	r.waitTruth(id, "waiting", 60*time.Second)
	r.atTheseSizes(overlaySizes, id, "waiting", situation, nil)
	r.run("send", "--no-enter", id, "", "--key", "Escape")
	time.Sleep(2 * time.Second)
	r.forget()
	if name == "request_user_input" {
		r.run("send", "--no-enter", id, "", "--key", "BTab") // back to the default mode
	}
	r.waitTruth(id, "idle", 60*time.Second)
}

// recordPickers: the pickers and panels a person opens with a slash
// command over the idle agent, at overlaySizes: each agent's model picker
// (/model; opencode's /models), Claude Code's help panel (/help), Codex's
// permissions picker (/permissions); then the screen once Escape closed
// each. None asks the model anything: the agent is idle throughout.
func recordPickers(r *recorder, id string) {
	r.resize(id, overlaySizes[0])
	pickers := []struct{ name, command string }{{"model-picker", "/model"}}
	switch r.agent {
	case "opencode":
		pickers[0].command = "/models"
	case "claude":
		pickers = append(pickers, struct{ name, command string }{"help-panel", "/help"})
	case "codex":
		pickers = append(pickers, struct{ name, command string }{"permissions-picker", "/permissions"})
	}
	for _, pk := range pickers {
		// Enter once the command's completion popup is up (opencode's
		// took an Enter sent with the text for the popup's own)
		r.run("send", "--no-enter", id, pk.command)
		time.Sleep(time.Second)
		r.run("send", "--no-enter", id, "", "--key", "Enter")
		time.Sleep(2 * time.Second)
		r.atTheseSizes(overlaySizes, id, "idle", pk.name, nil)
		r.run("send", "--no-enter", id, "", "--key", "Escape")
		time.Sleep(1500 * time.Millisecond)
		r.waitTruth(id, "idle", 30*time.Second)
		r.save(id, "idle", pk.name+"-closed-"+fmt.Sprintf("%dx%d", overlaySizes[0][0], overlaySizes[0][1]))
	}
}

// recordInterrupts: a long turn interrupted with Escape, and a turn whose
// retries of a 503 ran out, at overlaySizes: the agent is idle after each,
// and after Escape pressed then at its empty composer (Codex's footer
// then says "esc again to edit previous message"; pressed again, it
// browses the transcript).
func recordInterrupts(r *recorder, id string) {
	r.resize(id, overlaySizes[0])
	r.turn(id, "think long [[delay=60]]")
	r.waitTruth(id, "busy", 30*time.Second)
	time.Sleep(2 * time.Second)
	r.run("send", "--no-enter", id, "", "--key", "Escape")
	if r.agent == "opencode" { // it interrupts on a second press
		time.Sleep(300 * time.Millisecond)
		r.run("send", "--no-enter", id, "", "--key", "Escape")
	}
	r.waitTruth(id, "idle", 30*time.Second)
	r.atTheseSizes(overlaySizes, id, "idle", "interrupted", nil)
	if r.agent != "codex" {
		return // the others retry a 503 on and on (see recordRetry)
	}
	escape := func() {
		r.run("send", "--no-enter", id, "", "--key", "Escape")
		time.Sleep(time.Second)
	}
	// Escape at the empty composer: the footer offers to edit the previous
	// message; pressed again, the transcript is browsed; once more, back.
	escape()
	r.atTheseSizes(overlaySizes, id, "idle", "esc-again", nil)
	escape()
	r.atTheseSizes(overlaySizes, id, "idle", "browsing-transcript", nil)
	escape()
	r.turn(id, "fail for good [[status=503]]")
	// Retried until no request came for 10 s.
	for n, deadline := -1, time.Now().Add(3*time.Minute); n != len(r.srv.Requests()); {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s retries on and on:\n%s", r.agent, r.run("screen", id))
		}
		n = len(r.srv.Requests())
		time.Sleep(10 * time.Second)
	}
	r.waitTruth(id, "idle", 30*time.Second)
	r.atTheseSizes(overlaySizes, id, "idle", "retries-failed", nil)
	escape()
	r.atTheseSizes(overlaySizes[:1], id, "idle", "retries-failed-esc-again", nil)
	escape()
	escape()
}
