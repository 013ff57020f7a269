package cliagent

import (
	"cmp"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/pane"
)

// gemini is Gemini CLI, which speaks the Gemini API. Its config folder is
// GEMINI_CLI_HOME (it reads $GEMINI_CLI_HOME/.gemini/settings.json); its
// signals are its hooks (BeforeAgent, AfterAgent, Notification, …, in
// Claude Code's format but for the names, their timeouts in ms).
func init() { register(gemini) }

var gemini = Kind{
	Name: "gemini", Title: "Gemini CLI", Bin: "gemini", Package: "@google/gemini-cli", Version: "0.61.0", APIs: []string{"gemini"},
	// Its paste guard turns an Enter that comes right after a paste into a
	// newline.
	EnterDelay: 500 * time.Millisecond,
	prepare:    prepareGemini, interpret: interpretGemini, prompts: true, rules: geminiRules, layout: geminiLayout, aux: geminiAux,
	answer: geminiAnswer,
	// An MCP tool is offered as mcp_<server>_<tool>.
	toolName: func(tool string) string { return "mcp_" + MCPName + "_" + tool },
	// Its hooks carry "session_id"; `gemini --resume <uuid>` (it also
	// takes "latest" or an index).
	session: sessionField, resume: resumeWith("--resume"),
	// GEMINI.md in GEMINI_CLI_HOME/.gemini: its global context file.
	guidance: guidanceIn("gemini", ".gemini", "GEMINI.md"),
}

// geminiAnswer is how Gemini CLI's dialogs (and those of its fork Qwen
// Code) are answered and read (answer.go).
var geminiAnswer = answerSpec{approve: []string{"1"}, deny: []string{"Escape"}, option: digit, approval: regexp.MustCompile(`^(Allow execution|Apply this change|Do you want to)`)}

// geminiHookEvents are the Gemini CLI hook events wired to `cicy-agent
// hook`.
var geminiHookEvents = []string{"SessionStart", "BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool", "Notification"}

// geminiModel is the model a pane that names none asks the gateway for.
// Naming one also keeps Gemini CLI from routing each prompt with a
// classifier request of its own (its "auto" model).
const geminiModel = "gemini-2.5-pro"

// geminiHookTimeout bounds one hook run (Gemini CLI counts in ms): its
// own default, as a loaded machine was seen to take more than 10 s.
const geminiHookTimeout = 60 * time.Second

// prepareGemini seeds GEMINI_CLI_HOME: the gateway's key as its auth
// method (no sign-in dialog), the workspace trusted (no trust dialog; its
// hooks run only in a trusted folder), the hooks wired (their on-screen
// notice while one runs says busy, "esc to cancel"), the approval mode ("default" asks before a tool that
// changes anything, "yolo" runs every tool), a named model, no update
// check, usage statistics, telemetry, tips or banner, and a master's team
// tools (see geminiMCP). The gateway is its Gemini endpoint.
func prepareGemini(a Setup) ([]string, []string, error) {
	dir := filepath.Join(a.Dir, "gemini")
	model := cmp.Or(a.Model, geminiModel)
	mode := approvalMode(a.AllowAll)
	settings := map[string]any{
		"security":    map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"general":     map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":     map[string]any{"usageStatisticsEnabled": false},
		"telemetry":   map[string]any{"enabled": false},
		"model":       map[string]any{"name": model},
		"ui":          map[string]any{"hideTips": true, "hideBanner": true},
		"tools":       map[string]any{"useRipgrep": false},
		"hooksConfig": map[string]any{"enabled": true},
		"hooks":       geminiHooks(a.Self),
	}
	if a.MCP != nil {
		settings["mcpServers"] = geminiMCP(a.MCP)
	}
	conf := filepath.Join(dir, ".gemini")
	if err := writeJSONFile(filepath.Join(conf, "settings.json"), settings); err != nil {
		return nil, nil, err
	}
	trusted := map[string]any{a.Workspace: "TRUST_FOLDER"}
	if err := writeJSONFile(filepath.Join(conf, "trustedFolders.json"), trusted); err != nil {
		return nil, nil, err
	}
	env := append([]string{
		"GEMINI_CLI_HOME=" + dir, "GOOGLE_GEMINI_BASE_URL=" + a.Gateway, "GEMINI_API_KEY=" + a.Token,
	}, quietEnv...)
	argv := []string{"gemini", "--approval-mode", mode, "--model", model}
	return append(argv, a.Extra...), env, nil
}

// geminiHooks is the "hooks" setting: each event runs `cicy-agent hook`,
// its timeout in ms.
func geminiHooks(self string) map[string]any {
	hooks := map[string]any{}
	for _, ev := range geminiHookEvents {
		entry := map[string]any{"hooks": []map[string]any{{
			"type": "command", "command": hookCommand(self, "gemini", ev), "timeout": geminiHookTimeout.Milliseconds(),
		}}}
		if ev == "BeforeTool" || ev == "AfterTool" {
			entry["matcher"] = "*"
		}
		hooks[ev] = []any{entry}
	}
	return hooks
}

// approvalMode is the --approval-mode of Gemini CLI and its fork Qwen
// Code: "default" asks before a tool that changes anything, "yolo" runs
// every tool.
func approvalMode(allowAll bool) string {
	if allowAll {
		return "yolo"
	}
	return "default"
}

// geminiMCP is a master's team tools for Gemini CLI and its fork Qwen
// Code: the server in settings.json's "mcpServers", trusted (its calls
// need no confirmation) and allowed to run long ("timeout" in ms; Qwen
// Code's default is 10 minutes).
func geminiMCP(m *MCPServer) map[string]any {
	cmd, args := m.command()
	return map[string]any{MCPName: map[string]any{
		"command": cmd, "args": args, "env": m.Env, "trust": true, "timeout": mcpToolTimeout.Milliseconds(),
	}}
}

// geminiPayload holds the fields of a Gemini CLI hook's payload that
// matter.
type geminiPayload struct {
	Response         string `json:"prompt_response"`
	NotificationType string `json:"notification_type"`
}

// interpretGemini maps a Gemini CLI hook to its effect: BeforeAgent is a
// prompt taken, BeforeTool and AfterTool work, AfterAgent the turn's end
// with its answer, a ToolPermission notification a question for a person.
// SessionStart comes before its prompt takes input, so its screen tells
// when it is ready. A failed turn fires no hook: the gateway tells it.
func interpretGemini(event string, payload []byte) Effect {
	var p geminiPayload
	decode(payload, &p)
	switch event {
	case "SessionStart":
		return Effect{Ignored: "SessionStart comes before Gemini CLI's prompt takes input"}
	case "BeforeAgent":
		return Effect{State: pane.Busy, Prompt: true}
	case "BeforeTool", "AfterTool":
		return Effect{State: pane.Busy}
	case "AfterAgent":
		return Effect{State: pane.Idle, End: true, Result: p.Response}
	case "Notification":
		if p.NotificationType == "ToolPermission" {
			return Effect{State: pane.Waiting}
		}
		return Effect{Ignored: "notification " + p.NotificationType}
	}
	return unused("gemini", event)
}

// geminiRules are Gemini CLI's built-in screen rules, from the screens of
// Gemini CLI 0.61 (tested against cmd/cicy-agent/testdata/screens), each
// reading one part of its layout (see geminiLayout): a confirmation or a
// question is waiting; the spinner line's "esc to cancel" is busy; a
// menu, the status line's shortcut hint, the footer or the prompt idle.
var geminiRules = pane.Rules{
	{Name: "gemini-confirm", State: pane.Waiting, Part: pane.PartDialog, Match: `Allow execution|Allow once|Apply this change|Waiting for user confirmation`},
	{Name: "gemini-question", State: pane.Waiting, Part: pane.PartDialog, Match: `Enter to (select|confirm|submit)|● \d+\.`},
	{Name: "gemini-spinner", State: pane.Busy, Part: pane.PartStatus, Match: `esc to cancel|^ [\x{2801}-\x{28FF}] `},
	{Name: "gemini-menu", State: pane.Idle, Part: pane.PartMenu, Match: `\S`},
	{Name: "gemini-idle-footer", State: pane.Idle, Part: pane.PartFooter, Match: `sandbox|/model`},
	{Name: "gemini-idle-status", State: pane.Idle, Part: pane.PartStatus, Match: `\? for shortcuts`},
	{Name: "gemini-idle-prompt", State: pane.Idle, Part: pane.PartComposer, Match: `^ [>*!] `},
}

// Gemini CLI's layout, from the bottom: the footer (the workspace, the
// sandbox, the model) under the composer, which starts with a full-width ─
// rule, the approval mode's line, and the prompt (" > ", " * " in YOLO
// mode, " ! " in shell mode) with the draft under it; a menu (slash
// commands, mentions) between the prompt and the footer. Right above the
// rule the status line: the spinner ("⠸ Thinking... (esc to cancel, 4s)")
// while it works, "? for shortcuts" at its right end. A confirmation or a
// question replaces the composer: a box from its ╭ corner to the bottom.
// So does a picker a person opened (/model), a menu: its box's key hints
// say "Esc to close".
const (
	geminiBelowMax  = 30 // lines from the composer's rule to the bottom at most
	geminiPromptGap = 6  // lines from the rule to the prompt at most (a narrow screen wraps the mode line)
	geminiStatusMax = 3  // lines of the status block at most
	geminiDialogMax = 40 // lines of a dialog at most
)

// geminiLayout finds the parts of a Gemini CLI screen.
func geminiLayout(lines []string) []pane.Span {
	end := lastLine(lines)
	for up := end - 2; up >= 0 && up >= end-geminiBelowMax; up-- {
		if !isRule(lines[up], '─') {
			continue
		}
		p := geminiPromptBelow(lines, up, end)
		if p < 0 {
			continue
		}
		draft := p + 1
		for draft < end && (pane.Blank(lines[draft]) || strings.HasPrefix(lines[draft], "   ")) {
			draft++
		}
		foot := draft
		for foot < end && !geminiFooter(lines[foot]) {
			foot++
		}
		top := geminiStatus(lines, up)
		return spans(top, pane.Span{Part: pane.PartStatus, From: top, To: up},
			pane.Span{Part: pane.PartComposer, From: up, To: draft},
			pane.Span{Part: pane.PartMenu, From: draft, To: foot},
			pane.Span{Part: pane.PartFooter, From: foot, To: end})
	}
	top := geminiDialog(lines, end)
	if escCloses(lines, top, end) {
		return spans(top, pane.Span{Part: pane.PartMenu, From: top, To: end})
	}
	return spans(top, pane.Span{Part: pane.PartDialog, From: top, To: end})
}

// geminiPromptBelow is the prompt line under the rule at up, or -1.
func geminiPromptBelow(lines []string, up, end int) int {
	for i := up + 1; i < end && i <= up+geminiPromptGap; i++ {
		if l := lines[i]; len(l) >= 3 && l[0] == ' ' && strings.ContainsRune(">*!", rune(l[1])) && l[2] == ' ' {
			return i
		}
	}
	return -1
}

// geminiFooter reports whether a line is the footer's first: its
// headings, or at a narrow width the folder.
func geminiFooter(l string) bool {
	return strings.HasPrefix(l, " workspace (") || strings.HasPrefix(l, " ~") || strings.HasPrefix(l, " /")
}

// geminiStatus is where the status right above the composer (whose rule
// is up) starts: its topmost spinner line (a braille glyph at column 1; a
// narrow screen cuts its "esc to cancel" off, and wraps "? for shortcuts"
// under it or leaves it out), hint line or hook notice, blank lines
// between them; up when there is none. A transcript line ends it.
func geminiStatus(lines []string, up int) int {
	top := up
	for i := up - 1; i >= 0 && i >= up-geminiStatusMax; i-- {
		l := lines[i]
		switch {
		case geminiSpinner(l) || strings.HasPrefix(strings.TrimLeft(l, " "), "? for shortcuts") || strings.HasPrefix(l, "  Executing Hook"):
			top = i
		case !pane.Blank(l):
			return top
		}
	}
	return top
}

// geminiSpinner reports whether a line is the spinner's: a space, a
// braille glyph, a space.
func geminiSpinner(l string) bool {
	r, n := utf8.DecodeRuneInString(strings.TrimPrefix(l, " "))
	return strings.HasPrefix(l, " ") && r > 0x2800 && r <= 0x28FF && strings.HasPrefix(l[1+n:], " ")
}

// geminiDialog is where the dialog that ends at end starts: the ╭ corner
// of its box at column 0; the last block when there is none.
func geminiDialog(lines []string, end int) int {
	for i := end - 1; i >= 0 && i >= end-geminiDialogMax; i-- {
		if strings.HasPrefix(lines[i], "╭") {
			return i
		}
	}
	return blockAbove(lines, end)
}

// geminiAux are Gemini CLI's side calls: the model router's classifier
// (its "auto" model; a pane names its model, so it is not sent), the
// check of who speaks next, the session's one-line summary, and the
// history's compression.
var geminiAux = []AuxRule{
	{"route", systemStarts("You are a specialized Task Routing AI")},
	{"next_speaker", func(f *Fingerprint) bool {
		return strings.HasPrefix(f.LastUser, "Analyze *only* the content and structure of your immediately preceding response")
	}},
	{"title", func(f *Fingerprint) bool {
		return strings.HasPrefix(f.LastUser, "Summarize the user's primary intent or goal in this conversation")
	}},
	{"compact", systemStarts("You are a specialized system component responsible for distilling chat history")},
}
