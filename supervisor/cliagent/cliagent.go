// Package cliagent holds what differs between the CLI agents that run in
// terminal panes, one file each (`cicy-agent agents` lists them;
// registry.go says what a file must give and what is filled in): how a
// pane's own config folder is seeded so the program starts straight at its
// prompt with its native completion signals wired to `cicy-agent hook`
// (see docs/hooks.md), what each of those signals means, and the agent's
// built-in screen rules. The user's own config files are never touched.
package cliagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/cicy/liteconfig"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/panetype"
)

// Kind is one CLI agent, registered by its own file (see register for
// what it must hold and what is filled in when left out).
type Kind struct {
	// Name is its pane type (create --type); Title the program's own name
	// as prose and docs write it ("Claude Code"; Name when left out).
	Name, Title string
	// Bin is the program looked up on PATH. Version is the one cicy-agent
	// is tested with, installed by one of two recipes: Package, the npm
	// package that installs Bin (what `make clis` installs into its folder:
	// scripts/install-clis.sh asks `cicy-agent agents --missing`), or, for
	// a program not on npm, VersionArgs: the arguments that make Bin print
	// its version (the first x.y or x.y.z of its output is compared with
	// Version); it is then installed by hand, on PATH.
	Bin, Package, Version string
	VersionArgs           []string
	// EnterDelay separates typed text from the Enter that submits it
	// (Codex turns an Enter that follows a fast paste into a newline).
	EnterDelay time.Duration
	prepare    func(Setup) (argv, env []string, err error)
	interpret  func(event string, payload []byte) Effect
	toolName   func(tool string) string // a team tool as the model sees it
	rules      pane.Rules               // built-in screen rules, in order
	layout     pane.Parser              // finds the parts of its screen the rules look at
	answer     answerSpec               // how its dialogs are answered and read (answer.go)
	// APIs are the model APIs the agent speaks through the gateway
	// ("anthropic", "chat", "responses", "gemini"): its token is good for those.
	APIs []string
	// aux are its side calls' fingerprints (aux.go).
	aux []AuxRule
	// workerOnly marks an agent with no MCP client: it cannot be given the
	// team tools, so it is never a master.
	workerOnly bool
	// guidance is where, in the pane's own folder, the agent reads a
	// guidance file that is kept out of its workspace (a git worktree):
	// its user-level instructions.
	guidance func(dir string) string
	// session reads the agent's own session id from one of its signals
	// ("" when the signal carries none, or not the pane's main session).
	session func(event string, payload []byte) string
	// resume is what, after the program's name in its launch argv, makes
	// it take up session id; nil when it cannot resume a session by id.
	resume func(id string) []string
	// hooks records that the agent reports its turns itself (its file
	// gave interpret); set by register.
	hooks bool
	// prompts says that its hooks tell each prompt it takes up (an Effect
	// with Prompt): then only that, or a model request, shows a typed task
	// taken up, never its screen (which may still show the last turn's
	// end, as Claude Code's "running Stop hook").
	prompts bool
}

// ReportsPrompts reports whether the agent's hooks tell each prompt it
// takes up (see Kind.prompts).
func (k Kind) ReportsPrompts() bool { return k.prompts }

// ReportsPrompts is Kind.ReportsPrompts of the agent of pane type typ
// (false for a type that is no CLI agent).
func ReportsPrompts(typ string) bool {
	k, ok := Lookup(typ)
	return ok && k.prompts
}

// resumeWith is a resume that puts the session id after arg: a flag
// (--resume, --session) or a subcommand (resume).
func resumeWith(arg string) func(id string) []string {
	return func(id string) []string { return []string{arg, id} }
}

// guidanceIn is a guidance file at path (its parts) under the pane's own
// folder.
func guidanceIn(path ...string) func(dir string) string {
	return func(dir string) string { return filepath.Join(append([]string{dir}, path...)...) }
}

// Leads reports whether the agent can be a master: whether it runs the
// team tools' MCP server.
func (k Kind) Leads() bool { return !k.workerOnly }

// FromNPM reports whether the agent is installed from npm (Package);
// else it is a program put on PATH by hand (VersionArgs).
func (k Kind) FromNPM() bool { return k.Package != "" }

// Pin is what to install: the npm package at the tested version
// ("@scope/name@1.2.3"), or the program at it ("prog@1.2.3").
func (k Kind) Pin() string {
	if k.FromNPM() {
		return k.Package + "@" + k.Version
	}
	return k.Bin + "@" + k.Version
}

// ScreenOnly is the signal of an agent whose state is read from its
// screen alone: no hooks, no model requests through the gateway.
const ScreenOnly = "screen only"

// Signals are the agent's signals of its state besides its screen (which
// every terminal pane has): "hooks" when it reports its turns itself,
// "gateway" when its model requests go through the gateway, "screen
// rules" when it has built-in ones; "screen only" first when it has
// neither hooks nor the gateway.
func (k Kind) Signals() []string {
	var out []string
	if k.hooks {
		out = append(out, "hooks")
	}
	if len(k.APIs) > 0 {
		out = append(out, "gateway")
	}
	if len(out) == 0 {
		out = append(out, ScreenOnly)
	}
	if len(k.rules) > 0 {
		out = append(out, "screen rules")
	}
	return out
}

// InstalledVersion is the version of the agent that the program at bin
// is ("" when it cannot be told: another kind of install, or a
// stand-in): for an npm agent the package.json of Package above the
// program's real path, else the first version in what `bin VersionArgs`
// prints.
func (k Kind) InstalledVersion(bin string) string {
	if !k.FromNPM() {
		return programVersion(bin, k.VersionArgs)
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return ""
	}
	for dir := filepath.Dir(real); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			continue
		}
		var pkg struct{ Name, Version string }
		if json.Unmarshal(b, &pkg) == nil && pkg.Name == k.Package {
			return pkg.Version
		}
	}
	return ""
}

// versionRe is a version in a program's output: 1.2 or 1.2.3, with a
// pre-release tail (1.2.3-beta.1).
var versionRe = regexp.MustCompile(`\b[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z.]+)?\b`)

// versionTimeout bounds a program's answer to its version command.
const versionTimeout = 10 * time.Second

// programVersion is the first version the program at bin prints when run
// with args ("" when it fails or prints none).
func programVersion(bin string, args []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return versionRe.FindString(string(out))
}

// GuidanceAt is the guidance file the agent reads from its own config
// folder (under the pane's folder dir): used when the workspace is a git
// worktree, whose tree holds only the work.
func (k Kind) GuidanceAt(dir string) string { return k.guidance(dir) }

// Setup is everything a seed needs.
type Setup struct {
	ID, Workspace string
	Dir           string // the pane's own config folder
	Shared        string // a folder shared by the panes of one home
	Self          string // this program, for the hooks
	Model         string
	AllowAll      bool
	Extra         []string // arguments after --
	// Gateway is the base URL of the supervisor's model gateway
	// ("http://127.0.0.1:PORT"); Token the pane's secret token for it,
	// which the program sends in place of a provider key. The real keys
	// never reach the program.
	Gateway, Token string
	// Getenv reads the supervisor's settings (which API an agent that
	// speaks several should use); never a key for the program.
	Getenv func(string) string
	// MCP is the team tools' MCP server a master gets in its config,
	// approved; nil for a worker.
	MCP *MCPServer
	// Guidance is set when the pane's guidance file is kept out of its
	// workspace, at GuidanceAt(Dir): an agent that reads it only when told
	// (opencode) is told.
	Guidance string
}

// MCPName is the team tools' MCP server's name in an agent's config.
const MCPName = "cicy"

// mcpToolTimeout is how long an agent lets one call of a team tool run
// where its own default is shorter: longer than wait blocks at most (an
// hour).
const mcpToolTimeout = 2 * time.Hour

// MCPServer is how an agent starts the team tools' MCP server.
type MCPServer struct {
	// Argv is the program (an absolute path) and its arguments.
	Argv []string
	// Env is set in the server's environment: who is calling
	// (CICY_HOME, CICY_PANE_ID). Set in the config, as not every agent
	// passes its own environment on.
	Env map[string]string
	// Tools are the names of the tools it serves, for an agent that must
	// be told which to offer its model up front.
	Tools []string
}

// command is the server's program and its arguments apart.
func (m *MCPServer) command() (string, []string) {
	if len(m.Argv) == 0 {
		return "", []string{}
	}
	return m.Argv[0], append([]string{}, m.Argv[1:]...)
}

// Prepare seeds the agent's config for a pane and returns its command line
// (argv[0] is the bare program name) and the environment it adds.
func (k Kind) Prepare(s Setup) (argv, env []string, err error) { return k.prepare(s) }

// ToolName is a team tool (dispatch, workers, task_status, wait) as the
// agent shows it to its model.
func (k Kind) ToolName(tool string) string { return k.toolName(tool) }

// SessionOf is the agent's own session id that one of its signals
// carries: its conversation, as the agent names it and resumes it. ""
// when the signal carries none (or one of a side thread or sub-agent),
// or an id that is not a plain token (it would become an argument).
func (k Kind) SessionOf(event string, payload []byte) string {
	if k.session == nil {
		return ""
	}
	if id := k.session(event, payload); validSession(id) {
		return id
	}
	return ""
}

// ResumesByID reports whether the agent can take up a session by its id.
func (k Kind) ResumesByID() bool { return k.resume != nil }

// ResumeArgs are the arguments that make the agent take up session id,
// put right after the program's name in its launch argv (Prepare's);
// ok is false when it cannot resume by id, or id is not a session id.
func (k Kind) ResumeArgs(id string) (args []string, ok bool) {
	if k.resume == nil || !validSession(id) {
		return nil, false
	}
	return k.resume(id), true
}

// validSession reports whether id can be a session id: a plain token of
// letters, digits, '-', '_' and '.', not starting with '-' (it becomes an
// argument), at most 200 bytes.
func validSession(id string) bool {
	if id == "" || len(id) > 200 || id[0] == '-' {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Session is the session id one signal of an agent carries ("" for none,
// or an agent that is not a CLI agent).
func Session(agent, event string, payload []byte) string {
	k, ok := Lookup(agent)
	if !ok {
		return ""
	}
	return k.SessionOf(event, payload)
}

// Interpret maps one of the agent's signals to its effect.
func (k Kind) Interpret(event string, payload []byte) Effect { return k.interpret(event, payload) }

// Effect is what a signal means.
type Effect struct {
	State   pane.State // "" leaves the state alone
	Prompt  bool       // a prompt was submitted
	End     bool       // a turn ended
	Result  string     // its last assistant message
	Failed  string     // the turn ended in an error
	Ignored string     // why nothing happened
}

// kinds are the CLI agents, each registered by its own file.
var kinds = map[string]Kind{}

// register adds a CLI agent: its file's init calls it. The pane type is
// then one create and team files take. See registerIn.
func register(k Kind) { registerIn(kinds, panetype.Register, k) }

// Lookup is the CLI agent of a pane type; ok is false when the type is
// not a CLI agent.
func Lookup(typ string) (Kind, bool) {
	k, ok := kinds[typ]
	return k, ok
}

// Names are the CLI agents' pane types, sorted.
func Names() []string {
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Interpret maps one signal of an agent to its effect; an agent that is
// not a CLI agent has none.
func Interpret(agent, event string, payload []byte) Effect {
	k, ok := Lookup(agent)
	if !ok {
		return unused(agent, event)
	}
	return k.Interpret(event, payload)
}

// unused is the effect of an event an agent's interpretation does not use.
func unused(agent, event string) Effect {
	return Effect{Ignored: "event " + event + " of " + agent + " is not used"}
}

// decode reads the fields of a payload that matter into v. A payload that
// cannot be read still carries its event, so a decoding error only leaves
// the fields empty.
func decode(payload []byte, v any) {
	if len(payload) > 0 {
		_ = json.Unmarshal(payload, v)
	}
}

// sessionField is the session id in a payload's field "session_id":
// Claude Code's hooks and those that took their format (Codex, Qwen Code,
// Gemini CLI), and pi's extension.
func sessionField(_ string, payload []byte) string {
	var p struct {
		Session string `json:"session_id"`
	}
	decode(payload, &p)
	return p.Session
}

// turnFailed is the failure text of a turn that ended in an error.
func turnFailed(msg string) string { return "the agent's turn failed: " + msg }

// screenRulesFile is the part of lite-config.json the screen rules read.
type screenRulesFile struct {
	ScreenRules map[string]pane.Rules `json:"screenRules"`
}

// ScreenRules is the compiled screen-rule table of a pane type:
// lite-config.json's "screenRules" for it first (they win), then the
// agent's built-in rules (a type that is not a CLI agent has none).
func ScreenRules(home, typ string) (pane.Rules, error) {
	var f screenRulesFile
	if _, err := liteconfig.Read(home, &f); err != nil {
		return nil, err
	}
	all := append(pane.Rules{}, f.ScreenRules[typ]...)
	if k, ok := Lookup(typ); ok {
		all = append(all, k.rules...)
	}
	rules, err := all.Compile()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", liteconfig.Path(home), err)
	}
	return rules, nil
}

// hookCommand is the shell command line a hook runs.
func hookCommand(self, agent, event string) string {
	return ShellQuote(self) + " hook --agent " + agent + " " + event
}

// ShellQuote quotes s for a POSIX shell.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hooksBlock is the "hooks" setting of Claude Code and Codex (Codex reads
// Claude's format): each event runs `cicy-agent hook`.
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

// quietEnv are the variables that keep a CLI from phoning home.
var quietEnv = []string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
	"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1",
}

// writeJSONFile writes a seed file atomically (an agent starting now
// reads the old file or the new one), in a folder only the user can read.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return atomicfile.WritePrivate(path, b)
}
