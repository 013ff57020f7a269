package cliagent

import (
	"cmp"
	"path/filepath"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
)

// qwen is Qwen Code, a Gemini CLI fork that speaks OpenAI Chat
// Completions. Its config folder is QWEN_HOME (settings.json); its signals
// are its hooks, which take Claude Code's format and payloads.
func init() { register(qwen) }

var qwen = Kind{
	Name: "qwen", Title: "Qwen Code", Bin: "qwen", Package: "@qwen-code/qwen-code", Version: "0.24.4", APIs: []string{"chat"},
	EnterDelay: 200 * time.Millisecond,
	prepare:    prepareQwen, interpret: interpretQwen, prompts: true, rules: qwenRules, layout: qwenLayout, aux: qwenAux,
	// Its dialogs are Gemini CLI's.
	answer: geminiAnswer,
	// It names an MCP server's tools as Claude Code does.
	toolName: claudeToolName,
	// Its hooks carry "session_id", as Claude Code's; `qwen --resume <id>`.
	session: sessionField, resume: resumeWith("--resume"),
	// QWEN.md in QWEN_HOME: its global context file.
	guidance: guidanceIn("qwen", "QWEN.md"),
}

// qwenHookEvents are the Qwen Code hook events wired to `cicy-agent hook`.
var qwenHookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "StopFailure", "Notification", "PermissionRequest"}

// qwenModel is the model a pane that names none asks the gateway for.
const qwenModel = "gpt-5"

// prepareQwen seeds QWEN_HOME: the hooks wired, the permission policy
// (--approval-mode: "default" asks before a tool that changes anything,
// "yolo" runs every tool), no update check, usage statistics, telemetry,
// follow-up suggestions, welcome-back or feedback dialogs, no managed
// memory (each of those is a model request of its own or a dialog), and a
// master's team tools (see geminiMCP). The gateway is its OpenAI endpoint.
func prepareQwen(a Setup) ([]string, []string, error) {
	dir := filepath.Join(a.Dir, "qwen")
	model := cmp.Or(a.Model, qwenModel)
	mode := approvalMode(a.AllowAll)
	settings := map[string]any{
		"hooks":     hooksBlock(a.Self, "qwen", qwenHookEvents),
		"general":   map[string]any{"enableAutoUpdate": false, "showSessionRecap": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"memory":    map[string]any{"enableManagedAutoMemory": false},
		// The bundled ripgrep may lack its exec bit; the built-in search
		// needs none.
		"tools": map[string]any{"approvalMode": mode, "useRipgrep": false},
		"ui": map[string]any{
			"autoModeAcknowledged": true, "hideTips": true, "enableFollowupSuggestions": false,
			"enableWelcomeBack": false, "enableUserFeedback": false, "mouseTracking": false,
		},
	}
	if a.MCP != nil {
		settings["mcpServers"] = geminiMCP(a.MCP)
		// Qwen Code defers an MCP server's tools behind its tool search
		// by default; the team tools are offered up front.
		var visible []string
		for _, t := range a.MCP.Tools {
			visible = append(visible, claudeToolName(t))
		}
		settings["tools"].(map[string]any)["visible"] = visible
	}
	if err := writeJSONFile(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, nil, err
	}
	env := append([]string{
		"QWEN_HOME=" + dir, "OPENAI_BASE_URL=" + a.Gateway + "/v1", "OPENAI_API_KEY=" + a.Token, "OPENAI_MODEL=" + model,
	}, quietEnv...)
	argv := []string{"qwen", "--approval-mode", mode, "--model", model}
	return append(argv, a.Extra...), env, nil
}

// qwenPayload holds the fields of a Qwen Code hook's payload that matter
// besides Claude Code's.
type qwenPayload struct {
	Prompt *string `json:"prompt"`
}

// interpretQwen maps a Qwen Code hook to its effect: Claude Code's
// meanings (its SessionStart too comes before its prompt takes input:
// text typed then is lost, seen with a slow start), but for the
// UserPromptSubmit it also sends, with an empty prompt, when it goes on
// after a tool's result — the same turn, no new prompt.
func interpretQwen(event string, payload []byte) Effect {
	switch event {
	case "SessionStart":
		return Effect{Ignored: "SessionStart comes before Qwen Code's prompt takes input"}
	case "UserPromptSubmit":
		var p qwenPayload
		decode(payload, &p)
		if p.Prompt != nil && *p.Prompt == "" {
			return Effect{State: pane.Busy}
		}
	}
	return claudeHooks("qwen", event, payload)
}

// qwenRules are Qwen Code's built-in screen rules, from the screens of
// Qwen Code 0.24 (tested against cmd/cicy-agent/testdata/screens), each
// reading one part of its layout (see qwenLayout): a confirmation or a
// question is waiting; the spinner line's "esc to cancel" or the busy
// footer's steering hints are busy; the idle footer or prompt idle.
var qwenRules = pane.Rules{
	{Name: "qwen-confirm", State: pane.Waiting, Part: pane.PartDialog, Match: `Waiting for user confirmation|Yes, allow once|No, suggest changes`},
	{Name: "qwen-question", State: pane.Waiting, Part: pane.PartDialog, Match: `Enter to (select|confirm|submit)|↑/↓ to navigate|›\s+\d+\.`},
	{Name: "qwen-spinner", State: pane.Busy, Part: pane.PartStatus, Match: `esc to cancel\)`},
	{Name: "qwen-busy-footer", State: pane.Busy, Part: pane.PartFooter, Match: `Enter to steer|Ctrl\+Q to queue`},
	{Name: "qwen-menu", State: pane.Idle, Part: pane.PartMenu, Match: `\S`},
	{Name: "qwen-idle-footer", State: pane.Idle, Part: pane.PartFooter, Match: `shift \+ tab to cycle|\? for shortcuts`},
	{Name: "qwen-idle-prompt", State: pane.Idle, Part: pane.PartComposer, Match: `^[>!*] `},
}

// Qwen Code's layout, from the bottom: the footer (the folder and model,
// the approval mode; "Enter to steer · Ctrl+Q to queue" while it works)
// under the composer, the prompt (> , or * in YOLO mode, ! in shell mode)
// between two full-width ─ rules; right above the composer, while it
// works, the spinner line ("⠏ Verbing... (2s · esc to cancel)"). A menu
// (the slash commands, the shortcuts panel) takes the footer's place. A
// confirmation or a question replaces the composer: it runs from its
// header (a "?" line) to the bottom. So does a picker a person opened
// (/model), a menu: its box's key hints say "Esc to close".
const (
	qwenBelowMax    = 30 // lines under the composer (footer or menu) at most
	qwenComposerMax = 30 // lines of the composer at most
	qwenStatusMax   = 4  // lines of the spinner's block at most
	qwenDialogMax   = 40 // lines of a dialog at most
)

// qwenLayout finds the parts of a Qwen Code screen.
func qwenLayout(lines []string) []pane.Span {
	end := lastLine(lines)
	for up := end - 2; up >= 0 && up >= end-qwenBelowMax-qwenComposerMax; up-- {
		if !isRule(lines[up], '─') || !qwenPrompt(lines[up+1]) {
			continue
		}
		lo := up + 1
		for lo < end && lo <= up+qwenComposerMax && !isRule(lines[lo], '─') {
			lo++
		}
		if lo == end || lo > up+qwenComposerMax || end-lo-1 > qwenBelowMax {
			break
		}
		composer := pane.Span{Part: pane.PartComposer, From: up, To: lo + 1}
		below := pane.Span{Part: pane.PartFooter, From: lo + 1, To: end}
		if lo+1 < end && !strings.HasPrefix(lines[lo+1], "  ➜ ") {
			below.Part = pane.PartMenu
		}
		top := qwenStatus(lines, up)
		return spans(top, pane.Span{Part: pane.PartStatus, From: top, To: up}, composer, below)
	}
	top := qwenDialog(lines, end)
	if escCloses(lines, top, end) {
		return spans(top, pane.Span{Part: pane.PartMenu, From: top, To: end})
	}
	return spans(top, pane.Span{Part: pane.PartDialog, From: top, To: end})
}

// qwenPrompt reports whether a line is the composer's first: its prompt
// glyph at column 0, then a space.
func qwenPrompt(l string) bool {
	return len(l) >= 2 && strings.ContainsRune(">*!", rune(l[0])) && l[1] == ' '
}

// qwenStatus is where the spinner's block right above the composer (whose
// top rule is up) starts; up when the block is not the spinner's.
func qwenStatus(lines []string, up int) int {
	top := blockAbove(lines, up)
	if top < up-qwenStatusMax {
		return up
	}
	for _, l := range lines[top:up] {
		if strings.Contains(l, "esc to cancel") {
			return top
		}
	}
	return up
}

// qwenDialog is where the dialog that ends at end starts: its header, a
// "?" line at column 2 (a tool's confirmation) or a box's top corner; the
// last block when there is neither.
func qwenDialog(lines []string, end int) int {
	for i := end - 1; i >= 0 && i >= end-qwenDialogMax; i-- {
		t := strings.TrimLeft(lines[i], " ")
		if strings.HasPrefix(lines[i], "  ? ") || strings.HasPrefix(t, "╭") {
			return i
		}
	}
	return blockAbove(lines, end)
}

// qwenAux are Qwen Code's side calls, each one off in the pane's settings
// but on by default for a user's own runs: the follow-up suggestion (a
// request with the turn's tools whose last user text asks for one) and
// the managed memory's extraction agent.
var qwenAux = []AuxRule{
	{"suggestion", func(f *Fingerprint) bool { return strings.HasPrefix(f.LastUser, "[SUGGESTION MODE:") }},
	{"memory", systemStarts("You are now acting as the managed memory extraction subagent")},
}
