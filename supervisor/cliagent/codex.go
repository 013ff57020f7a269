package cliagent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
)

// codex is OpenAI's Codex CLI. Its config folder is CODEX_HOME; its
// signals are its hooks (in Claude Code's format) and its notify program.
var codex = Kind{
	Name: "codex", Bin: "codex", Package: "@openai/codex",
	EnterDelay: 300 * time.Millisecond,
	prepare:    prepareCodex, interpret: interpretCodex, rules: codexRules,
}

// codexHookEvents are the Codex hook events wired to `cicy-agent hook`.
var codexHookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PermissionRequest"}

// codexTitlePrefix starts the prompt of Codex's hidden thread-title turn,
// which also fires notify.
const codexTitlePrefix = "Generate a concise"

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

// prepareCodex seeds CODEX_HOME: the workspace trusted, no daemon, the
// gateway as its provider (the pane's token in OPENAI_API_KEY), notify and
// hooks wired (hook trust is bypassed on the command line: the hooks are
// ours).
func prepareCodex(a Setup) ([]string, []string, error) {
	dir := filepath.Join(a.Dir, "codex")
	notify, err := json.Marshal([]string{a.Self, "hook", "--agent", "codex", "notify"})
	if err != nil {
		return nil, nil, fmt.Errorf("encode the notify command: %w", err)
	}
	var c strings.Builder
	if a.Model != "" {
		fmt.Fprintf(&c, "model = %s\n", tomlString(a.Model))
	}
	base := a.Gateway + "/v1"
	c.WriteString("model_provider = \"cicy\"\n")
	if a.AllowAll {
		c.WriteString("approval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n")
	} else {
		c.WriteString("approval_policy = \"on-request\"\nsandbox_mode = \"workspace-write\"\n")
	}
	fmt.Fprintf(&c, "notify = %s\ncheck_for_update_on_startup = false\n\n", notify)
	fmt.Fprintf(&c, "[model_providers.cicy]\nname = \"cicy-agent gateway\"\nbase_url = %s\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n\n", tomlString(base))
	c.WriteString("[analytics]\nenabled = false\n\n[features]\ndaemon_auto_start = false\n\n[tui]\nscreen_reader_detection_done = true\n\n")
	fmt.Fprintf(&c, "[projects.%s]\ntrust_level = \"trusted\"\n", tomlString(a.Workspace))
	if err := cicy.WriteFileAtomic(filepath.Join(dir, "config.toml"), []byte(c.String())); err != nil {
		return nil, nil, err
	}
	hooks := map[string]any{"hooks": hooksBlock(a.Self, "codex", codexHookEvents)}
	if err := writeJSONFile(filepath.Join(dir, "hooks.json"), hooks); err != nil {
		return nil, nil, err
	}
	argv := []string{"codex", "--dangerously-bypass-hook-trust"}
	if a.AllowAll {
		argv = append(argv, "--dangerously-bypass-approvals-and-sandbox")
	}
	env := append([]string{"CODEX_HOME=" + dir, "OPENAI_BASE_URL=" + base, "OPENAI_API_KEY=" + a.Token}, quietEnv...)
	return append(argv, a.Extra...), env, nil
}

// codexNotify holds the fields of Codex's notify payload that matter.
type codexNotify struct {
	Type          string   `json:"type"`
	InputMessages []string `json:"input-messages"`
	LastAssistant string   `json:"last-assistant-message"`
}

// interpretCodex maps a Codex hook or notify to its effect.
func interpretCodex(event string, payload []byte) Effect {
	switch event {
	case "SessionStart":
		// Codex starts its session lazily, at the first prompt.
		return Effect{Ignored: "codex starts its session at the first prompt"}
	case "notify":
		var n codexNotify
		decode(payload, &n)
		return codexTurnComplete(n)
	}
	var p claudePayload
	decode(payload, &p)
	if eff, ok := claudeStyleHook(event, p); ok {
		return eff
	}
	return unused("codex", event)
}

// codexTurnComplete is the effect of a notify: the end of a turn, unless
// it is another notification or the hidden thread-title turn.
func codexTurnComplete(n codexNotify) Effect {
	if n.Type != "agent-turn-complete" {
		return Effect{Ignored: "codex notify " + n.Type}
	}
	if len(n.InputMessages) > 0 && strings.HasPrefix(n.InputMessages[0], codexTitlePrefix) {
		return Effect{Ignored: "codex's thread-title turn"}
	}
	return Effect{State: pane.Idle, End: true, Result: n.LastAssistant}
}

// codexRules are Codex's built-in screen rules, from the screens of Codex
// 0.171 (tested against cmd/cicy-agent/testdata/screens): waiting first,
// then busy, then the idle hints that stay on screen.
var codexRules = pane.Rules{
	{Name: "codex-approval", State: pane.Waiting, Match: `Would you like to (run the following command|make the following edits)|Press enter to confirm or esc to cancel`, Last: 20},
	{Name: "codex-dialog", State: pane.Waiting, Match: `Trust this folder|Hooks need review|Try new model`, Last: 20},
	{Name: "codex-busy", State: pane.Busy, Match: `esc to interrupt`, Last: 8},
	{Name: "codex-idle-hints", State: pane.Idle, Match: `\? for shortcuts|› Ask Codex to do anything|context left`, Last: 6},
}
