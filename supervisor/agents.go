package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// CLI agent panes (see docs/hooks.md; issue 6): the real Claude Code, Codex and
// opencode programs in terminal panes. Each pane gets its own config
// folder under $CICY_HOME/panes/<id>/ (the user's own files are never
// touched), seeded so the program starts straight at its prompt, with its
// native completion signals wired to `cicy-agent hook`.

// agentKind is what differs between the CLI agents.
type agentKind struct {
	bin, pkg string
	// enterDelay separates typed text from the Enter that submits it
	// (Codex turns an Enter that follows a fast paste into a newline).
	enterDelay time.Duration
	prepare    func(a agentSetup) (argv, env []string, err error)
	// creds are the provider credentials the program needs: it gets
	// them in its environment (which only its user can read), never in a
	// file or an argument.
	creds []string
}

var agentKinds = map[string]agentKind{
	"claude": {bin: "claude", pkg: "@anthropic-ai/claude-code", enterDelay: 100 * time.Millisecond, prepare: prepareClaude,
		creds: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"}},
	"codex": {bin: "codex", pkg: "@openai/codex", enterDelay: 300 * time.Millisecond, prepare: prepareCodex,
		creds: []string{"OPENAI_API_KEY"}},
	"opencode": {bin: "opencode", pkg: "opencode-ai", enterDelay: 100 * time.Millisecond, prepare: prepareOpencode,
		creds: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}},
}

// isAgent reports whether a pane type is a CLI agent.
func isAgent(typ string) bool { _, ok := agentKinds[typ]; return ok }

// agentSetup is everything a seed needs.
type agentSetup struct {
	id, workspace string
	dir           string // the pane's own config folder
	shared        string // a folder shared by the panes of one home
	self          string // this program, for the hooks
	model         string
	allowAll      bool
	extra         []string // arguments after --
	getenv        func(string) string
}

// findAgent resolves an agent type's program on PATH.
func findAgent(typ string) (string, error) {
	k := agentKinds[typ]
	path, err := exec.LookPath(k.bin)
	if err != nil {
		return "", failedErr("%s was not found on PATH; install it with: npm install -g %s", k.bin, k.pkg)
	}
	return path, nil
}

// paneDir is a pane's own folder for its agent's configuration.
func (h Home) paneDir(id string) string { return h.path("panes", id) }

// hookCommand is the shell command line a hook runs.
func hookCommand(self, agent, event string) string {
	return ShellQuote(self) + " hook --agent " + agent + " " + event
}

// ShellQuote quotes s for a POSIX shell.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, b)
}

// writeFile writes a seed file atomically (an agent starting now reads
// the old file or the new one), in a folder only the user can read.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return cicy.WriteFileAtomic(path, b)
}

// quietEnv are the variables that keep a CLI from phoning home.
var quietEnv = []string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
	"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1",
}

// claudeHookEvents are the Claude Code (and Codex) hook events wired to
// `cicy-agent hook`.
var claudeHookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "StopFailure", "Notification", "PermissionRequest"}

func hooksBlock(self, agent string, events []string) map[string]any {
	hooks := map[string]any{}
	for _, ev := range events {
		entry := map[string]any{"hooks": []map[string]any{{"type": "command", "command": hookCommand(self, agent, ev), "timeout": 10}}}
		if ev == "PreToolUse" || ev == "PostToolUse" || ev == "PermissionRequest" {
			entry["matcher"] = "*"
		}
		hooks[ev] = []any{entry}
	}
	return hooks
}

// prepareClaude seeds CLAUDE_CONFIG_DIR: onboarding done, the workspace
// trusted, the key approved, the permission mode chosen, hooks wired.
func prepareClaude(a agentSetup) ([]string, []string, error) {
	dir := filepath.Join(a.dir, "claude")
	state := map[string]any{
		"hasCompletedOnboarding": true, "hasSeenAutoDefaultNotice": true, "hasSeenAutoDefaultNudge": true,
		"bypassPermissionsModeAccepted": true, "autoUpdates": false,
		"projects": map[string]any{a.workspace: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
	}
	env := append([]string{"CLAUDE_CONFIG_DIR=" + dir}, quietEnv...)
	if key := a.getenv("ANTHROPIC_API_KEY"); key != "" {
		// Claude asks before using a key from the environment; the
		// approval is keyed by its last 20 characters.
		tail := key
		if len(tail) > 20 {
			tail = tail[len(tail)-20:]
		}
		state["customApiKeyResponses"] = map[string]any{"approved": []string{tail}, "rejected": []string{}}
	}
	mode := "default"
	if a.allowAll {
		mode = "bypassPermissions"
		if os.Geteuid() == 0 {
			env = append(env, "IS_SANDBOX=1") // bypass mode refuses root otherwise
		}
	}
	settings := map[string]any{
		"permissions":                       map[string]any{"defaultMode": mode},
		"skipDangerousModePermissionPrompt": true,
		"hooks":                             hooksBlock(a.self, "claude", claudeHookEvents),
	}
	if err := writeJSONFile(filepath.Join(dir, ".claude.json"), state); err != nil {
		return nil, nil, err
	}
	if err := writeJSONFile(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, nil, err
	}
	argv := []string{"claude", "--permission-mode", mode}
	if a.model != "" {
		argv = append(argv, "--model", a.model)
	}
	return append(argv, a.extra...), env, nil
}

// tomlString is a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// prepareCodex seeds CODEX_HOME: the workspace trusted, no daemon, a
// provider from OPENAI_BASE_URL, notify and hooks wired (hook trust is
// bypassed on the command line: the hooks are ours).
func prepareCodex(a agentSetup) ([]string, []string, error) {
	dir := filepath.Join(a.dir, "codex")
	notify, _ := json.Marshal([]string{a.self, "hook", "--agent", "codex", "notify"})
	var c strings.Builder
	if a.model != "" {
		fmt.Fprintf(&c, "model = %s\n", tomlString(a.model))
	}
	base := a.getenv("OPENAI_BASE_URL")
	if base != "" {
		c.WriteString("model_provider = \"cicy\"\n")
	}
	if a.allowAll {
		c.WriteString("approval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n")
	} else {
		c.WriteString("approval_policy = \"on-request\"\nsandbox_mode = \"workspace-write\"\n")
	}
	fmt.Fprintf(&c, "notify = %s\ncheck_for_update_on_startup = false\n\n", notify)
	if base != "" {
		fmt.Fprintf(&c, "[model_providers.cicy]\nname = \"cicy-agent provider (OPENAI_BASE_URL)\"\nbase_url = %s\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n\n", tomlString(base))
	}
	c.WriteString("[analytics]\nenabled = false\n\n[features]\ndaemon_auto_start = false\n\n[tui]\nscreen_reader_detection_done = true\n\n")
	fmt.Fprintf(&c, "[projects.%s]\ntrust_level = \"trusted\"\n", tomlString(a.workspace))
	if err := writeFile(filepath.Join(dir, "config.toml"), []byte(c.String())); err != nil {
		return nil, nil, err
	}
	hooks := map[string]any{"hooks": hooksBlock(a.self, "codex", []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PermissionRequest"})}
	if err := writeJSONFile(filepath.Join(dir, "hooks.json"), hooks); err != nil {
		return nil, nil, err
	}
	argv := []string{"codex", "--dangerously-bypass-hook-trust"}
	if a.allowAll {
		argv = append(argv, "--dangerously-bypass-approvals-and-sandbox")
	}
	return append(argv, a.extra...), append([]string{"CODEX_HOME=" + dir}, quietEnv...), nil
}

// opencodePlugin forwards opencode's events to `cicy-agent hook`; it
// remembers the last assistant text of each session, which opencode's
// session.idle does not carry.
const opencodePlugin = `// Written by cicy-agent: forwards opencode events to 'cicy-agent hook'.
import { spawn } from "node:child_process";

const BIN = %s;
const roles = {};
const last = {};

function send(event, payload) {
  try {
    // The hooks run as separate processes: the event's own time orders them.
    const env = { ...process.env, CICY_HOOK_AT: new Date().toISOString() };
    const p = spawn(BIN, ["hook", "--agent", "opencode", event], { stdio: ["pipe", "ignore", "ignore"], env });
    p.on("error", () => {});
    p.stdin.on("error", () => {});
    p.stdin.end(JSON.stringify(payload));
  } catch (e) {}
}

export const CicyAgentHooks = async () => ({
  event: async ({ event }) => {
    const t = event.type;
    const pr = event.properties || {};
    if (t === "message.updated" && pr.info) {
      roles[pr.info.id] = pr.info.role;
    } else if (t === "message.part.updated" && pr.part && pr.part.type === "text") {
      if (roles[pr.part.messageID] === "assistant") last[pr.part.sessionID] = pr.part.text;
    } else if (t === "session.status") {
      send(t, { sessionID: pr.sessionID, status: pr.status && pr.status.type });
    } else if (t === "session.idle") {
      send(t, { sessionID: pr.sessionID, last_assistant_message: last[pr.sessionID] || "" });
    } else if (t === "session.error") {
      send(t, { sessionID: pr.sessionID, error: JSON.stringify(pr.error || {}) });
    } else if (t === "permission.asked" || t === "permission.replied") {
      send(t, pr);
    }
  },
});
`

// prepareOpencode seeds opencode: the pane's own opencode.json
// (OPENCODE_CONFIG: a provider from the environment, no update or models
// fetch, the permission policy) and data folders, and a config folder
// shared by the home's opencode panes holding the event plugin. opencode
// installs its plugin package into its config folder before it starts
// (12 s from the npm registry, longer without one); shared, that happens
// once, not once per pane.
func prepareOpencode(a agentSetup) ([]string, []string, error) {
	root := filepath.Join(a.dir, "opencode")
	cfgDir := filepath.Join(a.shared, "opencode", "config")
	model := a.model
	if model == "" {
		model = "default"
	}
	// No "$schema": opencode fetches it, and hangs at start offline.
	cfg := map[string]any{"autoupdate": false, "share": "disabled"}
	switch {
	case a.getenv("OPENAI_BASE_URL") != "":
		cfg["provider"] = map[string]any{"cicy": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "cicy-agent (OPENAI_BASE_URL)",
			"options": map[string]any{"baseURL": a.getenv("OPENAI_BASE_URL"), "apiKey": "{env:OPENAI_API_KEY}"},
			"models":  map[string]any{model: map[string]any{"name": model, "tool_call": true}},
		}}
		cfg["model"], cfg["small_model"] = "cicy/"+model, "cicy/"+model
	case a.getenv("ANTHROPIC_BASE_URL") != "":
		cfg["provider"] = map[string]any{"cicy": map[string]any{
			"npm": "@ai-sdk/anthropic", "name": "cicy-agent (ANTHROPIC_BASE_URL)",
			"options": map[string]any{"baseURL": strings.TrimRight(a.getenv("ANTHROPIC_BASE_URL"), "/") + "/v1", "apiKey": "{env:ANTHROPIC_API_KEY}"},
			"models":  map[string]any{model: map[string]any{"name": model, "tool_call": true}},
		}}
		cfg["model"], cfg["small_model"] = "cicy/"+model, "cicy/"+model
	case a.model != "":
		cfg["model"] = a.model
	}
	if a.allowAll {
		cfg["permission"] = map[string]any{"bash": "allow", "edit": "allow", "webfetch": "allow", "external_directory": "allow"}
	} else {
		cfg["permission"] = map[string]any{"bash": "ask", "edit": "ask", "webfetch": "ask", "external_directory": "ask"}
	}
	own := filepath.Join(root, "opencode.json")
	if err := writeJSONFile(own, cfg); err != nil {
		return nil, nil, err
	}
	bin, _ := json.Marshal(a.self)
	if err := writeFile(filepath.Join(cfgDir, "opencode", "plugin", "cicy-agent.js"), []byte(fmt.Sprintf(opencodePlugin, bin))); err != nil {
		return nil, nil, err
	}
	env := append([]string{
		"OPENCODE_CONFIG=" + own,
		"XDG_CONFIG_HOME=" + cfgDir, "XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_CACHE_HOME=" + filepath.Join(root, "cache"), "XDG_STATE_HOME=" + filepath.Join(root, "state"),
	}, quietEnv...)
	return append([]string{"opencode"}, a.extra...), env, nil
}

// paneConfig is agent_config.config.
type paneConfig struct {
	Team     string `json:"team,omitempty"`
	AllowAll bool   `json:"allow_all,omitempty"`
	// Env: the variables asked for with --env (names only).
	Env []string `json:"env,omitempty"`
}

func parsePaneConfig(s string) paneConfig {
	var c paneConfig
	_ = json.Unmarshal([]byte(s), &c)
	return c
}

type agentLaunch struct{ argv, env []string }

// prepareAgent seeds a CLI agent's config folder (again at every start,
// so a moved binary or a changed environment is picked up) and returns its
// command line and extra environment.
func (s *Supervisor) prepareAgent(cfg schema.Pane, extra []string) (agentLaunch, error) {
	path, err := findAgent(cfg.Type)
	if err != nil {
		return agentLaunch{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return agentLaunch{}, fmt.Errorf("find this program for the hooks: %w", err)
	}
	pc := parsePaneConfig(cfg.Config)
	argv, env, err := agentKinds[cfg.Type].prepare(agentSetup{
		id: cfg.ID, workspace: cfg.Workspace, dir: s.cfg.Home.paneDir(cfg.ID), shared: s.cfg.Home.paneDir("shared"), self: self,
		model: cfg.Model, allowAll: pc.AllowAll, extra: extra, getenv: s.cfg.Getenv,
	})
	if err != nil {
		return agentLaunch{}, fmt.Errorf("prepare the %s config of %s: %w", cfg.Type, cfg.ID, err)
	}
	argv[0] = path
	// The agent's shell finds cicy-agent (dispatch, wait, status) and the
	// other CLIs where the supervisor found them.
	env = append(env, "PATH="+s.cfg.Getenv("PATH")+string(os.PathListSeparator)+filepath.Dir(self))
	return agentLaunch{argv: argv, env: env}, nil
}

// screenRulesFile is the part of lite-config.json the screen rules read.
type screenRulesFile struct {
	ScreenRules map[string]pane.Rules `json:"screenRules"`
}

// LoadScreenRules is the compiled screen-rule table of an agent type:
// lite-config.json's "screenRules" for it first, then the built-in rules.
func LoadScreenRules(home, agentType string) (pane.Rules, error) {
	var f screenRulesFile
	if _, err := cicy.ReadLiteConfig(home, &f); err != nil {
		return nil, err
	}
	rules, err := pane.RulesFor(agentType, f.ScreenRules[agentType])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cicy.LiteConfigPath(home), err)
	}
	return rules, nil
}

// teamGuidance is added to a CLI master's guidance file: its team is run
// with the cicy-agent command from its shell.
const teamGuidance = `

# Team

You lead a team of agents run by cicy-agent. From your shell:
- ` + "`cicy-agent ls`" + ` lists the panes (your workers have you as master);
- ` + "`cicy-agent dispatch --to <pane> \"<task>\"`" + ` gives a worker a task (it prints the task id);
- ` + "`cicy-agent wait <task-id>`" + ` waits for a task and prints its result; ` + "`cicy-agent status`" + ` shows progress.
When a worker finishes, a line starting with 🔔 arrives here as your input.
`

// writeGuidance writes a new pane's guidance file (CLAUDE.md or AGENTS.md)
// from its role template if missing; a CLI master's also says how to
// lead its team.
func writeGuidance(home, ws, id string, req CreateRequest, tmpl *cicy.Template) error {
	path := filepath.Join(ws, cicy.GuidanceFile(req.Type))
	_, statErr := os.Stat(path)
	if err := cicy.WriteGuidance(home, ws, id, req.Type, tmpl); err != nil {
		return err
	}
	if statErr == nil || !isAgent(req.Type) || req.Role != topology.RoleMaster {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(teamGuidance); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
