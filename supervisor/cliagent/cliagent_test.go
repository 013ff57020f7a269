package cliagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/panetype"
)

func TestInterpretHook(t *testing.T) {
	cases := []struct {
		agent, event, payload string
		state                 pane.State
		end, prompt           bool
		result, failed        string
		ignored               bool
	}{
		{agent: "claude", event: "SessionStart", payload: `{"source":"startup"}`, ignored: true},
		{agent: "claude", event: "UserPromptSubmit", payload: `{"prompt":"hi"}`, state: pane.Busy, prompt: true},
		{agent: "claude", event: "Stop", payload: `{"hook_event_name":"Stop","last_assistant_message":"done it"}`, state: pane.Idle, end: true, result: "done it"},
		{agent: "claude", event: "StopFailure", payload: `{"error":"unknown","last_assistant_message":"API Error: 400 bad"}`, state: pane.Idle, end: true, failed: "the agent's turn failed: API Error: 400 bad"},
		{agent: "claude", event: "Notification", payload: `{"notification_type":"permission_prompt"}`, state: pane.Waiting},
		{agent: "claude", event: "Notification", payload: `{"notification_type":"idle_prompt"}`, state: pane.Idle},
		{agent: "claude", event: "Notification", payload: `{"notification_type":"auth_success"}`, ignored: true},
		{agent: "claude", event: "PermissionRequest", payload: `{"tool_name":"Bash"}`, state: pane.Waiting},
		{agent: "claude", event: "PostToolUse", payload: `{}`, state: pane.Busy},
		{agent: "codex", event: "SessionStart", payload: `{}`, ignored: true},
		{agent: "codex", event: "Stop", payload: `{"last_assistant_message":"x"}`, state: pane.Idle, end: true, result: "x"},
		{agent: "codex", event: "notify", payload: `{"type":"agent-turn-complete","input-messages":["make it"],"last-assistant-message":"made"}`, state: pane.Idle, end: true, result: "made"},
		{agent: "codex", event: "notify", payload: `{"type":"agent-turn-complete","input-messages":["Generate a concise, single-line task title"],"last-assistant-message":"{}"}`, ignored: true},
		{agent: "opencode", event: "session.status", payload: `{"status":"busy"}`, state: pane.Busy, prompt: true},
		{agent: "opencode", event: "session.status", payload: `{"status":"idle"}`, ignored: true},
		{agent: "opencode", event: "session.idle", payload: `{"last_assistant_message":"fine"}`, state: pane.Idle, end: true, result: "fine"},
		{agent: "opencode", event: "permission.asked", payload: `{"permission":"bash"}`, state: pane.Waiting},
		{agent: "opencode", event: "permission.replied", payload: `{"reply":"once"}`, state: pane.Busy},
		{agent: "pi", event: "session_start", payload: `{"reason":"startup"}`, state: pane.Idle},
		{agent: "pi", event: "agent_start", payload: `{}`, state: pane.Busy, prompt: true},
		{agent: "pi", event: "tool_execution_start", payload: `{"tool":"bash"}`, state: pane.Busy},
		{agent: "pi", event: "agent_end", payload: `{"last_assistant_message":"made it","stop_reason":"stop"}`, state: pane.Idle, end: true, result: "made it"},
		{agent: "pi", event: "agent_end", payload: `{"last_assistant_message":"","stop_reason":"error","error":"400 bad"}`, state: pane.Idle, end: true, failed: "the agent's turn failed: 400 bad"},
		{agent: "pi", event: "permission_asked", payload: `{"tool":"bash"}`, state: pane.Waiting},
		{agent: "pi", event: "permission_replied", payload: `{"tool":"bash","allowed":true}`, state: pane.Busy},
		{agent: "pi", event: "turn_end", payload: `{}`, ignored: true},
		{agent: "qwen", event: "SessionStart", payload: `{"source":"startup"}`, ignored: true},
		{agent: "qwen", event: "UserPromptSubmit", payload: `{"prompt":"make it"}`, state: pane.Busy, prompt: true},
		{agent: "qwen", event: "UserPromptSubmit", payload: `{"prompt":""}`, state: pane.Busy},
		{agent: "qwen", event: "Stop", payload: `{"last_assistant_message":"made"}`, state: pane.Idle, end: true, result: "made"},
		{agent: "qwen", event: "StopFailure", payload: `{"error":"invalid_request","last_assistant_message":"[API Error: 400 bad]"}`, state: pane.Idle, end: true, failed: "the agent's turn failed: [API Error: 400 bad]"},
		{agent: "qwen", event: "Notification", payload: `{"notification_type":"permission_prompt"}`, state: pane.Waiting},
		{agent: "qwen", event: "PermissionRequest", payload: `{"tool_name":"run_shell_command"}`, state: pane.Waiting},
		{agent: "qwen", event: "notify", payload: `{}`, ignored: true},
		{agent: "gemini", event: "SessionStart", payload: `{"source":"startup"}`, ignored: true},
		{agent: "gemini", event: "BeforeAgent", payload: `{"prompt":"make it"}`, state: pane.Busy, prompt: true},
		{agent: "gemini", event: "BeforeTool", payload: `{"tool_name":"run_shell_command"}`, state: pane.Busy},
		{agent: "gemini", event: "AfterAgent", payload: `{"prompt":"make it","prompt_response":"made","stop_hook_active":false}`, state: pane.Idle, end: true, result: "made"},
		{agent: "gemini", event: "Notification", payload: `{"notification_type":"ToolPermission","message":"Tool Confirm Shell Command requires execution"}`, state: pane.Waiting},
		{agent: "gemini", event: "Notification", payload: `{"notification_type":"Other"}`, ignored: true},
		{agent: "gemini", event: "Stop", payload: `{}`, ignored: true},
		{agent: "claude", event: "Stop", payload: `not json`, state: pane.Idle, end: true},
		{agent: "claude", event: "NewEvent", payload: `{}`, ignored: true},
	}
	for _, c := range cases {
		eff := Interpret(c.agent, c.event, []byte(c.payload))
		name := c.agent + "/" + c.event + " " + c.payload
		if (eff.Ignored != "") != c.ignored {
			t.Errorf("%s: ignored = %q, want ignored %v", name, eff.Ignored, c.ignored)
			continue
		}
		if eff.State != c.state || eff.End != c.end || eff.Prompt != c.prompt || eff.Result != c.result || eff.Failed != c.failed {
			t.Errorf("%s: got %+v", name, eff)
		}
	}
}

// Each agent reads only its own events: Claude's StopFailure and
// Notification mean nothing from Codex, and a pane type that is not a CLI
// agent has no events at all.
func TestInterpretOtherAgents(t *testing.T) {
	for _, c := range []struct{ agent, event string }{
		{"codex", "StopFailure"}, {"codex", "Notification"}, {"opencode", "Stop"}, {"claude", "notify"}, {"shell", "Stop"},
		{"qwen", "notify"}, {"qwen", "AfterAgent"},
	} {
		eff := Interpret(c.agent, c.event, []byte(`{"notification_type":"idle_prompt","type":"agent-turn-complete"}`))
		if want := "event " + c.event + " of " + c.agent + " is not used"; eff != (Effect{Ignored: want}) {
			t.Errorf("%s/%s: got %+v, want ignored %q", c.agent, c.event, eff, want)
		}
	}
}

// Names are the registered agents, as the pane-type registry has them;
// Lookup finds each and nothing else.
func TestLookupAndNames(t *testing.T) {
	if got := Names(); len(got) == 0 || !slices.IsSorted(got) || !slices.Equal(got, panetype.Agents()) {
		t.Fatalf("Names() = %v; the pane types' agents are %v", got, panetype.Agents())
	}
	for _, n := range Names() {
		if k, ok := Lookup(n); !ok || k.Name != n || k.Bin == "" {
			t.Errorf("Lookup(%q) = %+v, %v", n, k, ok)
		}
	}
	for _, n := range []string{"cicy", "shell", ""} {
		if _, ok := Lookup(n); ok {
			t.Errorf("Lookup(%q) found a CLI agent", n)
		}
	}
}

// Every CLI agent has its install recipe: make clis installs the npm
// ones (cicy-agent agents --missing), and the missing-CLI error names
// the pin.
func TestEveryAgentPinned(t *testing.T) {
	t.Parallel()
	for _, n := range Names() {
		k, _ := Lookup(n)
		if k.Version == "" || k.Bin == "" || k.FromNPM() == (len(k.VersionArgs) > 0) || !strings.HasSuffix(k.Pin(), "@"+k.Version) {
			t.Errorf("%s: program %q, package %q, version args %q, version %q", n, k.Bin, k.Package, k.VersionArgs, k.Version)
		}
	}
}

// The overrides in lite-config.json come before an agent's built-in rules;
// a type that is not a CLI agent has only its overrides.
func TestScreenRules(t *testing.T) {
	home := t.TempDir()
	for _, n := range Names() {
		rules, err := ScreenRules(home, n)
		if k, _ := Lookup(n); err != nil || len(rules) != len(k.rules) || len(rules) > 0 && !strings.HasPrefix(rules[0].Name, n+"-") {
			t.Errorf("%s without lite-config.json: %v, %v", n, rules, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(home, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"screenRules": {"codex": [{"name": "mine", "state": "busy", "match": "x"}], "shell": [{"name": "sh", "state": "idle", "match": "^\\$$"}]}}`
	if err := os.WriteFile(filepath.Join(home, "db", "lite-config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := ScreenRules(home, "codex")
	if err != nil || len(rules) != len(codexRules)+1 || rules[0].Name != "mine" || rules[1].Name != codexRules[0].Name {
		t.Errorf("codex with an override: %v, %v", rules, err)
	}
	rules, err = ScreenRules(home, "shell")
	if err != nil || len(rules) != 1 || rules[0].Name != "sh" {
		t.Errorf("shell with an override: %v, %v", rules, err)
	}
	if v, ok := rules.Classify(pane.NewLayout("hello\n$ ", Layout("shell"))); !ok || v.State != pane.Idle {
		t.Errorf("the shell override does not classify: %+v %v", v, ok)
	}
}

// A rule in lite-config.json may name a part; a part that does not exist
// is a clear error.
func TestScreenRulesPart(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"screenRules": {"claude": [{"name": "mine", "state": "waiting", "part": "footer", "match": "bypass"}]}}`
	if err := os.WriteFile(filepath.Join(home, "db", "lite-config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := ScreenRules(home, "claude")
	if err != nil || rules[0].Part != pane.PartFooter {
		t.Fatalf("claude with a part: %v, %v", rules, err)
	}
	cfg = `{"screenRules": {"claude": [{"name": "mine", "state": "waiting", "part": "bottom", "match": "bypass"}]}}`
	if err := os.WriteFile(filepath.Join(home, "db", "lite-config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ScreenRules(home, "claude"); err == nil || !strings.Contains(err.Error(), `screen rule "mine": part "bottom" is not one of transcript, status, composer, footer, dialog, menu`) {
		t.Errorf("a bad part: %v", err)
	}
}

// Every built-in rule reads one part of the agent's layout, never the
// transcript, and every agent has a parser.
func TestBuiltinRulesNameParts(t *testing.T) {
	for _, n := range Names() {
		k, _ := Lookup(n)
		if k.layout == nil {
			t.Errorf("%s has no screen parser", n)
		}
		for _, r := range k.rules {
			if r.SeesTranscript() {
				t.Errorf("%s: rule %s reads the transcript (part %q)", n, r.Name, r.Part)
			}
		}
	}
}

func TestTomlString(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:          `"plain"`,
		`a "quoted" \ b`: `"a \"quoted\" \\ b"`,
		"tab\there\x7f":  `"tab\u0009here\u007F"`,
		"é/ünïcode":      `"é/ünïcode"`,
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

// Each agent's seed lands in the pane's own folder with every signal wired
// to `cicy-agent hook` and the gateway as its model API with the pane's
// token as its key; the command line starts the agent's program. The
// supervisor's real key is nowhere in the seed or the environment.
func TestPrepare(t *testing.T) {
	const realKey = "sk-ant-REAL-0123456789abcdefghij"
	const token = "cicy-pane-0123456789abcdefghijKLMNOPQRST"
	const gw = "http://127.0.0.1:7"
	env := map[string]string{"ANTHROPIC_API_KEY": realKey, "OPENAI_API_KEY": realKey, "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
	for _, c := range []struct {
		agent string
		files map[string]string // file under the pane's folder → a text it holds
		env   []string
	}{
		{"claude", map[string]string{
			"claude/settings.json": `"command": "'/opt/my cicy' hook --agent claude StopFailure"`,
			"claude/.claude.json":  `"abcdefghijKLMNOPQRST"`},
			[]string{"ANTHROPIC_BASE_URL=" + gw, "ANTHROPIC_API_KEY=" + token}},
		{"codex", map[string]string{
			"codex/hooks.json":  `"command": "'/opt/my cicy' hook --agent codex PermissionRequest"`,
			"codex/config.toml": `base_url = "` + gw + `/v1"`},
			[]string{"OPENAI_BASE_URL=" + gw + "/v1", "OPENAI_API_KEY=" + token}},
		{"opencode", map[string]string{
			"opencode/opencode.json":                                  `"baseURL": "` + gw + `/v1"`,
			"../shared/opencode/config/opencode/plugin/cicy-agent.js": `const BIN = "/opt/my cicy";`},
			[]string{"OPENAI_API_KEY=" + token}},
		{"pi", map[string]string{
			"pi/models.json":              `"baseUrl": "` + gw + `/v1"`,
			"pi/settings.json":            `"defaultModel": "m"`,
			"pi/extensions/cicy-agent.js": `const BIN = "/opt/my cicy";`},
			[]string{"CICY_GATEWAY_TOKEN=" + token, "PI_OFFLINE=1"}},
		{"qwen", map[string]string{
			"qwen/settings.json": `"command": "'/opt/my cicy' hook --agent qwen Stop"`},
			[]string{"OPENAI_BASE_URL=" + gw + "/v1", "OPENAI_API_KEY=" + token, "OPENAI_MODEL=m"}},
		{"gemini", map[string]string{
			"gemini/.gemini/settings.json":       `"command": "'/opt/my cicy' hook --agent gemini AfterAgent"`,
			"gemini/.gemini/trustedFolders.json": `"TRUST_FOLDER"`},
			[]string{"GOOGLE_GEMINI_BASE_URL=" + gw, "GEMINI_API_KEY=" + token}},
	} {
		k, _ := Lookup(c.agent)
		root := t.TempDir()
		s := Setup{ID: "w-1", Workspace: filepath.Join(root, "ws"), Dir: filepath.Join(root, "panes", "w-1"), Shared: filepath.Join(root, "panes", "shared"),
			Self: "/opt/my cicy", Model: "m", Extra: []string{"--extra"}, Gateway: gw, Token: token, Getenv: func(k string) string { return env[k] }}
		argv, envs, err := k.Prepare(s)
		if err != nil {
			t.Fatalf("%s: %v", c.agent, err)
		}
		if argv[0] != k.Bin || argv[len(argv)-1] != "--extra" || !slices.Contains(envs, "DISABLE_TELEMETRY=1") {
			t.Errorf("%s: argv %q, env %q", c.agent, argv, envs)
		}
		for _, kv := range c.env {
			if !slices.Contains(envs, kv) {
				t.Errorf("%s: env %q lacks %s", c.agent, envs, kv)
			}
		}
		if strings.Contains(strings.Join(append(argv, envs...), "\n"), realKey) {
			t.Errorf("%s: the real key is in the command line or environment", c.agent)
		}
		for f, want := range c.files {
			b, err := os.ReadFile(filepath.Join(s.Dir, f))
			if err != nil || !strings.Contains(string(b), want) {
				t.Errorf("%s: %s does not hold %s (%v):\n%s", c.agent, f, want, err, b)
			}
		}
		checkNoFileHolds(t, root, realKey)
	}
}

// checkNoFileHolds fails if a file under root holds s.
func checkNoFileHolds(t *testing.T, root, s string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), s) {
			t.Errorf("%s holds the real key", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// opencode speaks Chat Completions to the gateway when the supervisor is
// set up for OpenAI, else Anthropic Messages.
func TestOpencodeAPI(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "@ai-sdk/anthropic"},
		{map[string]string{"ANTHROPIC_API_KEY": "k"}, "@ai-sdk/anthropic"},
		{map[string]string{"OPENAI_API_KEY": "k"}, "@ai-sdk/openai-compatible"},
		{map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_AUTH_TOKEN": "t"}, "@ai-sdk/anthropic"},
		{map[string]string{"OPENAI_BASE_URL": "u", "ANTHROPIC_API_KEY": "k"}, "@ai-sdk/openai-compatible"},
	} {
		if got := opencodeAPI(func(k string) string { return c.env[k] }).npm; got != c.want {
			t.Errorf("%v: %s, want %s", c.env, got, c.want)
		}
	}
}

// A master's seed runs the team tools' MCP server, named cicy, with who is
// calling in its environment, its tools approved so no call stops at a
// prompt (whatever the pane's permission mode); a worker's seed has no
// MCP server at all.
func TestPrepareMCP(t *testing.T) {
	srv := &MCPServer{Argv: []string{"/opt/my cicy", "mcp"}, Env: map[string]string{"CICY_HOME": `/h "q"`, "CICY_PANE_ID": "w-1"}, Tools: []string{"dispatch", "wait"}}
	for _, agent := range Names() {
		for _, master := range []bool{true, false} {
			k, _ := Lookup(agent)
			root := t.TempDir()
			s := Setup{ID: "w-1", Workspace: filepath.Join(root, "ws"), Dir: filepath.Join(root, "panes", "w-1"), Shared: filepath.Join(root, "panes", "shared"),
				Self: "/opt/my cicy", Gateway: "http://127.0.0.1:7", Token: "tok", Getenv: func(string) string { return "" }}
			if master {
				s.MCP = srv
			}
			_, _, err := k.Prepare(s)
			if master && !k.Leads() { // no MCP client: never a master
				if err == nil || !strings.Contains(err.Error(), "not a master") {
					t.Errorf("%s master: %v, want a refusal", agent, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", agent, err)
			}
			got := seededMCP(t, agent, s.Dir)
			if !master {
				if got != "" {
					t.Errorf("%s worker: seeded an MCP server: %s", agent, got)
				}
				continue
			}
			want, known := map[string]string{
				"claude": `{"allow":["mcp__cicy"],"server":{"alwaysLoad":true,"args":["mcp"],"command":"/opt/my cicy","env":{"CICY_HOME":"/h \"q\"","CICY_PANE_ID":"w-1"},"type":"stdio"}}`,
				"codex": "[mcp_servers.cicy]\ncommand = \"/opt/my cicy\"\nargs = [\"mcp\"]\nenv = { \"CICY_HOME\" = \"/h \\\"q\\\"\", \"CICY_PANE_ID\" = \"w-1\" }\n" +
					"default_tools_approval_mode = \"approve\"\ntool_timeout_sec = 7200\n",
				"opencode": `{"allow":"allow","server":{"command":["/opt/my cicy","mcp"],"enabled":true,"environment":{"CICY_HOME":"/h \"q\"","CICY_PANE_ID":"w-1"},"timeout":7200000,"type":"local"}}`,
				"qwen":     `{"allow":["mcp__cicy__dispatch","mcp__cicy__wait"],"server":{"args":["mcp"],"command":"/opt/my cicy","env":{"CICY_HOME":"/h \"q\"","CICY_PANE_ID":"w-1"},"timeout":7200000,"trust":true}}`,
				"gemini":   `{"allow":null,"server":{"args":["mcp"],"command":"/opt/my cicy","env":{"CICY_HOME":"/h \"q\"","CICY_PANE_ID":"w-1"},"timeout":7200000,"trust":true}}`,
			}[agent]
			if known && got != want { // (a new agent's seed is its own test's)
				t.Errorf("%s master: seeded\n%s\nwant\n%s", agent, got, want)
			}
		}
	}
}

// seededMCP is the cicy MCP server an agent's seed in dir holds and the
// permission that approves its tools, "" when there is neither.
func seededMCP(t *testing.T, agent, dir string) string {
	t.Helper()
	read := func(f string, v any) {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if v != nil {
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
	}
	var server, allow any
	switch agent {
	case "claude":
		var state struct {
			MCPServers map[string]any `json:"mcpServers"`
		}
		var settings struct {
			Permissions map[string]any `json:"permissions"`
		}
		read("claude/.claude.json", &state)
		read("claude/settings.json", &settings)
		server, allow = state.MCPServers["cicy"], settings.Permissions["allow"]
	case "codex":
		b, err := os.ReadFile(filepath.Join(dir, "codex", "config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		if _, table, ok := strings.Cut(string(b), "\n[mcp_servers.cicy]\n"); ok {
			return "[mcp_servers.cicy]\n" + table
		}
		if strings.Contains(string(b), "mcp_servers") {
			return string(b)
		}
		return ""
	case "pi":
		return "" // no MCP client
	case "opencode":
		var cfg struct {
			MCP        map[string]any `json:"mcp"`
			Permission map[string]any `json:"permission"`
		}
		read("opencode/opencode.json", &cfg)
		server, allow = cfg.MCP["cicy"], cfg.Permission["cicy_*"]
		if len(cfg.MCP) > 1 {
			server = cfg.MCP
		}
	case "qwen": // trusted: its calls need no permission; its tools offered up front
		var settings struct {
			MCPServers map[string]any `json:"mcpServers"`
			Tools      struct {
				Visible any `json:"visible"`
			} `json:"tools"`
		}
		read("qwen/settings.json", &settings)
		server, allow = settings.MCPServers["cicy"], settings.Tools.Visible
	case "gemini": // trusted: its calls need no permission
		var settings struct {
			MCPServers map[string]any `json:"mcpServers"`
		}
		read("gemini/.gemini/settings.json", &settings)
		server = settings.MCPServers["cicy"]
	}
	if server == nil && allow == nil {
		return ""
	}
	b, err := json.Marshal(map[string]any{"server": server, "allow": allow})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each agent shows the model the team tools under its own naming.
func TestToolName(t *testing.T) {
	for agent, want := range map[string]string{"claude": "mcp__cicy__dispatch", "codex": "mcp__cicy.dispatch", "opencode": "cicy_dispatch", "pi": "dispatch", "qwen": "mcp__cicy__dispatch", "gemini": "mcp_cicy_dispatch"} {
		if k, _ := Lookup(agent); k.ToolName("dispatch") != want {
			t.Errorf("%s: %s, want %s", agent, k.ToolName("dispatch"), want)
		}
	}
}

// TestRegistryIsThePaneTypes: every registered CLI agent is a pane type
// create and team files take, listed between cicy and shell.
func TestRegistryIsThePaneTypes(t *testing.T) {
	want := append(append([]string{"cicy"}, Names()...), "shell")
	if got := panetype.All(); !slices.Equal(got, want) {
		t.Fatalf("pane types %v; want %v", got, want)
	}
	for _, n := range Names() {
		if _, ok := panetype.Resolve(n); !ok {
			t.Errorf("%s is not a pane type", n)
		}
	}
}

// pi reads its gateway token from its environment: models.json names the
// variable, and no file of the pane holds the token, which the model could
// read with its tools; a pane that does not allow all gets the extension's
// question before bash, edit and write, one that does gets none.
func TestPiTokenOnlyInItsEnvironment(t *testing.T) {
	const token = "cicy-pane-token-only-in-the-environment"
	for _, allowAll := range []bool{false, true} {
		root := t.TempDir()
		s := Setup{ID: "w-1", Workspace: filepath.Join(root, "ws"), Dir: filepath.Join(root, "panes", "w-1"), Shared: filepath.Join(root, "panes", "shared"),
			Self: "/opt/cicy", Gateway: "http://127.0.0.1:7", Token: token, AllowAll: allowAll, Getenv: func(string) string { return "" }}
		_, env, err := pi.Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(env, "CICY_GATEWAY_TOKEN="+token) || !slices.Contains(env, "PI_CODING_AGENT_DIR="+filepath.Join(s.Dir, "pi")) {
			t.Errorf("env %q", env)
		}
		checkNoFileHolds(t, root, token)
		b, err := os.ReadFile(filepath.Join(s.Dir, "pi", "extensions", "cicy-agent.js"))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("const ASK = %t;", !allowAll); !strings.Contains(string(b), want) {
			t.Errorf("allow all %v: the extension lacks %q", allowAll, want)
		}
		if k, _ := Lookup("pi"); k.GuidanceAt(s.Dir) != filepath.Join(s.Dir, "pi", "AGENTS.md") {
			t.Errorf("guidance at %s, not in pi's agent dir", k.GuidanceAt(s.Dir))
		}
	}
}

// TestSeedOpencodeDeps: a new config folder is seeded as holding the
// plugin SDK (so opencode does not fetch it); a folder with a
// node_modules of its own, or a package.json a user wrote, is left as is.
func TestSeedOpencodeDeps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := seedOpencodeDeps(dir); err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct{ Dependencies map[string]string } `json:"packages"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	if got := lock.Packages[""].Dependencies["@opencode-ai/plugin"]; got != opencodeVersion {
		t.Errorf("lock names the SDK at %q, want %q", got, opencodeVersion)
	}
	if fi, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil || !fi.IsDir() {
		t.Errorf("node_modules: %v", err)
	}

	user := t.TempDir()
	mine := []byte(`{"dependencies":{"left-pad":"1.3.0"}}`)
	if err := os.WriteFile(filepath.Join(user, "package.json"), mine, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := seedOpencodeDeps(user); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(user, "package.json")); string(got) != string(mine) {
		t.Errorf("the user's package.json became %s", got)
	}
	installed := t.TempDir()
	if err := os.Mkdir(filepath.Join(installed, "node_modules"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := seedOpencodeDeps(installed); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(installed, "package-lock.json")); err == nil {
		t.Errorf("an installed folder got a lock written")
	}
}

// promptEvents is, per agent, a signal of its hooks that tells a prompt
// taken up (event, payload).
var promptEvents = map[string][2]string{
	"claude":   {"UserPromptSubmit", `{}`},
	"codex":    {"UserPromptSubmit", `{}`},
	"gemini":   {"BeforeAgent", `{}`},
	"opencode": {"session.status", `{"status":"busy"}`},
	"pi":       {"agent_start", `{}`},
	"qwen":     {"UserPromptSubmit", `{"prompt":"do it"}`},
}

// TestPromptsReportedByHooks: an agent said to report prompts has a hook
// event that does (so a task typed into it is taken up by its word alone);
// one whose hooks tell none is not said to.
func TestPromptsReportedByHooks(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		k, _ := Lookup(name)
		ev, known := promptEvents[name]
		switch {
		case k.ReportsPrompts() && !known:
			t.Errorf("%s reports prompts: add the hook event that tells one to promptEvents", name)
		case k.ReportsPrompts() && !k.Interpret(ev[0], []byte(ev[1])).Prompt:
			t.Errorf("%s reports prompts, but its %s (%s) tells none", name, ev[0], ev[1])
		case !k.ReportsPrompts() && known && k.Interpret(ev[0], []byte(ev[1])).Prompt:
			t.Errorf("%s's %s tells a prompt: set prompts in its Kind", name, ev[0])
		}
	}
	if ReportsPrompts("shell") {
		t.Error("a shell pane reports prompts")
	}
}
