package supervisor

import (
	"context"
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
	"github.com/cicy-ai/cicy-agent/supervisor/gitwork"
	"github.com/cicy-ai/cicy-agent/topology"
)

// CLI agent panes (see docs/hooks.md): the real programs of the CLI
// agents package cliagent registers, in terminal panes. What differs
// between them — install recipe, config
// seeding, hooks, screen rules — is in package cliagent; this file starts
// them from a pane's config.

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

// findAgent resolves an agent type's program: on PATH, else where `make
// clis` installs it (CLIDir), so that the pinned CLIs need no PATH change.
func (s *Supervisor) findAgent(typ string) (string, error) {
	k, ok := cliagent.Lookup(typ)
	if !ok {
		return "", api.Usagef("%s is not a CLI agent", typ)
	}
	return FindCLI(k, s.cfg.Getenv)
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

// paneDir is a pane's own folder for its agent's configuration.
func (h Home) paneDir(id string) string { return h.path("panes", id) }

// paneConfig is agent_config.config.
type paneConfig struct {
	Team     string `json:"team,omitempty"`
	AllowAll bool   `json:"allow_all,omitempty"`
	// Env: the variables asked for with --env (names only).
	Env []string `json:"env,omitempty"`
	// Worktree: the pane runs in a git worktree of its own (gitwork).
	Worktree *gitwork.PaneWorktree `json:"worktree,omitempty"`
	// Restart: the pane's restart policy (topology.RestartPolicies; ""
	// for the default).
	Restart string `json:"restart,omitempty"`
}

func parsePaneConfig(s string) paneConfig {
	var c paneConfig
	_ = json.Unmarshal([]byte(s), &c)
	return c
}

type agentLaunch struct{ argv, env []string }

// prepareAgent seeds a CLI agent's config folder (again at every start,
// so a moved binary or a changed environment is picked up) and returns its
// command line and extra environment; with resume set, the command
// resumes that session of the agent's own.
func (s *Supervisor) prepareAgent(cfg schema.Pane, extra []string, resume string) (agentLaunch, error) {
	path, err := s.findAgent(cfg.Type)
	if err != nil {
		return agentLaunch{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return agentLaunch{}, fmt.Errorf("find this program for the hooks: %w", err)
	}
	k, _ := cliagent.Lookup(cfg.Type) // findAgent found it
	pc := parsePaneConfig(cfg.Config)
	token, err := s.newPaneToken(context.Background(), cfg.ID)
	if err != nil {
		return agentLaunch{}, err
	}
	setup := cliagent.Setup{
		ID: cfg.ID, Workspace: cfg.Workspace, Dir: s.cfg.Home.paneDir(cfg.ID), Shared: s.cfg.Home.paneDir("shared"), Self: self,
		Model: cfg.Model, AllowAll: pc.AllowAll, Extra: extra, Gateway: s.paneGatewayURL(), Token: token, Getenv: s.cfg.Getenv,
	}
	if pc.Worktree != nil {
		setup.Guidance = s.cfg.Home.paneGuidance(cfg)
	}
	if cfg.Role == topology.RoleMaster {
		if setup.MCP, err = s.teamMCP(self, cfg.ID); err != nil {
			return agentLaunch{}, err
		}
	}
	argv, env, err := k.Prepare(setup)
	if err != nil {
		return agentLaunch{}, fmt.Errorf("prepare the %s config of %s: %w", cfg.Type, cfg.ID, err)
	}
	argv[0] = path
	if resume != "" {
		args, ok := k.ResumeArgs(resume)
		if !ok {
			return agentLaunch{}, fmt.Errorf("%s cannot resume the session %q", cfg.Type, resume)
		}
		argv = slices.Concat(argv[:1], args, argv[1:])
	}
	// The agent's shell finds cicy-agent (dispatch, wait, status) and the
	// other CLIs where the supervisor found them.
	env = append(env, "PATH="+s.cfg.Getenv("PATH")+string(os.PathListSeparator)+filepath.Dir(self))
	return agentLaunch{argv: argv, env: env}, nil
}

// mcpCommandVar names the setting that replaces the team tools' MCP
// server a CLI master runs (a JSON array: the program, an absolute path,
// and its arguments); by default it is this program with "mcp".
const mcpCommandVar = "CICY_MCP_COMMAND"

// teamMCP is the team tools' MCP server of the CLI master id: `cicy-agent
// mcp`, told who is calling.
func (s *Supervisor) teamMCP(self, id string) (*cliagent.MCPServer, error) {
	argv := []string{self, "mcp"}
	if v := s.cfg.Getenv(mcpCommandVar); v != "" {
		if err := json.Unmarshal([]byte(v), &argv); err != nil || len(argv) == 0 || !filepath.IsAbs(argv[0]) {
			return nil, api.Failedf("%s must be a JSON array whose first element is an absolute path, not %s", mcpCommandVar, v)
		}
	}
	env := map[string]string{"CICY_HOME": s.cfg.Home.Root, "CICY_PANE_ID": id}
	var tools []string
	for _, t := range TeamToolDefs() {
		tools = append(tools, t.Name)
	}
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

// writeGuidance writes a new pane's guidance file (CLAUDE.md or AGENTS.md)
// from its role template if missing; a CLI master's also says how to
// lead its team.
func writeGuidance(home, path, ws, id string, req api.CreateRequest, tmpl *cicy.Template) error {
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
