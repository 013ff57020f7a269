package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/fakellm"
)

// mcpWorkerRules script the cicy workers: a task "gated FILE" runs a
// shell command that ends once FILE exists, waiting up to 10 minutes (the
// gates open once every master has got that far: past the shell tool's
// default 2 minutes for the first master's worker under two CPU burners).
// (A shell worker's task ends with its command, silent while it waits.)
const mcpWorkerRules = `rules:
  - match: {tool_result: true}
    reply: {text: 'cicy worker: {{tool_result}}'}
  - match: {last_user: 'gated (\S+)'}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'while [ ! -e {{1}} ]; do sleep 0.1; done; echo cicy-ok', timeout: 600}
  - match: {aux: '*'}
    reply: {text: ok}
`

// mcpMaster is a CLI master of TestCLIMastersLeadThroughMCP, with its
// two workers.
type mcpMaster struct {
	agent string
	args  []string // more create arguments
	path  string   // the API path its model requests take
	// tool is a team tool's name as the fake model calls it.
	tool             func(string) string
	id, cicyW, shell string
	gate             string // the file that lets its workers' tasks end
	// refusal is what its screen shows of a refused team tool call, when
	// not the refusal's words: Gemini CLI hands the model the error under
	// a preamble ("MCP tool 'dispatch' reported tool error …"), which is
	// all of it the fake model quotes back.
	refusal string
}

// sent reports whether the master's model request is r: its API's path,
// from its pane (the gateway names the pane to the upstream; opencode and
// Qwen Code share a path).
func (m *mcpMaster) sent(r fakellm.Request) bool {
	return strings.HasPrefix(r.Path, m.path) && r.Header.Get("X-Cicy-Pane") == m.id
}

// The real Claude Code, Codex, opencode and Qwen Code as masters, not --allow-all,
// each with a cicy worker and a shell worker, lead through the cicy MCP
// server their seeded configs run: dispatch to both workers, workers,
// wait (the tasks end only while the wait is running, so its answer is
// how the master learns of them: no 🔔 line follows), a dispatch it does
// not wait for (told once, by a 🔔 line), and a refused dispatch (to
// another master), which comes back as a tool error. No call asks for
// permission.
func TestCLIMastersLeadThroughMCP(t *testing.T) {
	t.Parallel()
	if !haveCLIs() {
		t.Skip("the real CLI agents are not installed (make clis)")
	}
	fake, err := fakellm.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	dir := t.TempDir()
	home, rules := filepath.Join(dir, "home"), filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(mcpWorkerRules), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CICY_") }),
		"CICY_HOME="+home, "CICY_SCRIPT="+rules,
		"PATH="+cliDir+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+fake.URL, "ANTHROPIC_API_KEY=sk-ant-mcp-test-0123456789",
		"OPENAI_BASE_URL="+fake.URL+"/v1", "OPENAI_API_KEY=sk-mcp-test-0123456789",
		"GOOGLE_GEMINI_BASE_URL="+fake.URL, "GEMINI_API_KEY=sk-mcp-test-0123456789")
	serveHome(t, env, home)

	mcpName := func(tool string) string { return "mcp__cicy__" + tool } // Codex: namespace mcp__cicy, tool <tool>
	masters := []*mcpMaster{
		{agent: "claude", path: "/v1/messages", tool: mcpName},
		{agent: "codex", args: []string{"--model", "fake-model"}, path: "/v1/responses", tool: mcpName},
		{agent: "opencode", args: []string{"--model", "fake-model"}, path: "/v1/chat/completions", tool: func(tool string) string { return "cicy_" + tool }},
		{agent: "qwen", args: []string{"--model", "fake-model"}, path: "/v1/chat/completions", tool: mcpName},
		{agent: "gemini", args: []string{"--model", "fake-model"}, path: "/v1beta/models/", tool: func(tool string) string { return "mcp_cicy_" + tool },
			refusal: "reported tool error"},
	}
	for _, m := range masters {
		m.gate = filepath.Join(dir, m.agent+".gate")
		m.id = strings.TrimSpace(runCicy(t, env, append([]string{"create", m.agent + "-lead", "--type", m.agent, "--role", "master", "--backend", "pty"}, m.args...)...))
		m.cicyW = strings.TrimSpace(runCicy(t, env, "create", m.agent+"-cw", "--provider", "script", "--master", m.id))
		// The master's workspace is a repository; its shell worker works
		// in a worktree of it.
		gitRepoAt(t, filepath.Join(home, "workspaces", m.id))
		m.shell = strings.TrimSpace(runCicy(t, env, "create", m.agent+"-sh", "--type", "shell", "--backend", "pty", "--master", m.id, "--worktree", "--", "bash", "--norc", "--noprofile"))
	}
	for _, m := range masters {
		waitPaneState(t, env, m.id, "idle", 180*time.Second)
	}
	lead := mcpLead{t: t, env: env, fake: fake, masters: masters}

	// dispatch, to each worker (the cicy worker by its title).
	first := lead.dispatch(func(m *mcpMaster) string { return m.agent + "-cw" },
		func(m *mcpMaster) string { return "gated " + m.gate })
	second := lead.dispatch(func(m *mcpMaster) string { return m.shell },
		func(m *mcpMaster) string {
			return "while [ ! -e " + m.gate + " ]; do sleep 0.2; done; echo shell-ok-" + m.agent
		})

	// workers: this master's two, nobody else's.
	lead.step(func(m *mcpMaster) string { return m.call("workers", `{}`) },
		func(m *mcpMaster) string {
			return m.cicyW + `\W+` + m.agent + `-cw\W+cicy .*` + m.shell + `\W+` + m.agent + `-sh\W+shell`
		})

	// wait: the tasks end while it runs.
	since := len(fake.Requests())
	for _, m := range masters {
		runCicy(t, env, "send", m.id, "wait for them "+m.call("wait", fmt.Sprintf(`{"task_ids": [%s, %s], "timeout": 300}`, first[m], second[m])))
	}
	lead.openGates(home, first, second)
	// The cicy worker's shell tool runs bash -lc: what the machine's login
	// profile prints (a pyenv rehash racing another shell's, here) comes
	// before the command's own output.
	lead.await(since, func(m *mcpMaster) string {
		return `task ` + first[m] + ` → ` + m.cicyW + `: done: cicy worker: [^"]*cicy-ok[^"]*task ` + second[m] + ` → ` + m.shell + `: done: [^"]*shell-ok-` + m.agent
	})
	lead.notified(first, second)

	// A dispatch it does not wait for: a 🔔 line tells it, once.
	quick := lead.dispatch(func(m *mcpMaster) string { return m.shell }, func(m *mcpMaster) string { return "echo quick-" + m.agent + " | tee quick.txt" })
	lead.await(0, func(m *mcpMaster) string {
		return `🔔 \[` + m.shell + `\] task ` + quick[m] + ` → done · 1 file \+1 −0 on cicy/\w+/` + m.shell
	})
	lead.notified(quick)

	// diff and merge: the worker's commit, into the master's checkout.
	lead.step(func(m *mcpMaster) string { return m.call("diff", `{"target": "`+quick[m]+`"}`) },
		func(m *mcpMaster) string {
			return `1 file \+1 −0 on cicy/\w+/` + m.shell + ` in 1 commits[^"]*\+quick-` + m.agent
		})
	lead.step(func(m *mcpMaster) string { return m.call("merge", `{"target": "`+quick[m]+`"}`) },
		func(m *mcpMaster) string {
			return `merged cicy/\w+/` + m.shell + ` into main \(fast-forward to [0-9a-f]{10}\)`
		})
	for _, m := range masters {
		if b, err := os.ReadFile(filepath.Join(home, "workspaces", m.id, "quick.txt")); err != nil || string(b) != "quick-"+m.agent+"\n" {
			t.Errorf("%s's checkout after the merge: %q %v", m.agent, b, err)
		}
	}

	// A refused dispatch is a tool error.
	lead.step(func(m *mcpMaster) string {
		return m.call("dispatch", `{"worker": "`+lead.other(m).id+`", "task": "x"}`)
	}, func(m *mcpMaster) string { return `error: ` + lead.other(m).id + ` is a master; tasks go to workers` })
	lead.refusalShown()
	lead.toldOnce(first, second, quick)
	checkOffered(t, fake.Requests())
}

// serveHome starts the home's supervisor. (A shell worker's gated task
// ends with its command, not after a quiet time: a pause of a loaded
// machine does not end it.)
func serveHome(t *testing.T, env []string, home string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "serve")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopHome(home, env)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(runCicy(t, env, "version", "--json"), `"supervisor"`); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the supervisor did not start within 60 s")
		}
	}
}

// call is the message that makes the fake model call the team tool with
// input.
func (m *mcpMaster) call(tool, input string) string {
	return "[[tool=" + m.tool(tool) + " " + input + "]]"
}

// mcpLead drives the masters of TestCLIMastersLeadThroughMCP together.
type mcpLead struct {
	t       *testing.T
	env     []string
	fake    *fakellm.Server
	masters []*mcpMaster
}

// other is a master that is not m.
func (l mcpLead) other(m *mcpMaster) *mcpMaster {
	return l.masters[(slices.Index(l.masters, m)+1)%len(l.masters)]
}

// step sends each master the message msg makes and waits until its model
// has been sent what want matches (a regexp on the request body).
func (l mcpLead) step(msg func(*mcpMaster) string, want func(*mcpMaster) string) {
	l.t.Helper()
	since := len(l.fake.Requests())
	for _, m := range l.masters {
		waitPaneState(l.t, l.env, m.id, "idle", 120*time.Second)
		runCicy(l.t, l.env, "send", m.id, "lead "+msg(m))
	}
	l.await(since, want)
}

// await waits until each master's model has been sent, in a request
// after the first since, what want matches, failing if a master goes
// waiting (a permission prompt) meanwhile.
func (l mcpLead) await(since int, want func(*mcpMaster) string) {
	l.t.Helper()
	deadline := time.Now().Add(180 * time.Second)
	for {
		l.noPrompt()
		var missing []string
		for _, m := range l.masters {
			re := regexp.MustCompile(want(m))
			reqs := l.fake.Requests()
			i := len(reqs) - 1
			for i >= since && (!m.sent(reqs[i]) || !re.Match(reqs[i].Body)) {
				i--
			}
			if i < since {
				missing = append(missing, m.agent)
				continue
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			l.dump()
			l.t.Fatalf("%v never sent their model what matches %q", missing, want(l.masters[0]))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dump logs each master's screen and the end of its last model request,
// and the tasks.
func (l mcpLead) dump() {
	l.t.Helper()
	reqs := l.fake.Requests()
	for _, m := range l.masters {
		var last []byte
		for _, r := range reqs {
			if m.sent(r) {
				last = r.Body
			}
		}
		l.t.Logf("%s (%s):\n%s\nits last model request ends: %s", m.id, m.agent, runCicy(l.t, l.env, "screen", m.id), last[max(0, len(last)-1500):])
		if i := bytes.LastIndex(last, []byte("] task")); i >= 0 {
			l.t.Logf("%s's last bell: %q", m.agent, last[max(0, i-200):min(len(last), i+200)])
		}
		l.t.Logf("%s (%s's shell worker):\n%s", m.shell, m.agent, runCicy(l.t, l.env, "screen", m.shell))
	}
	l.t.Logf("tasks:\n%s", runCicy(l.t, l.env, "tasks"))
}

// dispatch has each master call dispatch for the worker it names (an id
// or title) with the task text task makes, and returns each one's task
// id once its model has been sent the tool's answer for that very task.
func (l mcpLead) dispatch(worker, task func(*mcpMaster) string) map[*mcpMaster]string {
	l.t.Helper()
	since := len(l.fake.Requests())
	for _, m := range l.masters {
		in, _ := json.Marshal(map[string]string{"worker": worker(m), "task": task(m)})
		waitPaneState(l.t, l.env, m.id, "idle", 120*time.Second)
		runCicy(l.t, l.env, "send", m.id, "lead "+m.call("dispatch", string(in)))
	}
	ids := map[*mcpMaster]string{}
	deadline := time.Now().Add(180 * time.Second)
	for len(ids) < len(l.masters) {
		var tasks []api.TaskInfo
		if err := json.Unmarshal([]byte(runCicy(l.t, l.env, "tasks", "--json")), &tasks); err != nil {
			l.t.Fatal(err)
		}
		for _, m := range l.masters {
			if i := slices.IndexFunc(tasks, func(ti api.TaskInfo) bool { return ti.From == m.id && ti.Text == task(m) }); i >= 0 {
				ids[m] = fmt.Sprint(tasks[i].ID)
			}
		}
		l.noPrompt()
		if time.Now().After(deadline) {
			l.dump()
			l.t.Fatalf("not every master dispatched; the tasks: %v", ids)
		}
		time.Sleep(200 * time.Millisecond)
	}
	l.await(since, func(m *mcpMaster) string { return `task ` + ids[m] + ` queued for ` })
	return ids
}

// noPrompt fails if a pane waits for a person.
func (l mcpLead) noPrompt() {
	l.t.Helper()
	var ps []api.PaneInfo
	if err := json.Unmarshal([]byte(runCicy(l.t, l.env, "ls", "--json")), &ps); err != nil {
		l.t.Fatal(err)
	}
	for _, p := range ps {
		if p.State == "waiting" {
			l.t.Fatalf("%s (%s) waits for a person (%s):\n%s", p.ID, p.Type, p.Reason, runCicy(l.t, l.env, "screen", p.ID))
		}
	}
}

// openGates lets each master's workers end their tasks once its wait
// for first and second has reached the supervisor, which logs it (from
// then on no 🔔 line for them can reach the master before the wait
// answers).
func (l mcpLead) openGates(home string, first, second map[*mcpMaster]string) {
	l.t.Helper()
	calling := func(m *mcpMaster) bool {
		b, _ := os.ReadFile(filepath.Join(home, "logs", "supervisor.log"))
		re := regexp.MustCompile(`(?m)^.*msg="A master waits for its tasks".* pane=` + m.id + ` .*tasks="\[` + first[m] + ` ` + second[m] + `\]"`)
		return re.Match(b)
	}
	shut := slices.Clone(l.masters)
	for deadline := time.Now().Add(180 * time.Second); len(shut) > 0; time.Sleep(100 * time.Millisecond) {
		for _, m := range slices.DeleteFunc(slices.Clone(shut), func(m *mcpMaster) bool { return !calling(m) }) {
			if err := os.WriteFile(m.gate, nil, 0o644); err != nil {
				l.t.Fatal(err)
			}
			shut = slices.DeleteFunc(shut, func(o *mcpMaster) bool { return o == m })
		}
		l.noPrompt()
		if time.Now().After(deadline) {
			l.dump()
			l.t.Fatalf("not every master's wait reached the supervisor; calls in flight: %+v", l.fake.Truth().Calls)
		}
	}
}

// notified checks the tasks are done and recorded as told to their master.
func (l mcpLead) notified(tasks ...map[*mcpMaster]string) {
	l.t.Helper()
	for _, ids := range tasks {
		for m, id := range ids {
			var ti api.TaskInfo
			deadline := time.Now().Add(60 * time.Second)
			for {
				if err := json.Unmarshal([]byte(runCicy(l.t, l.env, "tasks", "show", id, "--json")), &ti); err != nil {
					l.t.Fatal(err)
				}
				if ti.NotifiedAt != nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if ti.Status != api.TaskDone || ti.From != m.id || ti.NotifiedAt == nil {
				l.t.Errorf("%s's task %s: %s from %s, notified at %v; want done from %s, notified", m.agent, id, ti.Status, ti.From, ti.NotifiedAt, m.id)
			}
		}
	}
}

// refusalShown checks each master's model got the refusal as a tool error
// (Claude Code marks it is_error; Codex and opencode pass the server's
// text on) and its screen shows it.
func (l mcpLead) refusalShown() {
	l.t.Helper()
	for _, m := range l.masters {
		if m.agent == "claude" && !slices.ContainsFunc(l.fake.Requests(), func(r fakellm.Request) bool {
			return bytes.Contains(r.Body, []byte(`"is_error":true`)) && bytes.Contains(r.Body, []byte("is a master; tasks go to workers"))
		}) {
			l.t.Errorf("claude: the refusal did not reach the model as a tool error")
		}
		shown := "is a master"
		if m.refusal != "" {
			shown = m.refusal
		}
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(runCicy(l.t, l.env, "screen", m.id), shown) {
			if time.Now().After(deadline) {
				l.t.Errorf("%s's screen does not show the refusal:\n%s", m.agent, runCicy(l.t, l.env, "screen", m.id))
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// toldOnce checks, in each master's last model request (which carries its
// whole conversation), that no 🔔 line came for the tasks it waited for
// and exactly one for the one it did not.
func (l mcpLead) toldOnce(waited, waited2, belled map[*mcpMaster]string) {
	l.t.Helper()
	reqs := l.fake.Requests()
	for _, m := range l.masters {
		var last []byte
		for _, r := range reqs {
			if m.sent(r) && bytes.Contains(r.Body, []byte("tasks go to workers")) {
				last = r.Body
			}
		}
		bell := func(id string) int { return bytes.Count(last, []byte("] task "+id+" → ")) }
		for _, id := range []string{waited[m], waited2[m]} {
			if n := bell(id); n != 0 {
				l.t.Errorf("%s: %d 🔔 lines for task %s, which it waited for; want none:\n%s", m.agent, n, id, runCicy(l.t, l.env, "tasks", "show", id))
			}
		}
		if n := bell(belled[m]); n != 1 {
			l.t.Errorf("%s: %d 🔔 lines for task %s; want one", m.agent, n, belled[m])
		}
	}
}

// checkOffered checks each agent's model requests offered the team tools
// under the agent's own name: Claude Code mcp__cicy__dispatch (loaded up
// front, not deferred behind tool search), Codex the tool dispatch of the
// namespace mcp__cicy, opencode cicy_dispatch, Qwen Code mcp__cicy__dispatch,
// Gemini CLI mcp_cicy_dispatch (a function declaration).
func checkOffered(t *testing.T, reqs []fakellm.Request) {
	t.Helper()
	type spec struct {
		Type         string `json:"type"`
		Name         string `json:"name"`
		DeferLoading bool   `json:"defer_loading"`
		Function     struct {
			Name string `json:"name"`
		} `json:"function"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Decls []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	}
	offered := map[string]bool{}
	for _, r := range reqs {
		var body struct {
			Tools []spec `json:"tools"`
		}
		if json.Unmarshal(r.Body, &body) != nil {
			continue
		}
		for _, s := range body.Tools {
			switch {
			case strings.HasPrefix(r.Path, "/v1/messages") && s.Name == "mcp__cicy__dispatch" && !s.DeferLoading:
				offered["claude"] = true
			case r.Path == "/v1/responses" && s.Type == "namespace" && s.Name == "mcp__cicy" && len(s.Tools) == 6:
				offered["codex"] = true
			case r.Path == "/v1/chat/completions" && s.Function.Name == "cicy_dispatch":
				offered["opencode"] = true
			case r.Path == "/v1/chat/completions" && s.Function.Name == "mcp__cicy__dispatch":
				offered["qwen"] = true
			case strings.HasPrefix(r.Path, "/v1beta/models/") && slices.ContainsFunc(s.Decls, func(d struct {
				Name string `json:"name"`
			}) bool {
				return d.Name == "mcp_cicy_dispatch"
			}):
				offered["gemini"] = true
			}
		}
	}
	for _, agent := range []string{"claude", "codex", "opencode", "qwen", "gemini"} {
		if !offered[agent] {
			t.Errorf("%s never offered the team tools to its model", agent)
		}
	}
}

// gitRepoAt makes dir a git repository on main holding what is there.
func gitRepoAt(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
