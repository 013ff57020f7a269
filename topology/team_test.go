package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const goodTeam = `# a comment
name: my-team_2
budget_usd: 12.5
panes:
  - {title: lead, type: cicy, role: master, role_template: coordinator}
  - title: alice
    role_template: engineer
    workspace: work/alice
    provider: script
    model: m1
    budget_usd: $0.75
  - title: bash1
    type: shell
    command: [bash, --norc]
    env: [ANTHROPIC_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY]
    workspace: /srv/abs
  - title: cc
    type: claude
    workspace: ../up
    allow_all: true
    node: build-1.lan
goal: {to: lead, text: "  Do the thing.  "}
`

// TestParseTeamWorktree: the team's worktree key gives every worker a
// worktree unless its entry says no; a pane's own key holds for it.
func TestParseTeamWorktree(t *testing.T) {
	team, err := ParseTeam([]byte("name: w\nworktree: true\npanes:\n  - {title: lead, role: master}\n  - {title: a}\n  - {title: b, worktree: false}\n"), "/x")
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, p := range team.Panes {
		got = append(got, p.InWorktree())
	}
	if !reflect.DeepEqual(got, []bool{false, true, false}) {
		t.Fatalf("worktrees %v", got)
	}
	team, err = ParseTeam([]byte("name: w\npanes:\n  - {title: lead, role: master}\n  - {title: a, worktree: true}\n  - {title: b}\n"), "/x")
	if err != nil || !team.Panes[1].InWorktree() || team.Panes[2].InWorktree() {
		t.Fatalf("per pane: %+v %v", team, err)
	}
}

func TestParseTeamGood(t *testing.T) {
	team, err := ParseTeam([]byte(goodTeam), "/teams/here")
	if err != nil {
		t.Fatal(err)
	}
	want := &Team{
		Name:      "my-team_2",
		BudgetUSD: 12.5,
		Panes: []TeamPane{
			{Title: "lead", Type: "cicy", Role: "master", RoleTemplate: "coordinator", Line: 5},
			{Title: "alice", Type: "cicy", Role: "worker", RoleTemplate: "engineer", Workspace: "/teams/here/work/alice", Provider: "script", Model: "m1", Master: "lead", BudgetUSD: 0.75, Line: 6},
			{Title: "bash1", Type: "shell", Role: "worker", Command: []string{"bash", "--norc"}, Env: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}, Workspace: "/srv/abs", Master: "lead", Line: 12},
			{Title: "cc", Type: "claude", Role: "worker", Workspace: "/teams/up", Master: "lead", AllowAll: true, Node: "build-1.lan", Line: 17},
		},
		Goal: &TeamGoal{To: "lead", Text: "Do the thing.", Line: 22},
	}
	if !reflect.DeepEqual(team, want) {
		t.Fatalf("got  %+v\nwant %+v", team, want)
	}
	if p := team.Pane("bash1"); p == nil || p.Type != "shell" {
		t.Fatalf("Pane(bash1) = %+v", p)
	}
	if team.Pane("nobody") != nil {
		t.Fatal("Pane(nobody) found a pane")
	}
}

func TestParseTeamTwoMastersAndNoGoal(t *testing.T) {
	team, err := ParseTeam([]byte(`
name: two
panes:
  - {title: m1, role: master}
  - {title: m2, role: master}
  - {title: w1, master: m1}
  - {title: w2, master: m2}
goal:
`), "/x")
	if err != nil {
		t.Fatal(err)
	}
	if team.Goal != nil || team.Panes[2].Master != "m1" || team.Panes[3].Master != "m2" || team.Panes[0].Master != "" {
		t.Fatalf("team = %+v", team)
	}
	// No master at all: workers report to nobody.
	team, err = ParseTeam([]byte("name: solo\npanes: [{title: a}, {title: b}]\n"), "/x")
	if err != nil || team.Panes[0].Master != "" || team.Panes[1].Role != "worker" {
		t.Fatalf("team = %+v, err %v", team, err)
	}
}

func TestParseTeamErrors(t *testing.T) {
	const head = "name: demo\npanes:\n" // panes start on line 3
	for _, tc := range []struct {
		name, doc string
		line      int
		want      []string // each must appear in the message
	}{
		{"empty", "", 1, []string{"empty"}},
		{"comments only", "# nothing\n\n", 1, []string{"empty"}},
		{"syntax", head + "  - title: a\n  - title: b: c\n", 4, []string{"not valid YAML", "mapping values"}},
		{"bad indentation", head + "  - {title: a}\n  - title: b\n  type: c\n", 3, []string{"not valid YAML", "expected '-'", "at or below this line"}},
		{"unclosed flow", head + "  - {title: a}\n  - {title: a, type: [x}\n", 4, []string{"not valid YAML", "expected ','"}},
		{"unclosed top", "name: [\n", 2, []string{"not valid YAML"}},
		{"tab", "name: demo\n\tpanes: []\n", 2, []string{"not valid YAML", "tab"}},
		{"two documents", head + "  - {title: a}\n---\nname: b\n", 4, []string{"second YAML document"}},
		{"top level list", "- a\n", 1, []string{"top level", "mapping"}},
		{"sink without secret", "name: demo\nnotify:\n  - {name: phone, type: telegram, chat: '1'}\npanes: [{title: a}]\n", 3, []string{"sink phone has no secret: a telegram sink needs one"}},
		{"sink two secrets", "name: demo\nnotify:\n  - {name: ci, type: webhook, url: 'http://x', secret_file: a, secret_env: B}\npanes: [{title: a}]\n", 3, []string{"not both"}},
		{"sink unknown event", "name: demo\nnotify:\n  - {name: ci, type: ntfy, url: 'http://x', events: [lunch]}\npanes: [{title: a}]\n", 3, []string{`unknown event "lunch"`}},
		{"sink unknown type", "name: demo\nnotify:\n  - {name: ci, type: pager}\npanes: [{title: a}]\n", 3, []string{"type must be one of webhook, ntfy, slack, telegram, command"}},
		{"sink slack url", "name: demo\nnotify:\n  - {name: s, type: slack, url: 'https://h/x', secret_env: S}\npanes: [{title: a}]\n", 3, []string{"URL is its secret"}},
		{"sink unknown key", "name: demo\nnotify:\n  - {name: s, type: ntfy, url: 'http://x', token: abc}\npanes: [{title: a}]\n", 3, []string{`unknown key "token" in a sink`}},
		{"unknown top key", "name: demo\nteam: x\npanes: [{title: a}]\n", 2, []string{`unknown key "team"`, "known: name, panes, goal, budget_usd, worktree"}},
		{"team budget zero", "name: demo\nbudget_usd: 0\npanes: [{title: a}]\n", 2, []string{`the team's "budget_usd" must be more than $0 (leave it out for no budget)`}},
		{"team budget text", "name: demo\nbudget_usd: lots\npanes: [{title: a}]\n", 2, []string{`the team's "budget_usd" must be an amount of US dollars, like budget_usd: 2.50, not "lots"`}},
		{"team budget null", "name: demo\nbudget_usd:\npanes: [{title: a}]\n", 2, []string{`the team's "budget_usd" must be an amount of US dollars`, "not empty"}},
		{"pane budget negative", head + "  - {title: a, budget_usd: -1}\n", 3, []string{`"budget_usd" in pane "a" must be more than $0`}},
		{"pane budget list", head + "  - title: a\n    budget_usd: [1]\n", 4, []string{`"budget_usd" in pane "a" must be an amount of US dollars`, "not a list"}},
		{"pane budget huge", head + "  - {title: a, budget_usd: 5000000}\n", 3, []string{`"budget_usd" in pane "a" is more than $1000000`}},
		{"repeated key", "name: demo\nname: demo2\npanes: [{title: a}]\n", 2, []string{`"name"`, "twice", "line 1"}},
		{"no name", "panes: [{title: a}]\n", 1, []string{"name"}},
		{"empty name", "name: ''\npanes: [{title: a}]\n", 1, []string{`"name"`, "empty"}},
		{"bad name", "name: My Team\npanes: [{title: a}]\n", 1, []string{`"name"`, `"My Team"`, "lowercase"}},
		{"name is a list", "name: [a]\npanes: [{title: a}]\n", 1, []string{`"name"`, "text value"}},
		{"no panes", "name: demo\n", 1, []string{`"panes"`}},
		{"empty panes", "name: demo\npanes: []\n", 2, []string{`"panes"`, "at least one pane"}},
		{"null panes", "name: demo\npanes:\n", 2, []string{`"panes"`, "at least one pane"}},
		{"panes mapping", "name: demo\npanes: {title: a}\n", 2, []string{`"panes"`, "list"}},
		{"pane not mapping", head + "  - alice\n", 3, []string{"pane 1", "mapping"}},
		{"bidi title", head + "  - {title: a}\n  - {title: \"evil\u202Egnp\"}\n", 4, []string{`"title"`, "bidirectional control (U+202E)"}},
		{"title is an id", head + "  - {title: a}\n  - {title: w-1}\n", 4, []string{`"title"`, "pane id"}},
		{"unknown pane key", head + "  - {title: a}\n  - title: alice\n    rol: worker\n", 5,
			[]string{`unknown key "rol" in pane "alice"`, "known: title, type, role, role_template, command, workspace, provider, model, master, env, budget_usd, allow_all, node, worktree, restart)"}},
		{"bad node", head + "  - {title: a, node: two words}\n", 3, []string{`"node" "two words" in pane "a" is not a node name`}},
		{"bad restart", head + "  - {title: a, restart: sometimes}\n", 3, []string{`"restart" "sometimes" in pane "a" is not a restart policy (choose always, on-failure or never)`}},
		{"env with a value", head + "  - {title: a, type: shell, command: [sh], env: [FOO=bar]}\n", 3, []string{`entry 1 of "env" in pane "a"`, "without a value"}},
		{"env bad name", head + "  - {title: a, type: shell, command: [sh], env: [1X]}\n", 3, []string{`"1X"`, "not a variable name"}},
		{"env not a list", head + "  - {title: a, type: shell, command: [sh], env: FOO}\n", 3, []string{`"env"`, "list of variable names"}},
		{"env on cicy", head + "  - {title: a, env: [FOO]}\n", 3, []string{`"env" in pane "a" is not allowed`}},
		{"worktree not a bool", head + "  - {title: a, worktree: please}\n", 3, []string{`"worktree" in pane "a" must be true or false`}},
		{"team worktree not a bool", "name: demo\nworktree: [x]\npanes: [{title: a}]\n", 2, []string{`the team's "worktree" must be true or false, not a list`}},
		{"allow_all not a bool", head + "  - {title: a, type: codex, allow_all: yes please}\n", 3, []string{`"allow_all" in pane "a" must be true or false`}},
		{"allow_all on shell", head + "  - {title: a, type: shell, command: [sh], allow_all: true}\n", 3, []string{`"allow_all" in pane "a" is not allowed`, "a shell pane"}},
		{"allow_all on cicy", head + "  - {title: a, allow_all: true}\n", 3, []string{`"allow_all" in pane "a" is not allowed`, "a cicy pane"}},
		{"unknown pane key, no title", head + "  - rol: worker\n", 3, []string{`unknown key "rol" in pane 1`}},
		{"no title", head + "  - {title: a}\n  - type: cicy\n", 4, []string{"pane 2", `"title"`}},
		{"blank title", head + "  - title: '  '\n", 3, []string{"pane 1", `"title"`}},
		{"control char title", head + "  - title: \"a\\tb\"\n", 3, []string{`"title"`, "control character"}},
		{"long title", head + "  - title: " + strings.Repeat("x", 101) + "\n", 3, []string{`"title"`, "too long"}},
		{"duplicate title", head + "  - {title: a}\n  - {title: b}\n  - {title: a}\n", 5, []string{`"a"`, "lines 3 and 5", `"title"`}},
		{"bad type", head + "  - {title: a, type: bash}\n", 3, []string{`"type" "bash"`, `pane "a"`, "cicy, claude, codex, gemini, opencode, pi, qwen or shell"}},
		{"label role", head + "  - {title: a, role: reviewer}\n", 3, []string{`"role" "reviewer"`, "team panes are masters or workers"}},
		{"bad template", head + "  - {title: a, role_template: Eng}\n", 3, []string{`"role_template" "Eng"`}},
		{"shell without command", head + "  - {title: sh, type: shell}\n", 3, []string{`"command"`, "shell pane", `pane "sh"`}},
		{"shell with empty command", head + "  - title: sh\n    type: shell\n    command: []\n", 5, []string{`"command"`, "shell pane"}},
		{"command is a string", head + "  - title: sh\n    type: shell\n    command: bash\n", 5, []string{`"command"`, "list"}},
		{"command on cicy", head + "  - title: c\n    command: [bash]\n", 4, []string{`"command"`, "cicy pane"}},
		{"command argument list", head + "  - title: sh\n    type: shell\n    command: [bash, [x]]\n", 5, []string{"argument 2", `"command"`}},
		{"master on master", head + "  - title: m\n    role: master\n    master: x\n", 5, []string{`"master"`, "a master does not report"}},
		{"unknown master", head + "  - {title: m, role: master}\n  - {title: w, master: boss}\n", 4, []string{`"master" "boss"`, `worker "w"`, "master is m"}},
		{"master is a worker", head + "  - {title: m, role: master}\n  - {title: v}\n  - {title: w, master: v}\n", 5, []string{`"master" "v"`, "role is worker"}},
		{"two masters, unlinked worker", head + "  - {title: m1, role: master}\n  - {title: m2, role: master}\n  - {title: w}\n", 5, []string{`worker "w"`, `"master"`, "m1, m2"}},
		{"model control char", head + "  - {title: a, model: \"x\\ny\"}\n", 3, []string{`"model"`, "control character"}},
		{"goal not mapping", head + "  - {title: m, role: master}\ngoal: do it\n", 4, []string{`"goal"`, "mapping"}},
		{"unknown goal key", head + "  - {title: m, role: master}\ngoal:\n  to: m\n  txt: hi\n", 6, []string{`unknown key "txt" in the goal`, "known: to, text"}},
		{"goal without to", head + "  - {title: m, role: master}\ngoal: {text: hi}\n", 4, []string{`"to"`, "to: m"}},
		{"goal to unknown", head + "  - {title: m, role: master}\ngoal:\n  to: boss\n  text: hi\n", 5, []string{`"to" "boss"`, "not a pane"}},
		{"goal to worker", head + "  - {title: m, role: master}\n  - {title: w}\ngoal:\n  text: hi\n  to: w\n", 7, []string{`"to" "w"`, "worker", "goes to a master"}},
		{"goal without text", head + "  - {title: m, role: master}\ngoal:\n  to: m\n  text: '   '\n", 6, []string{`"text"`}},
		{"goal text list", head + "  - {title: m, role: master}\ngoal:\n  to: m\n  text: [a]\n", 6, []string{`"text"`, "text value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTeam([]byte(tc.doc), "/x")
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.doc)
			}
			var te *TeamError
			if !errors.As(err, &te) {
				t.Fatalf("error %T %v is not a *TeamError", err, err)
			}
			msg := err.Error()
			if te.Line != tc.line || !strings.HasPrefix(msg, fmt.Sprintf("team file line %d: ", tc.line)) {
				t.Errorf("error %q: line %d, want %d", msg, te.Line, tc.line)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is more than one line", msg)
			}
		})
	}
}

func TestLoadTeam(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "team.yaml")
	doc := "name: t\npanes:\n  - {title: lead, role: master, workspace: ws}\n  - title: alice\n    rol: worker\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadTeam(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+" line 5: unknown key \"rol\" in pane \"alice\"") {
		t.Fatalf("err = %v", err)
	}

	doc = "name: t\npanes:\n  - {title: lead, role: master, workspace: ws}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	team, err := LoadTeam(path)
	if err != nil {
		t.Fatal(err)
	}
	if team.Path != path || team.Panes[0].Workspace != filepath.Join(dir, "ws") {
		t.Fatalf("team = %+v", team)
	}

	if _, err := LoadTeam(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml cannot be read") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := LoadTeam(dir); err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Fatalf("folder: %v", err)
	}
}

// The offline demo's team file (examples/demo.yaml) is valid, and its
// workspace holds the data the scripted workers read.
func TestDemoTeamFile(t *testing.T) {
	team, err := LoadTeam("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	if team.Name != "demo" || len(team.Panes) != 4 {
		t.Fatalf("team = %+v", team)
	}
	// Each cicy pane has its own workspace; the shell worker works in the data.
	want := []struct{ title, typ, role, tmpl, ws string }{
		{"lead", "cicy", "master", "coordinator", "work/lead"},
		{"alice", "cicy", "worker", "engineer", "work/alice"},
		{"bob", "cicy", "worker", "engineer", "work/bob"},
		{"bash1", "shell", "worker", "", "demo-data"},
	}
	for i, w := range want {
		p := team.Panes[i]
		if p.Title != w.title || p.Type != w.typ || p.Role != w.role || p.RoleTemplate != w.tmpl || p.Workspace != filepath.Join(dir, w.ws) {
			t.Errorf("pane %d = %+v, want %+v in %s", i, p, w, dir)
		}
		if w.role == "worker" && p.Master != "lead" {
			t.Errorf("pane %s reports to %q", p.Title, p.Master)
		}
	}
	if c := team.Panes[3].Command; len(c) == 0 || c[0] != "bash" {
		t.Errorf("bash1 command = %q", c)
	}
	if team.Goal == nil || team.Goal.To != "lead" || !strings.HasPrefix(team.Goal.Text, "Survey the demo data") {
		t.Fatalf("goal = %+v", team.Goal)
	}
	for _, f := range []string{"poem.txt", "notes.txt", "words.txt", "numbers.csv"} {
		if _, err := os.Stat(filepath.Join(dir, "demo-data", f)); err != nil {
			t.Errorf("demo data: %v", err)
		}
	}
}

// The offline mixed team's file (examples/mixed.yaml) is valid: a cicy
// coordinator in repo/ (the copy of demo-repo/ make demo-mixed makes), the
// CLI agents on the scripted model without permission prompts and a
// cicy engineer, every worker in a git worktree of the coordinator's
// repository; the project is there with its test command.
func TestMixedTeamFile(t *testing.T) {
	team, err := LoadTeam("../examples/mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if team.Name != "mixed" || len(team.Panes) != 8 {
		t.Fatalf("team = %+v", team)
	}
	want := []struct{ title, typ, role string }{
		{"lead", "cicy", "master"}, {"claude1", "claude", "worker"}, {"codex1", "codex", "worker"},
		{"opencode1", "opencode", "worker"}, {"cicy1", "cicy", "worker"}, {"qwen1", "qwen", "worker"},
		{"pi1", "pi", "worker"}, {"gemini1", "gemini", "worker"},
	}
	for i, w := range want {
		checkMixedPane(t, team.Panes[i], w.title, w.typ, w.role)
	}
	if ws := team.Panes[0].Workspace; filepath.Base(ws) != "repo" {
		t.Errorf("lead's workspace %q, want repo/ next to the file", ws)
	}
	if team.Goal == nil || team.Goal.To != "lead" || !strings.HasPrefix(team.Goal.Text, "Improve tally with the mixed team") {
		t.Fatalf("goal = %+v", team.Goal)
	}
	for _, f := range []string{"Makefile", "tally", "test.sh", "tests/sum.sh"} {
		if _, err := os.Stat(filepath.Join("..", "examples", "demo-repo", f)); err != nil {
			t.Errorf("demo repo: %v", err)
		}
	}
}

func checkMixedPane(t *testing.T, p TeamPane, title, typ, role string) {
	t.Helper()
	if p.Title != title || p.Type != typ || p.Role != role {
		t.Errorf("pane %+v, want %s %s %s", p, title, typ, role)
	}
	if p.InWorktree() != (role == RoleWorker) || (role == RoleWorker && p.Workspace != "") {
		t.Errorf("pane %s: worktree %v, workspace %q", p.Title, p.InWorktree(), p.Workspace)
	}
	cli := typ != "cicy"
	if cli && (!p.AllowAll || p.Model != "script") {
		t.Errorf("CLI pane %s: allow_all %v, model %q", p.Title, p.AllowAll, p.Model)
	}
}

// TestParseTeamRestart: a pane's restart policy is read as written; left
// out, it is the default ("").
func TestParseTeamRestart(t *testing.T) {
	team, err := ParseTeam([]byte("name: r\npanes:\n  - {title: a, restart: on-failure}\n  - {title: b}\n"), "/x")
	if err != nil {
		t.Fatal(err)
	}
	if team.Panes[0].Restart != RestartOnFailure || team.Panes[1].Restart != "" {
		t.Errorf("restart policies %q, %q; want on-failure and the default", team.Panes[0].Restart, team.Panes[1].Restart)
	}
}

// A team file's sinks: their secrets named (a file relative to the team
// file), their events.
func TestParseTeamNotify(t *testing.T) {
	doc := "name: demo\nnotify:\n  - name: phone\n    type: telegram\n    chat: '42'\n    secret_env: TG_TOKEN\n    events: [needs-you, goal-done]\n" +
		"  - {name: ci, type: webhook, url: 'http://127.0.0.1:9/x', secret_file: hook.secret, events: 'needs-you:approval,task-failed'}\npanes: [{title: a}]\n"
	team, err := ParseTeam([]byte(doc), "/teams")
	if err != nil {
		t.Fatal(err)
	}
	if len(team.Notify) != 2 {
		t.Fatalf("sinks = %+v", team.Notify)
	}
	tg, ci := team.Notify[0], team.Notify[1]
	if tg.Name != "phone" || tg.Type != "telegram" || tg.Chat != "42" || tg.SecretEnv != "TG_TOKEN" || len(tg.Events) != 2 || tg.Line != 3 {
		t.Errorf("phone = %+v", tg)
	}
	if ci.SecretFile != "/teams/hook.secret" || len(ci.Events) != 2 || ci.Events[0] != "needs-you:approval" {
		t.Errorf("ci = %+v", ci)
	}
}
