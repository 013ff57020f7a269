package cliagent

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/pane"
)

// pi is Mario Zechner's pi coding agent. Its config folder is the pane's
// own agent dir (PI_CODING_AGENT_DIR); its signals are the events an
// extension forwards. pi has no MCP client and no permission prompts of
// its own: a pi pane is a worker (a master would have no team tools),
// and the extension asks before a tool that changes anything runs
// unless the pane allows all.
func init() { register(pi) }

var pi = Kind{
	// As configured (opencodeAPI): Anthropic Messages or Chat Completions.
	Name: "pi", Title: "pi", Bin: "pi", Package: "@mariozechner/pi-coding-agent", Version: "0.73.1", APIs: []string{"anthropic", "chat"},
	EnterDelay: 100 * time.Millisecond, workerOnly: true,
	prepare: preparePi, interpret: interpretPi, prompts: true, rules: piRules, layout: piLayout, aux: piAux,
	// How its dialogs are answered and read (answer.go).
	answer: answerSpec{approve: []string{"Enter"}, deny: []string{"Escape"}, option: downEnter, approval: regexp.MustCompile(`^Permission required`)},
	// pi has no MCP client (a pi pane is never a master): no team tool
	// is shown to it under any name but its own.
	toolName: func(tool string) string { return tool },
	// The extension's events carry "session_id" (its session manager's);
	// session_start a new one after /new, /resume or /fork. `pi --session
	// <id>`.
	session: sessionField, resume: resumeWith("--session"),
	// AGENTS.md in its agent dir: its global context file.
	guidance: guidanceIn("pi", "AGENTS.md"),
}

// piExtension forwards pi's events to `cicy-agent hook` (its send is
// jsHookSend's) and, in a pane that does not allow all, asks before bash,
// edit and write run (pi itself never asks). The end of a run carries its
// last assistant text and, when its last model call failed or was
// aborted, the error.
const piExtension = `// Written by cicy-agent: forwards pi events to 'cicy-agent hook'.
import { spawn } from "node:child_process";

const BIN = %s;
const ASK = %t;
const ASKED = ["bash", "edit", "write"];

%s
function text(m) {
  const parts = Array.isArray(m.content) ? m.content : [];
  return parts.filter((c) => c && c.type === "text").map((c) => c.text).join("");
}

function runEnd(messages) {
  let last = null;
  let answer = "";
  for (const m of messages || []) {
    if (!m || m.role !== "assistant") continue;
    last = m;
    if (text(m).trim() !== "") answer = text(m);
  }
  const out = { last_assistant_message: answer, stop_reason: last ? last.stopReason : "" };
  if (last && (last.stopReason === "error" || last.stopReason === "aborted")) {
    out.error = last.errorMessage || last.stopReason;
  }
  return out;
}

function describe(tool, input) {
  const i = input || {};
  const what = tool === "bash" ? i.command : i.path;
  return typeof what === "string" ? what : JSON.stringify(i);
}

export default function (pi) {
  // Its session manager's id: a new one after /new, /resume or /fork.
  const sid = (ctx) => {
    try { return (ctx && ctx.sessionManager && ctx.sessionManager.getSessionId()) || ""; } catch (e) { return ""; }
  };
  pi.on("session_start", async (event, ctx) => send("session_start", { reason: event.reason, session_id: sid(ctx) }));
  pi.on("agent_start", async (_event, ctx) => send("agent_start", { session_id: sid(ctx) }));
  pi.on("tool_execution_start", async (event) => send("tool_execution_start", { tool: event.toolName }));
  pi.on("tool_execution_end", async (event) => send("tool_execution_end", { tool: event.toolName, is_error: !!event.isError }));
  pi.on("agent_end", async (event, ctx) => send("agent_end", { ...runEnd(event.messages), session_id: sid(ctx) }));
  if (!ASK) return;
  pi.on("tool_call", async (event, ctx) => {
    if (!ASKED.includes(event.toolName) || !ctx.hasUI) return undefined;
    send("permission_asked", { tool: event.toolName });
    const ok = await ctx.ui.confirm("Permission required", "Allow " + event.toolName + ": " + describe(event.toolName, event.input));
    send("permission_replied", { tool: event.toolName, allowed: ok });
    return ok ? undefined : { block: true, reason: "The user did not allow this " + event.toolName + " call." };
  });
}
`

// piWire is how a pi pane's models.json speaks to the gateway.
func piWire(a Setup) (api, baseURL string) {
	if opencodeAPI(a.Getenv).npm == "@ai-sdk/anthropic" {
		// The Anthropic SDK adds /v1/messages itself.
		return "anthropic-messages", a.Gateway
	}
	return "openai-completions", a.Gateway + "/v1"
}

// preparePi seeds pi's agent dir (PI_CODING_AGENT_DIR) in the pane's own
// folder: models.json with the gateway as the one provider (its key the
// name of the variable holding the pane's token: pi reads the token from
// the environment, no file holds it), settings.json (that provider's
// model, no telemetry, no retries of its own: see below), and the
// extension in its extensions folder, which pi loads by itself. No update
// check or other start-up network call (PI_OFFLINE).
func preparePi(a Setup) ([]string, []string, error) {
	if a.MCP != nil {
		return nil, nil, errors.New("pi has no MCP client to give the team tools to: a pi pane can be a worker, not a master")
	}
	dir := filepath.Join(a.Dir, "pi")
	wire := opencodeAPI(a.Getenv)
	model := cmp.Or(a.Model, wire.model)
	api, base := piWire(a)
	models := map[string]any{"providers": map[string]any{"cicy": map[string]any{
		"baseUrl": base, "api": api, "apiKey": piTokenVar,
		"models": []map[string]any{{"id": model, "name": model}},
	}}}
	if err := writeJSONFile(filepath.Join(dir, "models.json"), models); err != nil {
		return nil, nil, err
	}
	// pi retries a failed run itself only after it has ended the run
	// (agent_end, with the error), so its extension could not tell a
	// failure from a retry: its own retries are off. The SDKs' retries of
	// a 429, 5xx or lost connection, inside a run, stay.
	settings := map[string]any{
		"defaultProvider": "cicy", "defaultModel": model, "enableInstallTelemetry": false, "quietStartup": true,
		"retry": map[string]any{"enabled": false},
	}
	if err := writeJSONFile(filepath.Join(dir, "settings.json"), settings); err != nil {
		return nil, nil, err
	}
	bin, err := json.Marshal(a.Self)
	if err != nil {
		return nil, nil, fmt.Errorf("encode this program's path for the extension: %w", err)
	}
	ext := fmt.Sprintf(piExtension, bin, !a.AllowAll, jsHookSend("pi"))
	if err := atomicfile.WritePrivate(filepath.Join(dir, "extensions", "cicy-agent.js"), []byte(ext)); err != nil {
		return nil, nil, err
	}
	env := append([]string{
		"PI_CODING_AGENT_DIR=" + dir, piTokenVar + "=" + a.Token,
		"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0",
	}, quietEnv...)
	return append([]string{"pi"}, a.Extra...), env, nil
}

// piPayload holds the fields of the extension's payloads that matter.
type piPayload struct {
	LastAssistant string `json:"last_assistant_message"`
	StopReason    string `json:"stop_reason"`
	Error         string `json:"error"`
}

// interpretPi maps an event the extension forwards to its effect.
func interpretPi(event string, payload []byte) Effect {
	var p piPayload
	decode(payload, &p)
	switch event {
	case "session_start":
		return Effect{State: pane.Idle}
	case "agent_start":
		return Effect{State: pane.Busy, Prompt: true}
	case "tool_execution_start", "tool_execution_end", "permission_replied":
		return Effect{State: pane.Busy}
	case "permission_asked":
		return Effect{State: pane.Waiting}
	case "agent_end":
		if p.Error != "" {
			return Effect{State: pane.Idle, End: true, Failed: turnFailed(p.Error)}
		}
		return Effect{State: pane.Idle, End: true, Result: p.LastAssistant}
	}
	return unused("pi", event)
}

// piRules are pi's built-in screen rules, from the screens of pi 0.73
// (tested against cmd/cicy-agent/testdata/screens), each reading one part
// of its layout (see piLayout): the extension's permission dialog is
// waiting, the spinner line busy, a menu, another dialog or the idle
// footer idle.
var piRules = pane.Rules{
	{Name: "pi-permission", State: pane.Waiting, Part: pane.PartDialog, Match: `Permission required`},
	// The loader above the editor: a braille spinner frame, then
	// "Working..." or "Auto-compacting..." (or "Retrying (1/3) in 2s..."
	// were pi's own retries on). An answer whose last line looks just so
	// would read busy: nothing on the screen tells the two apart.
	{Name: "pi-spinner", State: pane.Busy, Part: pane.PartStatus, Match: `^ [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \S.*\.\.\.`},
	{Name: "pi-menu", State: pane.Idle, Part: pane.PartMenu, Match: `^→ |\(\d+/\d+\)$`},
	{Name: "pi-selector", State: pane.Idle, Part: pane.PartDialog, Match: `↑↓ navigate`},
	{Name: "pi-idle-footer", State: pane.Idle, Part: pane.PartFooter, Match: `\d%/\d+(\.\d+)?[kM]?\b`},
}

// piStats is the footer's statistics line: the context window's use
// ("1.2%/128k"), the model at its right.
var piStats = regexp.MustCompile(`\d%/\d+(\.\d+)?[kM]?\b`)

const piStatusMax = 4 // lines between the spinner line and the editor at most

// pi's layout, from the bottom: the footer (the folder, then the
// statistics line, then a line of extension statuses if any) under the
// editor, drawn between two full-width ─ rules; between the editor and
// the footer, the slash-command menu while the draft starts with "/";
// above the editor, while it works, the loader (a blank line, then the
// spinner line). A dialog (an extension's confirm or selector: the
// permission question, pi's own selectors) takes the editor's place
// between the two rules, its lines padded by a blank line at either end.
func piLayout(lines []string) []pane.Span {
	end := lastLine(lines)
	lo, up := piEditor(lines, end)
	if lo < 0 {
		return spans(end)
	}
	foot := end
	for i := lo + 1; i < end; i++ {
		if piStats.MatchString(lines[i]) {
			foot = max(i-1, lo+1)
			break
		}
	}
	footer := pane.Span{Part: pane.PartFooter, From: foot, To: end}
	menu := pane.Span{Part: pane.PartMenu, From: lo + 1, To: foot}
	box := pane.Span{Part: pane.PartComposer, From: up, To: lo + 1}
	if piDialog(lines[up+1 : lo]) {
		box.Part = pane.PartDialog
	}
	top := piStatus(lines, up)
	return spans(top, pane.Span{Part: pane.PartStatus, From: top, To: up}, box, menu, footer)
}

// piEditor finds the editor's rules above line end: lo the lower, up the
// upper; lo is -1 when there are not two. The upper rule of a draft taller
// than the editor carries a scroll mark ("─── ↑ 3 more ───").
func piEditor(lines []string, end int) (lo, up int) {
	lo = -1
	for i := end - 1; i >= 0; i-- {
		if !piRule(lines[i]) {
			continue
		}
		if lo < 0 {
			lo = i
			continue
		}
		return lo, i
	}
	return -1, -1
}

// piRule reports whether a line is one of the editor's rules: a line of
// ─ (with a scroll mark on it, perhaps) starting at column 0.
func piRule(l string) bool {
	if isRule(l, '─') {
		return strings.HasPrefix(l, "─")
	}
	return strings.HasPrefix(l, "───") && strings.Contains(l, " more ") && strings.HasSuffix(strings.TrimRight(l, " "), "─")
}

// piDialog reports whether the lines between the rules are a dialog's,
// not a draft's: a blank line first and last, the text indented.
func piDialog(box []string) bool {
	if len(box) < 5 || !pane.Blank(box[0]) || !pane.Blank(box[len(box)-1]) {
		return false
	}
	for _, l := range box {
		if !pane.Blank(l) && !strings.HasPrefix(l, " ") {
			return false
		}
	}
	return true
}

// piStatus is where the loader above the editor (whose upper rule is up)
// starts: its spinner line, at column 1; up when there is none.
func piStatus(lines []string, up int) int {
	for i := up - 1; i >= 0 && i >= up-piStatusMax; i-- {
		l := lines[i]
		if pane.Blank(l) {
			continue
		}
		r := []rune(l)
		if len(r) > 2 && r[0] == ' ' && r[1] >= '⠀' && r[1] <= '⣿' && r[2] == ' ' {
			return i
		}
		return up
	}
	return up
}

// piTokenVar holds a pi pane's gateway token; models.json names it as
// its provider's key. A variable of its own, not a provider's: pi would
// offer its built-in provider of that name too.
const piTokenVar = "CICY_GATEWAY_TOKEN"

// piAux are pi's side calls: it makes none in a turn (no titles, no
// token counts; seen on the wire here); from its compaction code (not
// seen on the wire here), the summary of a conversation that outgrew the
// context window, or of a branch left in its session tree.
var piAux = []AuxRule{
	{"compact", systemStarts("You are a context summarization assistant")},
}
