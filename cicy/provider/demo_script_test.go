package provider

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// The offline demo's rules (examples/demo.script.yaml) checked against
// requests shaped like the turn loop's, and their shell commands run for
// real on a copy of examples/demo-data.

const (
	demoScript = "../../examples/demo.script.yaml"
	demoData   = "../../examples/demo-data"
	demoGoal   = "Survey the demo data: count the lines of each text file, find the most common word in words.txt, and sum the numbers in numbers.csv. Dispatch the work and report."
)

func loadDemo(t *testing.T) *ScriptRules {
	t.Helper()
	s, err := LoadScript(demoScript)
	if err != nil {
		t.Fatalf("LoadScript: %v", err)
	}
	return s
}

func templateSystem(t *testing.T, slug string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "templates", slug, "system.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// demoReq is a main-turn request of pane with the template's system
// prompt and this history; the first user message gets a <role> block and
// the last one a <memories> block, as Assemble adds them.
func demoReq(t *testing.T, slug, pane string, hist ...wire.Message) *wire.Request {
	t.Helper()
	msgs := append([]wire.Message(nil), hist...)
	msgs[0].Content = append([]wire.Block{wire.Text("<role>\n# Role\nYou are " + pane + ".\n</role>")}, msgs[0].Content...)
	n := len(msgs) - 1
	msgs[n].Content = append(append([]wire.Block(nil), msgs[n].Content...), wire.Text("<memories>\n- [fact★3] demo: nothing\n</memories>"))
	return &wire.Request{
		Model: "script", MaxTokens: 1024, PaneID: pane, TurnID: "t1",
		System:   []wire.Block{wire.Text(templateSystem(t, slug)), wire.Text("Installed skills: none")},
		Messages: msgs,
	}
}

func user(text string) wire.Message {
	return wire.Message{Role: wire.RoleUser, Content: []wire.Block{wire.Text(text)}}
}

// afterTools is the history of a turn whose first answer was resp and
// whose tools returned results (in order).
func afterTools(first wire.Message, resp *wire.Response, results ...string) []wire.Message {
	var blocks []wire.Block
	for i, u := range (wire.Message{Content: resp.Content}).ToolUses() {
		blocks = append(blocks, wire.ToolResult(u.ID, results[i], false))
	}
	return []wire.Message{first, {Role: wire.RoleAssistant, Content: resp.Content}, {Role: wire.RoleUser, Content: blocks}}
}

func respond(t *testing.T, s *ScriptRules, req *wire.Request) *wire.Response {
	t.Helper()
	resp, err := s.Respond(req, nil)
	if err != nil {
		t.Fatalf("Respond: %v", err)
	}
	return resp
}

type call struct {
	Name  string
	Input map[string]string
}

func callsOf(t *testing.T, resp *wire.Response) []call {
	t.Helper()
	var out []call
	for _, u := range (wire.Message{Content: resp.Content}).ToolUses() {
		c := call{Name: u.Name}
		if err := json.Unmarshal(u.Input, &c.Input); err != nil {
			t.Fatalf("tool input %s: %v", u.Input, err)
		}
		out = append(out, c)
	}
	return out
}

// workdir is a copy of the demo data, where the commands run.
func workdir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	dir := t.TempDir()
	entries, err := os.ReadDir(demoData)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "report.md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(demoData, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs a command line as the shell tool does (bash, in the
// workspace) and returns its output.
func run(t *testing.T, dir, command string) string {
	t.Helper()
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", command)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("command %q: %v\n%s", command, err, out)
	}
	return string(out)
}

// sameData fails when a command changed a data file of the copy.
func sameData(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(demoData)
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "report.md" {
			continue
		}
		want, _ := os.ReadFile(filepath.Join(demoData, e.Name()))
		got, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s was changed by a demo command (err %v)", e.Name(), err)
		}
	}
}

func TestDemoScriptWholeFlow(t *testing.T) {
	s := loadDemo(t)
	dir := workdir(t)
	run(t, dir, "echo 'task 9 (old): done' > report.md") // a previous run's report

	// 1. lead gets the goal and dispatches three tasks.
	goal := user(demoGoal)
	resp := respond(t, s, demoReq(t, "coordinator", "w-1", goal))
	if resp.StopReason != "tool_use" {
		t.Fatalf("stop reason = %q", resp.StopReason)
	}
	calls := callsOf(t, resp)
	if len(calls) != 4 {
		t.Fatalf("goal answer calls = %+v, want 3 dispatches and a shell", calls)
	}
	tasks := map[string]string{}
	for i, want := range []string{"alice", "bob", "bash1"} {
		c := calls[i]
		if c.Name != "dispatch" || c.Input["worker"] != want || c.Input["task"] == "" {
			t.Fatalf("call %d = %+v, want a dispatch to %s", i, c, want)
		}
		tasks[want] = c.Input["task"]
	}
	if calls[3].Name != "shell" {
		t.Fatalf("last call = %+v, want shell", calls[3])
	}
	said := run(t, dir, calls[3].Input["command"])
	if _, err := os.Stat(filepath.Join(dir, "report.md")); !os.IsNotExist(err) {
		t.Fatalf("the goal did not start a fresh report.md (stat: %v)", err)
	}
	resp = respond(t, s, demoReq(t, "coordinator", "w-1", afterTools(goal, resp, "task 1", "task 2", "task 3", said)...))
	if got := textOf(resp); strings.TrimSpace(got) != "Dispatched 3 tasks; waiting for the results." || len(callsOf(t, resp)) != 0 {
		t.Fatalf("after dispatching lead says %q (calls %+v)", got, callsOf(t, resp))
	}
	if resp.StopReason != "end_turn" {
		t.Fatalf("stop reason = %q", resp.StopReason)
	}

	// 2. the engineers do their tasks; bash1 runs its task as typed.
	results := map[string]string{}
	for i, w := range []string{"alice", "bob"} {
		msg := user("📮 [w-1] task " + string(rune('1'+i)) + ": " + tasks[w])
		resp := respond(t, s, demoReq(t, "engineer", "w-"+string(rune('2'+i)), msg))
		calls := callsOf(t, resp)
		if len(calls) != 1 || calls[0].Name != "shell" || textOf(resp) != "" {
			t.Fatalf("%s answers %+v / %q, want one shell call", w, calls, textOf(resp))
		}
		out := run(t, dir, calls[0].Input["command"])
		resp = respond(t, s, demoReq(t, "engineer", "w-2", afterTools(msg, resp, out)...))
		results[w] = textOf(resp)
		if results[w] != "Result: "+out || len(callsOf(t, resp)) != 0 {
			t.Fatalf("%s's final answer = %q, want Result: %q", w, results[w], out)
		}
	}
	for _, want := range []string{"3 notes.txt", "4 poem.txt", "4 words.txt", "11 total"} {
		if !strings.Contains(results["alice"], want) {
			t.Errorf("alice's result %q lacks %q", results["alice"], want)
		}
	}
	if !strings.Contains(results["bob"], "most common word in words.txt: the (6 times)") {
		t.Errorf("bob's result = %q", results["bob"])
	}
	if got := run(t, dir, tasks["bash1"]); strings.TrimSpace(got) != "sum of numbers.csv: 50" {
		t.Errorf("bash1's task prints %q", got)
	}
	sameData(t, dir)

	// 3. the notifications: the first one alone, the other two queued
	// into one message.
	notes := []string{
		"🔔 [w-2] task 1 → done: " + results["alice"],
		"🔔 [w-3] task 2 → done: " + results["bob"] + "\n🔔 [w-4] task 3 → done",
	}
	wantSaid := []string{"Noted: 1 of 3 tasks done.", "All tasks are done. Final report written to report.md."}
	for i, text := range notes {
		msg := user(text)
		resp := respond(t, s, demoReq(t, "coordinator", "w-1", goal, wire.Message{Role: wire.RoleAssistant, Content: []wire.Block{wire.Text("Dispatched 3 tasks; waiting for the results.")}}, msg))
		calls := callsOf(t, resp)
		if len(calls) != 1 || calls[0].Name != "shell" {
			t.Fatalf("notification %d: lead answers %+v / %q, want one shell call", i, calls, textOf(resp))
		}
		if strings.Contains(calls[0].Input["command"], "{{") {
			t.Fatalf("placeholders left in %q", calls[0].Input["command"])
		}
		out := run(t, dir, calls[0].Input["command"])
		resp = respond(t, s, demoReq(t, "coordinator", "w-1", afterTools(msg, resp, out)...))
		got := textOf(resp)
		if !strings.HasPrefix(got, wantSaid[i]) || len(callsOf(t, resp)) != 0 {
			t.Fatalf("after notification %d lead says %q, want %q", i, got, wantSaid[i])
		}
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "task 1 (w-2): done\ntask 2 (w-3): done\ntask 3 (w-4): done\n"; string(report) != want {
		t.Fatalf("report.md = %q, want %q", report, want)
	}
	sameData(t, dir)
}

func TestDemoScriptNotificationCaptures(t *testing.T) {
	s := loadDemo(t)
	for _, tc := range []struct {
		text string
		want []string // in the command
	}{
		{"🔔 [alice] task 12 → done: Result: 3 notes.txt", []string{"add 'alice' '12' 'done'", "add '' '' ''"}},
		{"🔔 [w-3] task 7 → failed: the model call failed: HTTP 500", []string{"add 'w-3' '7' 'failed'"}},
		{"🔔 [w-2] task 1 → done: x\ny\n🔔 [w-3] task 2 → done: it's $(rm -rf /)\n🔔 [w-4] task 3 → done",
			[]string{"add 'w-2' '1' 'done'", "add 'w-3' '2' 'done'", "add 'w-4' '3' 'done'"}},
	} {
		resp := respond(t, s, demoReq(t, "coordinator", "w-1", user(tc.text)))
		calls := callsOf(t, resp)
		if len(calls) != 1 || calls[0].Name != "shell" {
			t.Fatalf("%q: calls = %+v", tc.text, calls)
		}
		cmd := calls[0].Input["command"]
		for _, w := range tc.want {
			if !strings.Contains(cmd, w) {
				t.Errorf("%q: command lacks %q:\n%s", tc.text, w, cmd)
			}
		}
		if strings.Contains(cmd, "rm -rf") || strings.Contains(cmd, "Result:") {
			t.Errorf("%q: free result text reached the command:\n%s", tc.text, cmd)
		}
	}
}

func TestDemoScriptAuxAndCatchAll(t *testing.T) {
	s := loadDemo(t)
	mem := demoReq(t, "engineer", "w-2", user("conversation to recognise"))
	mem.Aux, mem.TurnID = "memory", ""
	if got := textOf(respond(t, s, mem)); got != `{"memories":[]}` {
		t.Errorf("memory call answers %q", got)
	}
	comp := demoReq(t, "coordinator", "w-1", user("transcript"))
	comp.Aux, comp.System = "compact", []wire.Block{wire.Text("Summarise the conversation.")}
	if got := textOf(respond(t, s, comp)); !strings.Contains(got, "User goals") {
		t.Errorf("compact call answers %q", got)
	}
	for _, tc := range []struct{ slug, text, want string }{
		{"coordinator", "hello", "scripted demo coordinator"},
		{"engineer", "📮 [w-1] task 4: write a poem", "nothing was done for: 📮 [w-1] task 4: write a poem"},
		{"assistant", "hello", "scripted demo model"},
	} {
		resp := respond(t, s, demoReq(t, tc.slug, "w-9", user(tc.text)))
		if got := textOf(resp); !strings.Contains(got, tc.want) || len(callsOf(t, resp)) != 0 {
			t.Errorf("%s on %q answers %q, want a plain answer with %q", tc.slug, tc.text, got, tc.want)
		}
	}
	// A tool round of a pane the demo does not script still gets an answer.
	first := user("hello")
	resp := &wire.Response{Content: []wire.Block{{Type: wire.TypeToolUse, ID: "x", Name: "shell", Input: json.RawMessage(`{}`)}}}
	if got := textOf(respond(t, s, demoReq(t, "assistant", "w-9", afterTools(first, resp, "out")...))); got == "" {
		t.Error("no answer for an unscripted tool round")
	}
}
