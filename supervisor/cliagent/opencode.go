package cliagent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/pane"
)

// opencode is opencode. Its config is the pane's own opencode.json
// (OPENCODE_CONFIG) and a config folder shared by the home's opencode
// panes; its signals are the events a plugin forwards.
func init() { register(opencode) }

var opencode = Kind{
	// As configured (opencodeAPI): Anthropic Messages or Chat Completions.
	Name: "opencode", Title: "opencode", Bin: "opencode", Package: "opencode-ai", Version: opencodeVersion, APIs: []string{"anthropic", "chat"},
	EnterDelay: 100 * time.Millisecond,
	prepare:    prepareOpencode, interpret: interpretOpencode, prompts: true, rules: opencodeRules, layout: opencodeLayout, aux: opencodeAux,
	// How its dialogs are answered and read (answer.go).
	answer:   answerSpec{approve: []string{"Enter"}, deny: []string{"Escape"}, option: downEnter, approvalOption: rightEnter, approval: regexp.MustCompile(`Permission required`)},
	toolName: func(tool string) string { return MCPName + "_" + tool },
	// The plugin's events carry "sessionID" (a sub-agent's session is
	// marked "child"); `opencode --session <id>`.
	session: opencodeSession, resume: resumeWith("--session"),
	// Next to the pane's opencode.json, named in its "instructions".
	guidance: guidanceIn("opencode", "AGENTS.md"),
}

// opencodeVersion is the pinned opencode-ai, and the plugin SDK of the
// same version its config folder is seeded with.
const opencodeVersion = "1.18.33"

// opencodePlugin forwards opencode's events to `cicy-agent hook` (its
// send is jsHookSend's); it remembers the last assistant text of each
// session, which opencode's session.idle does not carry.
const opencodePlugin = `// Written by cicy-agent: forwards opencode events to 'cicy-agent hook'.
import { spawn } from "node:child_process";

const BIN = %s;
const roles = {};
const last = {};
const children = {};

%s
export const CicyAgentHooks = async () => ({
  event: async ({ event }) => {
    const t = event.type;
    const pr = event.properties || {};
    const child = !!children[pr.sessionID];
    if (t === "message.updated" && pr.info) {
      roles[pr.info.id] = pr.info.role;
    } else if ((t === "session.created" || t === "session.updated") && pr.info) {
      // A sub-agent's session (the task tool's) has a parent.
      if (pr.info.parentID) children[pr.info.id] = true;
    } else if (t === "message.part.updated" && pr.part && pr.part.type === "text") {
      if (roles[pr.part.messageID] === "assistant") last[pr.part.sessionID] = pr.part.text;
    } else if (t === "session.status") {
      send(t, { sessionID: pr.sessionID, child, status: pr.status && pr.status.type });
    } else if (t === "session.idle") {
      send(t, { sessionID: pr.sessionID, child, last_assistant_message: last[pr.sessionID] || "" });
    } else if (t === "session.error") {
      send(t, { sessionID: pr.sessionID, child, error: JSON.stringify(pr.error || {}) });
    } else if (t === "permission.asked" || t === "permission.replied") {
      send(t, { ...pr, child });
    }
  },
});
`

// prepareOpencode seeds opencode: the pane's own opencode.json
// (OPENCODE_CONFIG: the gateway as its provider, no update or models
// fetch, the permission policy) and data folders, and a config folder
// shared by the home's opencode panes holding the event plugin (see
// seedOpencodeDeps).
func prepareOpencode(a Setup) ([]string, []string, error) {
	root := filepath.Join(a.Dir, "opencode")
	cfgDir := filepath.Join(a.Shared, "opencode", "config")
	own := filepath.Join(root, "opencode.json")
	if err := writeJSONFile(own, opencodeConfig(a)); err != nil {
		return nil, nil, err
	}
	bin, err := json.Marshal(a.Self)
	if err != nil {
		return nil, nil, fmt.Errorf("encode this program's path for the plugin: %w", err)
	}
	if err := atomicfile.WritePrivate(filepath.Join(cfgDir, "opencode", "plugin", "cicy-agent.js"), []byte(fmt.Sprintf(opencodePlugin, bin, jsHookSend("opencode")))); err != nil {
		return nil, nil, err
	}
	if err := seedOpencodeDeps(filepath.Join(cfgDir, "opencode")); err != nil {
		return nil, nil, err
	}
	env := append([]string{
		"OPENCODE_CONFIG=" + own, opencodeAPI(a.Getenv).keyVar + "=" + a.Token,
		"XDG_CONFIG_HOME=" + cfgDir, "XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_CACHE_HOME=" + filepath.Join(root, "cache"), "XDG_STATE_HOME=" + filepath.Join(root, "state"),
	}, quietEnv...)
	return append([]string{"opencode"}, a.Extra...), env, nil
}

// seedOpencodeDeps marks opencode's config folder dir as holding its
// plugin SDK. At every start opencode installs "@opencode-ai/plugin"
// into each config folder whose node_modules is missing or whose
// package-lock.json does not list it: npm's resolver in its own process,
// 9 s and 13 s of CPU with the npm registry at hand, a failure after its
// retries without one. Our plugin imports node's child_process only, so
// the folder is seeded as installed (node_modules, a package.json and
// the lock's root naming the package) once; what a user added stays.
func seedOpencodeDeps(dir string) error {
	mods := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(mods); err == nil {
		return nil
	}
	dep := map[string]any{"@opencode-ai/plugin": opencodeVersion}
	for name, doc := range map[string]any{
		"package.json":      map[string]any{"dependencies": dep},
		"package-lock.json": map[string]any{"name": "opencode", "lockfileVersion": 3, "requires": true, "packages": map[string]any{"": map[string]any{"dependencies": dep}}},
	} {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := writeJSONFile(path, doc); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(mods, 0o700); err != nil {
		return fmt.Errorf("seed opencode's config folder: %w", err)
	}
	return nil
}

// opencodeConfig is a pane's opencode.json: the gateway as its provider
// (see opencodeAPI), the model, the permission policy, and a master's
// team tools (see opencodeMCP).
func opencodeConfig(a Setup) map[string]any {
	api := opencodeAPI(a.Getenv)
	model := cmp.Or(a.Model, api.model)
	// No "$schema": opencode fetches it, and hangs at start offline.
	cfg := map[string]any{"autoupdate": false, "share": "disabled"}
	cfg["provider"] = map[string]any{"cicy": map[string]any{
		"npm": api.npm, "name": "cicy-agent gateway",
		"options": map[string]any{"baseURL": a.Gateway + "/v1", "apiKey": "{env:" + api.keyVar + "}"},
		"models":  map[string]any{model: map[string]any{"name": model, "tool_call": true}},
	}}
	cfg["model"], cfg["small_model"] = "cicy/"+model, "cicy/"+model
	perm := map[string]any{"bash": "ask", "edit": "ask", "webfetch": "ask", "external_directory": "ask"}
	if a.AllowAll {
		perm = map[string]any{"bash": "allow", "edit": "allow", "webfetch": "allow", "external_directory": "allow"}
	}
	cfg["permission"] = perm
	if a.Guidance != "" {
		cfg["instructions"] = []string{a.Guidance}
	}
	if a.MCP != nil {
		cfg["mcp"] = opencodeMCP(a.MCP)
		perm[MCPName+"_*"] = "allow"
	}
	return cfg
}

// opencodeMCP is a master's team tools for opencode: a local server in
// the "mcp" section, allowed to run long ("timeout", in ms, bounds every
// request to it; the default is short). Its tools are <server>_<tool>,
// allowed by the permission "cicy_*".
func opencodeMCP(m *MCPServer) map[string]any {
	return map[string]any{MCPName: map[string]any{
		"type": "local", "command": m.Argv, "environment": m.Env, "enabled": true,
		"timeout": mcpToolTimeout.Milliseconds(),
	}}
}

// opencodeWire is the API an opencode pane speaks to the gateway.
type opencodeWire struct {
	npm    string // the AI SDK package opencode loads for it
	keyVar string // the variable holding the pane's token
	model  string // the model when the pane names none
}

// opencodeAPI is the API opencode speaks: OpenAI Chat Completions when
// the supervisor is set up for OpenAI (OPENAI_BASE_URL set, or only an
// OpenAI key), else Anthropic Messages.
func opencodeAPI(getenv func(string) string) opencodeWire {
	anthropic := getenv("ANTHROPIC_API_KEY") != "" || getenv("ANTHROPIC_AUTH_TOKEN") != "" || getenv("ANTHROPIC_BASE_URL") != ""
	if getenv("OPENAI_BASE_URL") != "" || (getenv("OPENAI_API_KEY") != "" && !anthropic) {
		return opencodeWire{npm: "@ai-sdk/openai-compatible", keyVar: "OPENAI_API_KEY", model: "gpt-5"}
	}
	return opencodeWire{npm: "@ai-sdk/anthropic", keyVar: "ANTHROPIC_API_KEY", model: "claude-sonnet-4-5"}
}

// opencodePayload holds the fields of the plugin's payloads that matter.
type opencodePayload struct {
	LastAssistant string `json:"last_assistant_message"`
	Status        string `json:"status"`
	Error         any    `json:"error"`
}

// opencodeSession is the session id of an event the plugin forwards;
// a sub-agent's session (marked "child") is not the pane's.
func opencodeSession(_ string, payload []byte) string {
	var p struct {
		Session string `json:"sessionID"`
		Child   bool   `json:"child"`
	}
	decode(payload, &p)
	if p.Child {
		return ""
	}
	return p.Session
}

// interpretOpencode maps an event the plugin forwards to its effect.
func interpretOpencode(event string, payload []byte) Effect {
	var p opencodePayload
	decode(payload, &p)
	switch event {
	case "session.status":
		if p.Status == "busy" {
			return Effect{State: pane.Busy, Prompt: true}
		}
		return Effect{Ignored: "session.status " + p.Status}
	case "session.idle":
		return Effect{State: pane.Idle, End: true, Result: p.LastAssistant}
	case "session.error":
		return Effect{State: pane.Idle, End: true, Failed: turnFailed(fmt.Sprint(p.Error))}
	case "permission.asked":
		return Effect{State: pane.Waiting}
	case "permission.replied":
		return Effect{State: pane.Busy}
	}
	return unused("opencode", event)
}

// opencodeRules are opencode's built-in screen rules, from the screens of
// opencode 1.18 (tested against cmd/cicy-agent/testdata/screens), each
// reading one part of its layout (see opencodeLayout): a dialog is
// waiting, the footer's interrupt hint or progress bar busy, a menu or
// the idle footer idle.
var opencodeRules = pane.Rules{
	{Name: "opencode-permission", State: pane.Waiting, Part: pane.PartDialog, Match: `Permission required|Allow once\s+Allow always\s+Reject|enter (confirm|submit)|⇆ select`},
	// A question that takes several answers: tab moves between its
	// questions and Confirm, enter toggles an answer.
	{Name: "opencode-question", State: pane.Waiting, Part: pane.PartDialog, Match: `⇆ tab|enter toggle`},
	{Name: "opencode-busy", State: pane.Busy, Part: pane.PartFooter, Match: `esc (again to )?interrupt`},
	// The footer's progress bar (8 cells of ⬝ and ■) shows only while it
	// works; on a narrow screen a retry's message pushes "esc interrupt"
	// onto wrapped lines.
	{Name: "opencode-progress", State: pane.Busy, Part: pane.PartFooter, Match: `^\s*[⬝■]{8}(\s|$)`},
	{Name: "opencode-menu", State: pane.Idle, Part: pane.PartMenu, Match: `┃$|esc(/enter)?$`},
	{Name: "opencode-idle-footer", State: pane.Idle, Part: pane.PartFooter, Match: `ctrl\+p|commands$|tab agents`},
}

// opencodeModalTitle is the title line of a modal window (the command
// palette, help): a title of words, and its close key at the right. The
// window covers what is under it, so the line may start with transcript
// text on its left.
var opencodeModalTitle = regexp.MustCompile(`(^ +|  )\S(\S| \S)* {3,}esc(/enter)?$`)

// opencode's layout, from the bottom: the footer (the folder and "ctrl+p
// commands", or a progress bar and "esc interrupt" while it works; on a
// fresh session a status bar at the very bottom too) under the composer,
// a box of ┃ lines closed by a ╹▀▀▀ line. A dialog (a permission, a
// question) replaces the composer: a ┃ box that runs to the bottom, not
// closed. A menu: the slash-command popup, a box closed on both sides at
// the top of the composer's box; or a modal window (the command palette,
// help) drawn over the screen, from its title line (the close key "esc"
// at its right, a blank line, then its body at the title's column) down
// to the composer, or to the bottom when it covers the composer.
func opencodeLayout(lines []string) []pane.Span {
	end := lastLine(lines)
	if end == 0 {
		return nil
	}
	if opencodeBoxLine(lines[end-1], -1) {
		top := opencodeBoxTop(lines, end, indent(lines[end-1]))
		return spans(top, pane.Span{Part: pane.PartDialog, From: top, To: end})
	}
	for i := end - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimLeft(lines[i], " "), "╹▀") {
			top := opencodeBoxTop(lines, i, indent(lines[i]))
			if top == i {
				break
			}
			composer := pane.Span{Part: pane.PartComposer, From: top, To: i + 1}
			footer := pane.Span{Part: pane.PartFooter, From: i + 1, To: end}
			if m := opencodeModal(lines, top); m >= 0 {
				return spans(m, pane.Span{Part: pane.PartMenu, From: m, To: top}, composer, footer)
			}
			// The popup: lines of the box closed on the right too, over
			// the composer's own lines (the transcript's last message box
			// may join the box from above), while the draft starts with
			// "/" or "@".
			p0 := top
			for p0 < i && !opencodeClosed(lines[p0]) {
				p0++
			}
			p1 := p0
			for p1 < i && opencodeClosed(lines[p1]) {
				p1++
			}
			if p0 == i || !opencodeDraftStarts(lines[p1:i], "/", "@") {
				return spans(top, composer, footer)
			}
			composer.From = p1
			return spans(p0, pane.Span{Part: pane.PartMenu, From: p0, To: p1}, composer, footer)
		}
	}
	if m := opencodeModal(lines, end); m >= 0 {
		return spans(m, pane.Span{Part: pane.PartMenu, From: m, To: end})
	}
	return spans(end)
}

// opencodeClosed reports whether a line of a box is closed on the right
// too, as the popup's are.
func opencodeClosed(l string) bool {
	return strings.HasSuffix(l, "┃") && strings.Count(l, "┃") >= 2
}

// opencodeDraftStarts reports whether the first text in the box lines
// (the composer's) starts with one of prefixes.
func opencodeDraftStarts(box []string, prefixes ...string) bool {
	for _, l := range box {
		_, text, _ := strings.Cut(l, "┃")
		if text = strings.TrimSpace(text); text != "" {
			for _, p := range prefixes {
				if strings.HasPrefix(text, p) {
					return true
				}
			}
			return false
		}
	}
	return false
}

// opencodeModal is the title line of a modal window above line below; -1
// when there is none. Under the title is a blank line, then the window's
// body, at the title's column.
func opencodeModal(lines []string, below int) int {
	for i := below - 3; i >= 0; i-- {
		loc := opencodeModalTitle.FindStringIndex(lines[i])
		if loc == nil {
			continue
		}
		// The title's column, past the spaces the match starts with.
		col := utf8.RuneCountInString(lines[i][:loc[0]]) + len(lines[i][loc[0]:]) - len(strings.TrimLeft(lines[i][loc[0]:], " "))
		next, body := []rune(lines[i+1]), []rune(lines[i+2])
		if len(next) > col && strings.TrimSpace(string(next[col:])) != "" {
			continue
		}
		if len(body) > col && body[col] != ' ' && (col == 0 || body[col-1] == ' ') {
			return i
		}
	}
	return -1
}

// opencodeBoxTop is the first of the ┃ lines at column col that end at
// line below-1.
func opencodeBoxTop(lines []string, below, col int) int {
	top := below
	for top > 0 && opencodeBoxLine(lines[top-1], col) {
		top--
	}
	return top
}

// opencodeBoxLine reports whether a line is a line of a box: ┃ at column
// col (any column when col is negative).
func opencodeBoxLine(l string, col int) bool {
	n := indent(l)
	return (col < 0 || n == col) && strings.HasPrefix(l[n:], "┃")
}

// opencodeAux are opencode's side calls: its title agent (system prompt
// "You are a title generator…", seen with every first prompt on either
// API) and, from opencode's prompt files (not seen on the wire here), its
// compaction and summary agents.
var opencodeAux = []AuxRule{
	{"title", systemStarts("You are a title generator")},
	{"compact", systemStarts("You are a helpful AI assistant tasked with summarizing conversations")},
	{"summary", systemStarts("Summarize what was done in this conversation")},
}

// jsHookSend is the send(event, payload) of the JavaScript that forwards
// agent's events (opencode's plugin, pi's extension): it runs `BIN hook
// --agent <agent> <event>` with the payload on stdin, stamped with the
// time it happened, and never throws.
func jsHookSend(agent string) string {
	return `function send(event, payload) {
  try {
    // The hooks run as separate processes: the event's own time orders them.
    const env = { ...process.env, CICY_HOOK_AT: new Date().toISOString() };
    const p = spawn(BIN, ["hook", "--agent", "` + agent + `", event], { stdio: ["pipe", "ignore", "ignore"], env });
    p.on("error", () => {});
    p.stdin.on("error", () => {});
    p.stdin.end(JSON.stringify(payload));
  } catch (e) {}
}
`
}
