package cliagent

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/pane"
)

// codex is OpenAI's Codex CLI. Its config folder is CODEX_HOME; its
// signals are its hooks (in Claude Code's format) and its notify program.
func init() { register(codex) }

var codex = Kind{
	Name: "codex", Title: "Codex", Bin: "codex", Package: "@openai/codex", Version: "0.171.0", APIs: []string{"responses"},
	EnterDelay: 300 * time.Millisecond,
	prepare:    prepareCodex, interpret: interpretCodex, prompts: true, rules: codexRules, layout: codexLayout, aux: codexAux,
	// How its dialogs are answered and read (answer.go).
	answer: answerSpec{approve: []string{"y"}, deny: []string{"Escape"}, option: digit, approval: regexp.MustCompile(`^Would you like to`)},
	// Codex offers an MCP server's tools as one namespace, mcp__<server>.
	toolName: func(tool string) string { return "mcp__" + MCPName + "." + tool },
	// Its hooks carry "session_id" (notify's "thread-id" is also the
	// hidden thread-title thread's). `codex resume <id>` is a subcommand
	// that takes the same options.
	session: codexSession, resume: resumeWith("resume"),
	// AGENTS.md in CODEX_HOME: its global instructions.
	guidance: guidanceIn("codex", "AGENTS.md"),
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
// ours), and a master's team tools (see codexMCP).
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
	if a.MCP != nil {
		c.WriteString(codexMCP(a.MCP))
	}
	if err := atomicfile.WritePrivate(filepath.Join(dir, "config.toml"), []byte(c.String())); err != nil {
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

// codexMCP is a master's team tools for Codex: the server's
// [mcp_servers] table, its environment given in full (Codex passes a
// server only a few of its own variables), its tools approved
// (default_tools_approval_mode "approve": no prompt, whatever the
// approval policy) and allowed to run long.
func codexMCP(m *MCPServer) string {
	var c strings.Builder
	cmd, args := m.command()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = tomlString(a)
	}
	fmt.Fprintf(&c, "\n[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n", MCPName, tomlString(cmd), strings.Join(quoted, ", "))
	var env []string
	for _, k := range slices.Sorted(maps.Keys(m.Env)) {
		env = append(env, tomlString(k)+" = "+tomlString(m.Env[k]))
	}
	fmt.Fprintf(&c, "env = { %s }\n", strings.Join(env, ", "))
	fmt.Fprintf(&c, "default_tools_approval_mode = \"approve\"\ntool_timeout_sec = %d\n", int(mcpToolTimeout.Seconds()))
	return c.String()
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

// codexSession is the session id of a Codex hook; notify is not read.
func codexSession(event string, payload []byte) string {
	if event == "notify" {
		return ""
	}
	return sessionField(event, payload)
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
// 0.171 (tested against cmd/cicy-agent/testdata/screens), each reading one
// part of its layout (see codexLayout): a dialog is waiting, the status
// line busy, a menu or the composer with its footer idle.
var codexRules = pane.Rules{
	{Name: "codex-approval", State: pane.Waiting, Part: pane.PartDialog, Match: `Would you like to`},
	{Name: "codex-confirm", State: pane.Waiting, Part: pane.PartDialog, Match: `Press enter to (confirm|continue)|esc to cancel`},
	{Name: "codex-choice", State: pane.Waiting, Part: pane.PartDialog, Match: `^› \d+\. `},
	{Name: "codex-dialog", State: pane.Waiting, Part: pane.PartDialog, Match: `Trust this folder|Hooks need review|Try new model`},
	// The plan-mode question (request_user_input): its key hints close
	// the dialog, under the indented "› 1." choices.
	{Name: "codex-question", State: pane.Waiting, Part: pane.PartDialog, Match: `enter to submit`, Last: 3},
	{Name: "codex-busy", State: pane.Busy, Part: pane.PartStatus, Match: `esc to interrupt`},
	{Name: "codex-busy-footer", State: pane.Busy, Part: pane.PartFooter, Match: `esc to interrupt`},
	{Name: "codex-menu", State: pane.Idle, Part: pane.PartMenu, Match: `^(› |  )/\w|Keyboard shortcuts|esc close|esc back`},
	{Name: "codex-idle", State: pane.Idle, Part: pane.PartFooter, Match: `\? for shortcuts|context left|for agents|esc close|esc again to edit|esc back`},
	{Name: "codex-idle-prompt", State: pane.Idle, Part: pane.PartComposer, Match: `^›`},
}

// Codex's layout, from the bottom: the footer (model, folder, hints), a
// blank line, the composer (› with the draft or its placeholder, its
// continuation lines indented), and above it, while Codex works, the
// status line ("• Working (3s • esc to interrupt)"). A menu sits above
// the composer instead: the slash-command or file-mention popup while the
// draft starts with "/" or "@" (the footer then shows only model and
// folder), or the shortcut overlay ("Keyboard shortcuts", "? / esc close"
// in the footer).
// A dialog (an approval, a question) replaces composer and footer:
// indented lines and a "› 1." choice list down to the bottom. A picker a
// person opened (/model, /permissions) looks like one but ends with its
// own key hints, "enter select · esc back": it is a menu. After Escape at
// the empty composer the footer's hints make way for "esc again to edit
// previous message", and for the transcript browser's ("Browsing
// transcript · … · esc back") after a second Escape.
var (
	// codexStatusLine is the status line at column 0: a glyph, a header
	// of plain words, the time in parentheses.
	codexStatusLine = regexp.MustCompile(`^[•◦] [^()•◦]+ \((\d+[hms] )*\d+[hms]\b`)
	codexChoice     = regexp.MustCompile(`^› \d+\. `)
	// codexPickerKeys are the key hints that close a picker a person
	// opened with a slash command.
	codexPickerKeys = regexp.MustCompile(`^ +enter select · esc back`)
	// codexCommand is an entry of the slash-command popup, "› " marking
	// the one selected.
	codexCommand = regexp.MustCompile(`^(› |  )/[\w-]+( {2,}\S|$)`)
)

// codexFooterHints is the footer's fixed vocabulary.
var codexFooterHints = []string{"? for shortcuts", "context left", "for agents", " to view", "to send", "newline", "to queue", "esc to interrupt", "ctrl + c", "ctrl+c", "⌃", "esc close", "esc again to edit", "esc back"}

const (
	// codexStatusGap is how many blank lines separate the status line
	// from the composer at most.
	codexStatusGap = 3
	// codexOverlayMax is how many lines the shortcut overlay takes above
	// the composer at most.
	codexOverlayMax = 40
	// codexMenuHeaders is how many lines of headers a menu has above its
	// entries at most.
	codexMenuHeaders = 12
)

// codexLayout finds the parts of a Codex screen.
func codexLayout(lines []string) []pane.Span {
	end := lastLine(lines)
	if end == 0 {
		return nil
	}
	if codexPickerKeys.MatchString(lines[end-1]) {
		top := codexDialogTop(lines, end)
		return spans(top, pane.Span{Part: pane.PartMenu, From: top, To: end})
	}
	foot := blockAbove(lines, end-1)
	ce := pane.LastNonBlank(lines, foot-1) + 1
	if ce > 0 {
		c := blockAbove(lines, ce-1)
		composer := pane.Span{Part: pane.PartComposer, From: c, To: ce}
		footer := pane.Span{Part: pane.PartFooter, From: foot, To: end}
		switch {
		case !startsWithGlyph(lines[c], '›'):
		case codexHints(lines[foot:end]):
			if m := codexOverlay(lines, c, foot, end); m.To > m.From {
				status, m := codexMenuStatus(lines, m)
				return spans(status.From, status, m, composer, footer)
			}
			status := codexStatus(lines, c)
			return spans(status.From, status, composer, footer)
		default:
			// The footer loses its hints while a popup shows right above
			// the composer: the slash commands, or the file mentions
			// under their own key hints.
			if m := codexPopup(lines, c); m.To > m.From {
				status, m := codexMenuStatus(lines, m)
				return spans(status.From, status, m, composer, footer)
			}
		}
	}
	// No composer: a dialog.
	top := codexDialogTop(lines, end)
	return spans(top, pane.Span{Part: pane.PartDialog, From: top, To: end})
}

// codexDialogTop is where a dialog or picker ending at end starts: the
// indented lines, choices and scroll marks ("↓") above the bottom, up to
// the transcript's last entry.
func codexDialogTop(lines []string, end int) int {
	top := end - 1
	for i := end - 2; i >= 0; i-- {
		l := lines[i]
		if !pane.Blank(l) && indent(l) == 0 && !codexChoice.MatchString(l) && !codexScrollMark(l) {
			break
		}
		if !pane.Blank(l) {
			top = i
		}
	}
	return top
}

// codexScrollMark reports whether a line is only the arrow a long list
// shows where it goes on.
func codexScrollMark(l string) bool {
	t := strings.TrimSpace(l)
	return t == "↓" || t == "↑"
}

// codexStatus is the status line above line below (the composer, or a
// menu over it) while Codex works: the block it starts, ending at most
// codexStatusGap lines above below; an empty span at below when there is
// none.
func codexStatus(lines []string, below int) pane.Span {
	if sl := pane.LastNonBlank(lines, below-1); sl >= 0 && below-sl <= codexStatusGap {
		if b := blockAbove(lines, sl); codexStatusLine.MatchString(lines[b]) {
			return pane.Span{Part: pane.PartStatus, From: b, To: sl + 1}
		}
	}
	return pane.Span{Part: pane.PartStatus, From: below, To: below}
}

// codexMenuStatus is the status line above a menu m, which may have
// headers above it (the mention popup's "Mentions" while Codex works):
// the status line up to codexMenuHeaders indented lines above it, the
// menu then growing up to just under it. Without one, m and an empty
// status.
func codexMenuStatus(lines []string, m pane.Span) (status, menu pane.Span) {
	for i := m.From - 1; i >= 0 && i >= m.From-codexMenuHeaders; i-- {
		l := lines[i]
		if pane.Blank(l) || indent(l) > 0 {
			continue
		}
		if b := blockAbove(lines, i); codexStatusLine.MatchString(lines[b]) {
			if next := i + 1; next < m.From {
				for pane.Blank(lines[next]) {
					next++
				}
				m.From = next
			}
			return pane.Span{Part: pane.PartStatus, From: b, To: i + 1}, m
		}
		break
	}
	return pane.Span{Part: pane.PartStatus, From: m.From, To: m.From}, m
}

// codexPopup is the popup right above the composer at c, one blank line
// between: the slash-command entries (and their wrapped, deeper indented
// descriptions) while the draft starts with "/"; or, while it starts
// with "@", the file mentions' key hints ("enter/tab insert · esc close")
// and the block of entries above them. Empty when there is none.
func codexPopup(lines []string, c int) pane.Span {
	to := pane.LastNonBlank(lines, c-1) + 1
	if to == 0 || c-to != 1 {
		return pane.Span{}
	}
	switch {
	case strings.HasPrefix(lines[c], "› @") && strings.Contains(lines[to-1], "esc close"):
		from := to - 1
		if i := pane.LastNonBlank(lines, from-1); i >= 0 && from-i <= codexStatusGap+1 {
			from = blockAbove(lines, i)
		}
		return pane.Span{Part: pane.PartMenu, From: from, To: to}
	case !strings.HasPrefix(lines[c], "› /"):
		return pane.Span{}
	}
	from := to
	for i := to - 1; i >= 0; i-- {
		l := lines[i]
		if codexCommand.MatchString(l) {
			from = i
		} else if pane.Blank(l) || indent(l) < 4 {
			break
		}
	}
	return pane.Span{Part: pane.PartMenu, From: from, To: to}
}

// codexOverlay is the shortcut overlay above the composer at c, while the
// footer (foot to end) offers to close it: from its "Keyboard shortcuts"
// title down to the composer; empty when the footer does not.
func codexOverlay(lines []string, c, foot, end int) pane.Span {
	if !slices.ContainsFunc(lines[foot:end], func(l string) bool { return strings.Contains(l, "esc close") }) {
		return pane.Span{}
	}
	to := pane.LastNonBlank(lines, c-1) + 1
	for i := to - 1; i >= 0 && i >= c-codexOverlayMax; i-- {
		if strings.HasPrefix(lines[i], "  Keyboard shortcuts") {
			return pane.Span{Part: pane.PartMenu, From: i, To: to}
		}
	}
	return pane.Span{Part: pane.PartMenu, From: blockAbove(lines, max(to-1, 0)), To: to}
}

// codexHints reports whether lines hold the footer's vocabulary.
func codexHints(lines []string) bool {
	for _, l := range lines {
		for _, h := range codexFooterHints {
			if strings.Contains(l, h) {
				return true
			}
		}
	}
	return false
}

// codexAux are Codex's side calls: the TUI's thread-title request, marked
// in x-codex-turn-metadata (thread_source "thread_title", or a
// request_kind other than "turn"), whose prompt starts "Generate a
// concise".
var codexAux = []AuxRule{
	{"title", func(f *Fingerprint) bool { return codexMeta(f.Header).ThreadSource == "thread_title" }},
	{"title", func(f *Fingerprint) bool { return strings.HasPrefix(f.LastUser, "Generate a concise") }},
	{"compact", func(f *Fingerprint) bool {
		kind := codexMeta(f.Header).RequestKind
		return kind != "" && kind != "turn"
	}},
}

// codexTurnMeta is the part of Codex's x-codex-turn-metadata header the
// side-call rules read.
type codexTurnMeta struct {
	ThreadSource string `json:"thread_source"`
	RequestKind  string `json:"request_kind"`
}

// codexMeta decodes x-codex-turn-metadata; absent or odd, it is empty.
func codexMeta(h http.Header) codexTurnMeta {
	var m codexTurnMeta
	if v := h.Get("X-Codex-Turn-Metadata"); v != "" {
		_ = json.Unmarshal([]byte(v), &m) // not JSON: no fingerprint
	}
	return m
}
