package cliagent

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
)

// claude is Claude Code. Its config folder is CLAUDE_CONFIG_DIR; its
// signals are its hooks.
var claude = Kind{
	Name: "claude", Bin: "claude", Package: "@anthropic-ai/claude-code",
	EnterDelay: 100 * time.Millisecond,
	prepare:    prepareClaude, interpret: interpretClaude, rules: claudeRules,
}

// claudeHookEvents are the Claude Code hook events wired to `cicy-agent
// hook`.
var claudeHookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "StopFailure", "Notification", "PermissionRequest"}

// prepareClaude seeds CLAUDE_CONFIG_DIR: onboarding done, the workspace
// trusted, the pane's gateway token approved as its key, the permission
// mode chosen, hooks wired.
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
	settings := map[string]any{
		"permissions":                       map[string]any{"defaultMode": mode},
		"skipDangerousModePermissionPrompt": true,
		"hooks":                             hooksBlock(a.Self, "claude", claudeHookEvents),
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

// claudePayload holds the fields of a Claude Code hook's payload that
// matter (Codex's hooks send the same).
type claudePayload struct {
	LastAssistant    string `json:"last_assistant_message"`
	NotificationType string `json:"notification_type"`
	Error            any    `json:"error"`
}

// interpretClaude maps a Claude Code hook to its effect.
func interpretClaude(event string, payload []byte) Effect {
	var p claudePayload
	decode(payload, &p)
	if eff, ok := claudeStyleHook(event, p); ok {
		return eff
	}
	switch event {
	case "SessionStart":
		return Effect{State: pane.Idle}
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
	return unused("claude", event)
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
// Claude Code 2.1 (tested against cmd/cicy-agent/testdata/screens). Order
// matters: a permission dialog is drawn over a busy footer, so waiting
// comes first; a busy footer beats the idle hints that stay on screen.
var claudeRules = pane.Rules{
	{Name: "claude-permission", State: pane.Waiting, Match: `Do you want to (proceed|make this edit|create)|Esc to cancel · Tab to amend|❯ 1\. Yes`, Last: 14},
	{Name: "claude-trust-dialog", State: pane.Waiting, Match: `Yes, I trust this folder|Do you want to use this API key|Yes, I accept`, Last: 20},
	{Name: "claude-busy-footer", State: pane.Busy, Match: `esc to interrupt`, Last: 6},
	{Name: "claude-retrying", State: pane.Busy, Match: `retrying in \d+s · attempt \d+`, Last: 10},
	{Name: "claude-idle-footer", State: pane.Idle, Match: `\? for shortcuts|⏵⏵ |⏸ |shift\+tab to cycle`, Last: 6},
	{Name: "claude-idle-prompt", State: pane.Idle, Match: `^\s*❯\s*$|^│ >\s*│?$`, Last: 8},
}
