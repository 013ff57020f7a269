package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/fakellm"
)

// mcpMaster is a CLI master of TestMCPWiredIntoCLIMasters.
type mcpMaster struct {
	agent string
	args  []string // more create arguments
	tool  string   // the stand-in's echo tool as the fake model calls it
	id    string
}

// result is the text of the stand-in's answer to m's call.
func (m *mcpMaster) result() string {
	return "standin echo: from-" + m.agent + " (supervisor reached by " + m.id + ")"
}

// The real Claude Code, Codex and opencode as masters, without
// --allow-all: each one's seeded config starts the team tools' MCP server
// (here the test stand-in, through CICY_MCP_COMMAND) with the pane's
// CICY_HOME and CICY_PANE_ID, offers its tools to the model under the
// agent's own naming, and runs a call of one without a permission prompt:
// the pane never goes waiting, the call reaches the server, which reaches
// the supervisor, and its result goes back to the model.
func TestMCPWiredIntoCLIMasters(t *testing.T) {
	if !haveCLIs() {
		t.Skip("the real CLI agents are not installed (make clis)")
	}
	fake, err := fakellm.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	home, calls := filepath.Join(dir, "home"), filepath.Join(dir, "mcp.jsonl")
	standin, err := json.Marshal([]string{self, standinArg, calls})
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CICY_HOME="+home,
		"PATH="+cliDir+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+fake.URL, "ANTHROPIC_API_KEY=sk-ant-mcp-test-0123456789",
		"OPENAI_BASE_URL="+fake.URL+"/v1", "OPENAI_API_KEY=sk-mcp-test-0123456789",
		"CICY_MCP_COMMAND="+string(standin))
	t.Cleanup(func() { stopHome(home, env) })

	masters := []*mcpMaster{
		{agent: "claude", tool: "mcp__cicy__echo"},
		{agent: "codex", args: []string{"--model", "fake-model"}, tool: "mcp__cicy__echo"}, // namespace mcp__cicy, tool echo
		{agent: "opencode", args: []string{"--model", "fake-model"}, tool: "cicy_echo"},
	}
	for _, m := range masters {
		args := append([]string{"create", m.agent + "-lead", "--type", m.agent, "--role", "master", "--backend", "pty"}, m.args...)
		m.id = strings.TrimSpace(runCicy(t, env, args...))
	}
	for _, m := range masters {
		waitPaneState(t, env, m.id, "idle", 180*time.Second)
		// The agent lists the server's tools as it starts.
		waitStandin(t, calls, func(r standinRecord) bool { return r.Pane == m.id && r.Method == "tools/list" }, 60*time.Second)
		runCicy(t, env, "send", m.id, `lead [[tool=`+m.tool+` {"text": "from-`+m.agent+`"}]]`)
	}
	waitResultsNoPrompt(t, env, fake, masters, 180*time.Second)
	checkStandinCalls(t, calls, home, masters)
	checkOffered(t, fake.Requests())
}

// waitResultsNoPrompt waits until each master has sent its model the
// result of its call, failing if a master goes waiting (a permission
// prompt) meanwhile.
func waitResultsNoPrompt(t *testing.T, env []string, fake *fakellm.Server, masters []*mcpMaster, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var ps []api.PaneInfo
		if err := json.Unmarshal([]byte(runCicy(t, env, "ls", "--json")), &ps); err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.State == "waiting" {
				t.Fatalf("%s (%s) waits for a person (%s):\n%s", p.ID, p.Type, p.Reason, runCicy(t, env, "screen", p.ID))
			}
		}
		var missing []string
		for _, m := range masters {
			if !slices.ContainsFunc(fake.Requests(), func(r fakellm.Request) bool { return bytes.Contains(r.Body, []byte(m.result())) }) {
				missing = append(missing, m.agent)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, m := range masters {
				t.Logf("%s:\n%s", m.id, runCicy(t, env, "screen", m.id))
			}
			t.Fatalf("%v never sent their model the result of the call", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readStandin reads the stand-in's log.
func readStandin(t *testing.T, path string) []standinRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var recs []standinRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r standinRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Bytes())
		}
		recs = append(recs, r)
	}
	return recs
}

// waitStandin waits until the stand-in's log holds a record ok accepts.
func waitStandin(t *testing.T, path string, ok func(standinRecord) bool, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !slices.ContainsFunc(readStandin(t, path), ok) {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in MCP server never saw what was awaited; it saw %+v", readStandin(t, path))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkStandinCalls checks each master's server was told its home and
// pane, and got the call of echo with the text the model gave; it logs
// the protocol version each agent asked for.
func checkStandinCalls(t *testing.T, path, home string, masters []*mcpMaster) {
	t.Helper()
	recs := readStandin(t, path)
	for _, m := range masters {
		var called bool
		for _, r := range recs {
			if r.Pane != m.id {
				continue
			}
			if r.Home != home {
				t.Errorf("%s: the server's CICY_HOME is %q, want %q", m.agent, r.Home, home)
			}
			switch r.Method {
			case "initialize":
				var p struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				_ = json.Unmarshal(r.Params, &p)
				t.Logf("%s asks for MCP protocol version %s", m.agent, p.ProtocolVersion)
			case "tools/call":
				called = called || strings.Contains(string(r.Params), `"from-`+m.agent+`"`)
			}
		}
		if !called {
			t.Errorf("%s: the stand-in got no call of echo from %s", m.agent, m.id)
		}
	}
}

// checkOffered checks each agent's model requests offered the stand-in's
// tool under the agent's own name: Claude Code mcp__cicy__echo (loaded
// up front, not deferred behind tool search), Codex the tool echo of the
// namespace mcp__cicy, opencode cicy_echo.
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
			case strings.HasPrefix(r.Path, "/v1/messages") && s.Name == "mcp__cicy__echo" && !s.DeferLoading:
				offered["claude"] = true
			case r.Path == "/v1/responses" && s.Type == "namespace" && s.Name == "mcp__cicy" && len(s.Tools) == 1 && s.Tools[0].Name == "echo":
				offered["codex"] = true
			case r.Path == "/v1/chat/completions" && s.Function.Name == "cicy_echo":
				offered["opencode"] = true
			}
		}
	}
	for _, agent := range []string{"claude", "codex", "opencode"} {
		if !offered[agent] {
			t.Errorf("%s never offered the stand-in's tool to its model", agent)
		}
	}
}
