package cliagent

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/pane"
)

// claude is Claude Code. Its config folder is CLAUDE_CONFIG_DIR; its
// signals are its hooks.
func init() { register(claude) }

var claude = Kind{
	Name: "claude", Title: "Claude Code", Bin: "claude", Package: "@anthropic-ai/claude-code", Version: "2.1.332", APIs: []string{"anthropic"},
	EnterDelay: 100 * time.Millisecond,
	prepare:    prepareClaude, interpret: interpretClaude, prompts: true, rules: claudeRules, layout: claudeLayout, aux: claudeAux,
	// How its dialogs are answered and read (answer.go).
	answer:   answerSpec{approve: []string{"1"}, deny: []string{"Escape"}, option: digit, approval: regexp.MustCompile(`^Do you want to`)},
	toolName: claudeToolName,
	// Every hook carries "session_id"; SessionStart a new one after /clear
	// or /resume. `claude --resume <id>` takes a session up.
	session: sessionField, resume: resumeWith("--resume"),
	// CLAUDE.md in CLAUDE_CONFIG_DIR: its user memory.
	guidance: guidanceIn("claude", "CLAUDE.md"),
}

// claudeToolName is a team tool as Claude Code (and Qwen Code) names an
// MCP server's tools: mcp__<server>__<tool>.
func claudeToolName(tool string) string { return "mcp__" + MCPName + "__" + tool }

// claudeHookEvents are the Claude Code hook events wired to `cicy-agent
// hook`.
var claudeHookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "StopFailure", "Notification", "PermissionRequest"}

// prepareClaude seeds CLAUDE_CONFIG_DIR: onboarding done, the workspace
// trusted, the pane's gateway token approved as its key, the permission
// mode chosen, hooks wired, and a master's team tools (see claudeMCP).
func prepareClaude(a Setup) ([]string, []string, error) {
	dir := filepath.Join(a.Dir, "claude")
	state := map[string]any{
		"hasCompletedOnboarding": true, "hasSeenAutoDefaultNotice": true, "hasSeenAutoDefaultNudge": true,
		"bypassPermissionsModeAccepted": true, "autoUpdates": false,
		"projects": map[string]any{a.Workspace: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
	}
	env := append([]string{"CLAUDE_CONFIG_DIR=" + dir, "ANTHROPIC_BASE_URL=" + a.Gateway, "ANTHROPIC_API_KEY=" + a.Token}, quietEnv...)
	// Claude asks before using a key from the environment; the approval
	// is keyed by its last 20 characters.
	tail := a.Token
	if len(tail) > 20 {
		tail = tail[len(tail)-20:]
	}
	state["customApiKeyResponses"] = map[string]any{"approved": []string{tail}, "rejected": []string{}}
	mode := "default"
	if a.AllowAll {
		mode = "bypassPermissions"
		if os.Geteuid() == 0 {
			env = append(env, "IS_SANDBOX=1") // bypass mode refuses root otherwise
		}
	}
	permissions := map[string]any{"defaultMode": mode}
	settings := map[string]any{
		"permissions":                       permissions,
		"skipDangerousModePermissionPrompt": true,
		"hooks":                             hooksBlock(a.Self, "claude", claudeHookEvents),
	}
	if a.MCP != nil {
		state["mcpServers"], permissions["allow"] = claudeMCP(a.MCP)
	}
	if err := writeJSONFile(filepath.Join(dir, ".claude.json"), state); err != nil {
		return nil, nil, err
	}
	if err := writeJSONFile(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, nil, err
	}
	argv := []string{"claude", "--permission-mode", mode}
	if a.Model != "" {
		argv = append(argv, "--model", a.Model)
	}
	return append(argv, a.Extra...), env, nil
}

// claudeMCP is a master's team tools for Claude Code: the server in
// .claude.json's user-scope "mcpServers" (which need no approval dialog,
// unlike a project's .mcp.json), its tools loaded up front rather than
// behind tool search ("alwaysLoad"), and the permission rule that allows
// every tool of the server without a prompt.
func claudeMCP(m *MCPServer) (servers map[string]any, allow []string) {
	cmd, args := m.command()
	servers = map[string]any{MCPName: map[string]any{
		"type": "stdio", "command": cmd, "args": args, "env": m.Env, "alwaysLoad": true,
	}}
	return servers, []string{"mcp__" + MCPName}
}

// claudePayload holds the fields of a Claude Code hook's payload that
// matter (Codex's hooks send the same).
type claudePayload struct {
	LastAssistant    string `json:"last_assistant_message"`
	NotificationType string `json:"notification_type"`
	Error            any    `json:"error"`
}

// interpretClaude maps a Claude Code hook to its effect. SessionStart
// comes before Claude Code draws its prompt: text typed then is read with
// its Enter in one burst once it does, and the Enter is lost (under load a
// task was never taken up), so its screen tells when it is ready.
func interpretClaude(event string, payload []byte) Effect {
	return claudeHooks("claude", event, payload)
}

// claudeHooks maps a hook in Claude Code's format, sent by agent (Claude
// Code, or Qwen Code, which took its hooks), to its effect.
func claudeHooks(agent, event string, payload []byte) Effect {
	var p claudePayload
	decode(payload, &p)
	if eff, ok := claudeStyleHook(event, p); ok {
		return eff
	}
	switch event {
	case "SessionStart":
		return Effect{Ignored: "SessionStart comes before Claude Code draws its prompt and reads input"}
	case "StopFailure":
		msg := p.LastAssistant
		if msg == "" {
			msg = fmt.Sprint(p.Error)
		}
		return Effect{State: pane.Idle, End: true, Failed: turnFailed(msg)}
	case "Notification":
		switch p.NotificationType {
		case "permission_prompt", "agent_needs_input", "elicitation_dialog":
			return Effect{State: pane.Waiting}
		case "idle_prompt":
			return Effect{State: pane.Idle}
		}
		return Effect{Ignored: "notification " + p.NotificationType}
	}
	return unused(agent, event)
}

// claudeStyleHook is the effect of the hook events Claude Code and Codex
// share; ok is false for the others.
func claudeStyleHook(event string, p claudePayload) (eff Effect, ok bool) {
	switch event {
	case "UserPromptSubmit":
		return Effect{State: pane.Busy, Prompt: true}, true
	case "PreToolUse", "PostToolUse":
		return Effect{State: pane.Busy}, true
	case "Stop":
		return Effect{State: pane.Idle, End: true, Result: p.LastAssistant}, true
	case "PermissionRequest":
		return Effect{State: pane.Waiting}, true
	}
	return Effect{}, false
}

// claudeRules are Claude Code's built-in screen rules, from the screens of
// Claude Code 2.1 (tested against cmd/cicy-agent/testdata/screens), each
// reading one part of its layout (see claudeLayout): a dialog is waiting;
// the footer's interrupt hint or the spinner line is busy; a menu, the
// idle footer or prompt is idle.
var claudeRules = pane.Rules{
	// One literal start per rule: a regexp with one scans a long line fast.
	{Name: "claude-permission", State: pane.Waiting, Part: pane.PartDialog, Match: `Do you want to`},
	{Name: "claude-dialog-keys", State: pane.Waiting, Part: pane.PartDialog, Match: `Esc to cancel`},
	{Name: "claude-question", State: pane.Waiting, Part: pane.PartDialog, Match: `Enter to (select|confirm)`},
	{Name: "claude-choice", State: pane.Waiting, Part: pane.PartDialog, Match: `❯ \d+\.`},
	{Name: "claude-trust-dialog", State: pane.Waiting, Part: pane.PartDialog, Match: `Yes, I (trust this folder|accept)`},
	{Name: "claude-busy-footer", State: pane.Busy, Part: pane.PartFooter, Match: `esc to interrupt`},
	{Name: "claude-spinner", State: pane.Busy, Part: pane.PartStatus, Match: `…|retrying in \d+s · attempt \d+`},
	// A panel a person opened (/help, /model): the key hints at its foot
	// (wrapped on a narrow screen).
	{Name: "claude-panel", State: pane.Idle, Part: pane.PartMenu, Match: `Esc to`, Last: 2},
	{Name: "claude-menu", State: pane.Idle, Part: pane.PartMenu, Match: `^  [❯ ] /|^    [^ ]|^  ! for shell`},
	{Name: "claude-idle-footer", State: pane.Idle, Part: pane.PartFooter, Match: `\? for shortcuts|⏵⏵ |⏸ |shift\+tab to cycle`},
	{Name: "claude-idle-prompt", State: pane.Idle, Part: pane.PartComposer, Match: `^❯`},
}

// Claude Code's layout, from the bottom: the footer (hints, "esc to
// interrupt" while it works) under the composer, the ❯ prompt between two
// full-width ─ rules; above the composer, while it works, the spinner line
// ("✻ Verbing…", with tips under it). A menu: the slash-command or
// mention popup right above the composer while the draft starts with "/"
// or "@" (see claudePopup), or the shortcut panel ("? " at the empty
// prompt) in the footer's place ("  ! for shell mode" first). A dialog (a
// permission, a question) replaces the composer: it runs from its top ─
// rule to the bottom. A panel a person opened with a slash command
// (/help, /model, …) also replaces the composer, from a full-width ▔ rule
// to the bottom: a menu.
const (
	claudeFooterMax = 15 // lines of footer under the composer at most
	claudeStatusMax = 8  // lines between the spinner line and the composer at most
	claudeDialogGap = 30 // lines between two ─ rules of one dialog at most
)

// claudeLayout finds the parts of a Claude Code screen.
func claudeLayout(lines []string) []pane.Span {
	end := lastLine(lines)
	lo, panel := -1, -1
	for i := end - 1; i >= 0; i-- {
		if isRule(lines[i], '─') {
			lo = i
			break
		}
		if panel < 0 && isRule(lines[i], '▔') {
			panel = i
		}
	}
	if panel >= 0 {
		return spans(panel, pane.Span{Part: pane.PartMenu, From: panel, To: end})
	}
	if lo < 0 {
		return spans(end)
	}
	if up := claudeComposerTop(lines, lo); up >= 0 && lo >= end-claudeFooterMax {
		composer := pane.Span{Part: pane.PartComposer, From: up, To: lo + 1}
		footer := pane.Span{Part: pane.PartFooter, From: lo + 1, To: end}
		if lo+1 < end && strings.HasPrefix(lines[lo+1], "  ! for shell") {
			footer.Part = pane.PartMenu // the shortcut panel
		}
		if startsWithGlyph(lines[up+1], '❯') {
			if m := claudePopup(lines, up, strings.TrimLeft(lines[up+1][len("❯"):], " \u00a0")); m < up {
				return spans(m, pane.Span{Part: pane.PartMenu, From: m, To: up}, composer, footer)
			}
		}
		top := claudeStatus(lines, up)
		return spans(top, pane.Span{Part: pane.PartStatus, From: top, To: up}, composer, footer)
	}
	// No composer: a dialog, from the first of its ─ rules.
	top := lo
	for i := lo - 1; i >= 0 && i >= top-claudeDialogGap; i-- {
		if startsWithGlyph(lines[i], '●') {
			break // a tool call or answer of the transcript
		}
		if isRule(lines[i], '─') {
			top = i
		}
	}
	return spans(top, pane.Span{Part: pane.PartDialog, From: top, To: end})
}

// claudePopup is where the popup right above the composer (whose top
// rule is up) starts; up when there is none. While the draft starts with
// "/", the slash commands: "  ❯ /cmd" first, then "    /cmd", their
// descriptions wrapped onto deeper indented lines. While it starts with
// "@", the file and agent mentions: lines indented by 4 ("    + main.go").
func claudePopup(lines []string, up int, draft string) int {
	top := up
	for i := up - 1; i >= 0 && !pane.Blank(lines[i]); i-- {
		l := lines[i]
		switch {
		case strings.HasPrefix(draft, "/") && strings.HasPrefix(l, "  ❯ /"):
			return i
		case strings.HasPrefix(draft, "/") && (strings.HasPrefix(l, "    /") || indent(l) > 4):
		case strings.HasPrefix(draft, "@") && indent(l) >= 4:
			top = i
		default:
			return top
		}
	}
	return top
}

// claudeComposerTop is the upper rule of the composer whose lower rule is
// lo: the ─ rule above it that the ❯ prompt follows; -1 when there is
// none.
func claudeComposerTop(lines []string, lo int) int {
	for i := lo - 1; i >= 0; i-- {
		if isRule(lines[i], '─') {
			if i+1 < lo && startsWithGlyph(lines[i+1], '❯') {
				return i
			}
			return -1
		}
	}
	return -1
}

// claudeStatus is where the status above the composer (whose top rule is
// up) starts: the spinner line, a glyph and a word ending in "…" at
// column 0 ("✽ Scampering…", "✢ Ideating… (2s · ↓ 25 tokens)"); up when
// there is none.
func claudeStatus(lines []string, up int) int {
	for i := up - 1; i >= 0 && i >= up-claudeStatusMax; i-- {
		l := lines[i]
		if startsWithGlyph(l, '●') || startsWithGlyph(l, '❯') {
			break
		}
		if claudeSpinner(l) {
			return i
		}
	}
	return up
}

// claudeSpinner reports whether a line is Claude Code's spinner line: a
// glyph that is no letter, digit or transcript mark, a space, then a
// word ending in "…".
func claudeSpinner(l string) bool {
	r, n := utf8.DecodeRuneInString(l)
	if r == utf8.RuneError || r == ' ' || isWordGlyph(r) || r == '●' || r == '❯' || r == '⎿' || len(l) <= n || l[n] != ' ' {
		return false
	}
	word := l[n+1:]
	if i := strings.IndexByte(word, ' '); i >= 0 {
		word = word[:i]
	}
	return strings.HasSuffix(word, "…") && len(word) > len("…")
}

// claudeAux are Claude Code's side calls. 2.1.332 was seen to send none
// (one request per turn, no count_tokens); the rules cover the quota probe
// (max_tokens 1, prompt "quota") and the topic / title prompts older and
// newer versions send with a small model.
var claudeAux = []AuxRule{
	{"quota", func(f *Fingerprint) bool { return f.MaxTokens == 1 && f.LastUser == "quota" }},
	{"title", systemStarts("Analyze if this message indicates a new conversation topic")},
	{"title", systemStarts("Summarize this coding conversation")},
	{"title", systemStarts("Generate a concise")},
}
