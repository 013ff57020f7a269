package agentpane

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/topology"
)

// CLI agent panes (see docs/hooks.md): the real programs of the CLI
// agents package cliagent registers, in terminal panes. What differs
// between them — install recipe, config seeding, hooks, screen rules — is
// in package cliagent; this file finds their programs and prepares their
// start from a pane's config.

// CLIDirVar names the folder `make clis` (scripts/install-clis.sh)
// installs the pinned CLI agents into; without it, DefaultCLIDir under the
// home folder.
const (
	CLIDirVar     = "CICY_CLI_DIR"
	DefaultCLIDir = ".cache/cicy-agent/clis"
)

// CLIDir is the folder the pinned CLI agents are installed into, from
// getenv: $CICY_CLI_DIR, else ~/.cache/cicy-agent/clis ("" when there is
// no home folder either). Its programs are in node_modules/.bin.
func CLIDir(getenv func(string) string) string {
	if d := getenv(CLIDirVar); d != "" {
		return d
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, DefaultCLIDir)
}

// Find resolves an agent type's program: on PATH, else where `make
// clis` installs it (CLIDir), so that the pinned CLIs need no PATH change.
func Find(typ string, getenv func(string) string) (string, error) {
	k, ok := cliagent.Lookup(typ)
	if !ok {
		return "", api.Usagef("%s is not a CLI agent", typ)
	}
	return FindCLI(k, getenv)
}

// FindCLI is where CLI agent k's program is: on PATH, else in CLIDir (what
// `make clis` installs), both read with getenv. The error says how to
// install the pinned version.
func FindCLI(k cliagent.Kind, getenv func(string) string) (string, error) {
	if path, ok := lookPath(k.Bin, getenv("PATH")); ok {
		return path, nil
	}
	if !k.FromNPM() {
		return "", api.Failedf("%s was not found on PATH; install version %s of it (it is not on npm) and put it on PATH", k.Bin, k.Version)
	}
	dir := CLIDir(getenv)
	if dir == "" {
		return "", api.Failedf("%s was not found on PATH; install the version cicy-agent is tested with: npm install --prefix ~/%s %s (make clis in a cicy-agent checkout installs every CLI agent)", k.Bin, DefaultCLIDir, k.Pin())
	}
	bin := filepath.Join(dir, "node_modules", ".bin", k.Bin)
	if path, err := exec.LookPath(bin); err == nil {
		return path, nil
	}
	return "", api.Failedf("%s was not found on PATH nor in %s; install the version cicy-agent is tested with: npm install --prefix %s %s (make clis in a cicy-agent checkout installs every CLI agent)",
		k.Bin, filepath.Dir(bin), dir, k.Pin())
}

// Launch is how a CLI agent pane's program starts.
type Launch struct {
	Pane schema.Pane
	// Extra are arguments after the agent's own; Resume is a session of
	// the agent's own to resume ("" for a new one).
	Extra  []string
	Resume string
	// Dir is the pane's own folder for its agent's configuration, Shared
	// the one all panes share.
	Dir, Shared string
	// Guidance is the pane's guidance file when it is not the agent's
	// usual one (a pane in a git worktree of its own); AllowAll skips
	// the agent's permission questions.
	Guidance string
	AllowAll bool
	// Gateway is the URL of the model gateway; Token makes the pane's
	// gateway token, asked for once the program was found.
	Gateway string
	Token   func() (string, error)
	// Home is the supervisor's CICY_HOME; TeamTools the names of the team
	// tools a CLI master's MCP server serves.
	Home      string
	TeamTools []string
	Getenv    func(string) string
}

// Prepare seeds a CLI agent's config folder (again at every start, so a
// moved binary or a changed environment is picked up) and returns its
// command line and extra environment; with l.Resume set, the command
// resumes that session of the agent's own.
func Prepare(l Launch) (argv, env []string, err error) {
	cfg := l.Pane
	path, err := Find(cfg.Type, l.Getenv)
	if err != nil {
		return nil, nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find this program for the hooks: %w", err)
	}
	k, _ := cliagent.Lookup(cfg.Type) // Find found it
	token, err := l.Token()
	if err != nil {
		return nil, nil, err
	}
	setup := cliagent.Setup{
		ID: cfg.ID, Workspace: cfg.Workspace, Dir: l.Dir, Shared: l.Shared, Self: self, Guidance: l.Guidance,
		Model: cfg.Model, AllowAll: l.AllowAll, Extra: l.Extra, Gateway: l.Gateway, Token: token, Getenv: l.Getenv,
	}
	if cfg.Role == topology.RoleMaster {
		if setup.MCP, err = TeamMCP(self, cfg.ID, l.Home, l.TeamTools, l.Getenv); err != nil {
			return nil, nil, err
		}
	}
	argv, env, err = k.Prepare(setup)
	if err != nil {
		return nil, nil, fmt.Errorf("prepare the %s config of %s: %w", cfg.Type, cfg.ID, err)
	}
	argv[0] = path
	if l.Resume != "" {
		args, ok := k.ResumeArgs(l.Resume)
		if !ok {
			return nil, nil, fmt.Errorf("%s cannot resume the session %q", cfg.Type, l.Resume)
		}
		argv = slices.Concat(argv[:1], args, argv[1:])
	}
	// The agent's shell finds cicy-agent (dispatch, wait, status) and the
	// other CLIs where the supervisor found them.
	env = append(env, "PATH="+l.Getenv("PATH")+string(os.PathListSeparator)+filepath.Dir(self))
	return argv, env, nil
}

// mcpCommandVar names the setting that replaces the team tools' MCP
// server a CLI master runs (a JSON array: the program, an absolute path,
// and its arguments); by default it is this program with "mcp".
const mcpCommandVar = "CICY_MCP_COMMAND"

// TeamMCP is the team tools' MCP server of the CLI master id: `cicy-agent
// mcp` (self), told who is calling and the home it works in, serving
// tools; CICY_MCP_COMMAND in getenv replaces the command.
func TeamMCP(self, id, home string, tools []string, getenv func(string) string) (*cliagent.MCPServer, error) {
	argv := []string{self, "mcp"}
	if v := getenv(mcpCommandVar); v != "" {
		if err := json.Unmarshal([]byte(v), &argv); err != nil || len(argv) == 0 || !filepath.IsAbs(argv[0]) {
			return nil, api.Failedf("%s must be a JSON array whose first element is an absolute path, not %s", mcpCommandVar, v)
		}
	}
	env := map[string]string{"CICY_HOME": home, "CICY_PANE_ID": id}
	return &cliagent.MCPServer{Argv: argv, Env: env, Tools: tools}, nil
}

// teamGuidance is added to a CLI master's guidance file: it leads its
// team through the team tools of the cicy MCP server (named as its agent
// shows them), or with the cicy-agent command from its shell.
const teamGuidance = `

# Team

You lead a team of agents run by cicy-agent, through the tools of the cicy MCP server:
- %s lists your workers with their state and current task;
- %s gives a worker (its id or title) a task and returns the task id;
- %s shows one task, or all of yours;
- %s waits for tasks and returns their results, for when you have nothing else to do;
- %s shows what a worker in its own git worktree changed (a task's commits, or its whole branch);
- %s merges that into your checkout (a conflict changes nothing; with send_back the worker gets to resolve it).
When a worker finishes, a line starting with 🔔 arrives here as your input: do not poll.
The same works from your shell: ` + "`cicy-agent ls`" + ` lists the panes (your workers have you as master),
` + "`cicy-agent dispatch --to <pane> \"<task>\"`" + ` gives a worker a task (it prints the task id),
` + "`cicy-agent wait <task-id>`" + ` waits for a task and prints its result, ` + "`cicy-agent status`" + ` shows progress.
If your shell does not find cicy-agent (a login shell may reset PATH), it is %s.
`

// WriteGuidance writes a new pane's guidance file (CLAUDE.md or AGENTS.md)
// from its role template if missing; a CLI master's also says how to
// lead its team.
func WriteGuidance(home, path, ws, id string, req api.CreateRequest, tmpl *cicy.Template) error {
	_, statErr := os.Stat(path)
	if err := cicy.WriteGuidanceAt(home, path, ws, id, req.Type, tmpl); err != nil {
		return err
	}
	if statErr == nil || !panetype.IsAgent(req.Type) || req.Role != topology.RoleMaster {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program for the team guidance: %w", err)
	}
	k, _ := cliagent.Lookup(req.Type) // a CLI agent, as asked above
	tool := func(name string) string { return "`" + k.ToolName(name) + "`" }
	if _, err := fmt.Fprintf(f, teamGuidance, tool("workers"), tool("dispatch"), tool("task_status"), tool("wait"), tool("diff"), tool("merge"), cliagent.ShellQuote(self)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// lookPath is exec.LookPath of name in the folders of the PATH value path
// (the supervisor's environment as its Getenv reads it, not necessarily
// this process's). Relative folders are skipped, as exec.LookPath refuses
// what they find.
func lookPath(name, path string) (string, bool) {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, true
		}
	}
	return "", false
}
