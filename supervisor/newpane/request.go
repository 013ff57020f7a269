package newpane

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/topology"
)

// The providers a cicy pane can talk to.
var providers = []string{"anthropic", "openai", "script"}

// checkText refuses control characters and over-long values in a
// user-given string field (topology.CheckText's rules).
func checkText(field, v string, max int) error {
	if err := topology.CheckText(v, max); err != nil {
		return api.Usagef("%s %v", field, err)
	}
	return nil
}

// Normalize fills defaults into req and checks every field that needs no
// database; it returns the warnings the user must see. The rules a team
// file shares are topology's (types, limits, names, links between fields).
func Normalize(req *api.CreateRequest) (warnings []string, err error) {
	if err := normalizeFields(req); err != nil {
		return nil, err
	}
	if err := normalizeLinks(req); err != nil {
		return nil, err
	}
	if err := normalizeBackend(req); err != nil {
		return nil, err
	}
	if req.AllowAll && !panetype.IsAgent(req.Type) {
		return nil, api.Usagef("--allow-all applies to %s panes (it maps to their own bypass modes)", topology.List(panetype.Agents(), "and"))
	}
	if !topology.ValidRestart(req.Restart) {
		return nil, api.Usagef("--restart %q is not a restart policy (choose %s)", req.Restart, topology.List(topology.RestartPolicies, "or"))
	}
	if err := checkEnvNames(req); err != nil {
		return nil, err
	}
	if err := checkProgram(req); err != nil {
		return nil, err
	}
	if err := topology.CheckBudget(req.BudgetUSD); err != nil && req.BudgetUSD != 0 {
		return nil, api.Usagef("--budget-usd %v (leave it out for no budget)", err)
	}
	if req.Workspace != "" && !filepath.IsAbs(req.Workspace) {
		return nil, api.Usagef("the workspace %q must be an absolute path", req.Workspace)
	}
	if req.Role != topology.RoleWorker && req.Role != topology.RoleMaster {
		warnings = append(warnings, fmt.Sprintf(
			"role %q is a label only: this pane is excluded from completion tracking (only 'worker' and 'master' take part); a persona is set with --role-template",
			req.Role))
	}
	return warnings, nil
}

// normalizeFields fills in and checks the fields one by one.
func normalizeFields(req *api.CreateRequest) error {
	req.Title = strings.TrimSpace(req.Title)
	if req.Title == "" {
		return api.Usagef("a pane needs a title: cicy-agent create <title> …")
	}
	if err := topology.CheckTitle(req.Title); err != nil {
		return api.Usagef("the title %v", err)
	}
	req.Role = topology.PaneRole(req.Role)
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"the role", req.Role, topology.MaxRoleBytes},
		{"the model", req.Model, topology.MaxModelBytes},
		{"the team name", req.Team, topology.MaxTeamBytes},
	} {
		if err := checkText(f.name, f.v, f.max); err != nil {
			return err
		}
	}
	var ok bool
	if req.Type, ok = panetype.Resolve(req.Type); !ok {
		return api.Usagef("unknown pane type %q (choose %s)", req.Type, topology.PaneTypeChoices())
	}
	if k, ok := cliagent.Lookup(req.Type); ok && req.Role == topology.RoleMaster && !k.Leads() {
		return api.Usagef("a %s pane cannot be a master: %s has no MCP client to give the team tools to (make it a worker)", req.Type, req.Type)
	}
	if req.RoleTemplate == "" {
		req.RoleTemplate = defaultTemplate(req.Type, req.Role)
	}
	if req.RoleTemplate != "" && !topology.ValidSlug(req.RoleTemplate) {
		return api.Usagef("role template %q is not a valid name (lowercase letters, digits, - and _; it names a folder under memory/agents/)", req.RoleTemplate)
	}
	if req.Provider != "" && !slices.Contains(providers, req.Provider) {
		return api.Usagef("unknown provider %q (choose anthropic, openai or script)", req.Provider)
	}
	for i, a := range req.Command {
		if strings.ContainsRune(a, 0) {
			return api.Usagef("argument %d of the command contains a NUL byte", i)
		}
	}
	return nil
}

// defaultTemplate is the role template of a pane that names none: a cicy
// pane is an assistant, a CLI agent an engineer or a coordinator, a shell
// pane has none.
func defaultTemplate(typ, role string) string {
	switch {
	case panetype.InProcess(typ):
		return "assistant"
	case panetype.IsAgent(typ) && role == topology.RoleMaster:
		return "coordinator"
	case panetype.IsAgent(typ):
		return "engineer"
	}
	return ""
}

// normalizeLinks parses --master and checks the rules between fields.
func normalizeLinks(req *api.CreateRequest) error {
	if req.Master != "" {
		id, err := api.ParsePaneID(req.Master)
		if err != nil {
			return api.Usagef("--master %s is not a pane id (expected w-<N>)", req.Master)
		}
		req.Master = id
	}
	switch err := topology.CheckLinks(req.Type, req.Role, req.Master, req.Command, req.Env); {
	case err == nil:
		return nil
	case errors.Is(err, topology.ErrMasterOfMaster):
		return api.Usagef("%v; drop --master or the master role", err)
	case errors.Is(err, topology.ErrCicyCommand):
		return api.Usagef("a cicy pane takes no command after --; its persona comes from --role-template")
	case errors.Is(err, topology.ErrCicyEnv):
		return api.Usagef("--env applies to terminal panes; %v", err)
	case errors.Is(err, topology.ErrShellCommand):
		return api.Usagef("%v after --, like: cicy-agent create %s --type shell -- bash", err, req.Title)
	default:
		return api.Usagef("%v", err)
	}
}

// normalizeBackend chooses and checks the backend: inproc for a cicy pane,
// tmux (when it is there: its panes outlive the supervisor) or pty for a
// terminal pane.
func normalizeBackend(req *api.CreateRequest) error {
	if panetype.InProcess(req.Type) {
		if req.Backend != "" && req.Backend != "inproc" {
			return api.Usagef("a cicy pane runs inside the supervisor; --backend applies to terminal panes")
		}
		req.Backend = "inproc"
		return nil
	}
	switch req.Backend {
	case "":
		req.Backend = "pty"
		if pane.TmuxAvailable() {
			req.Backend = "tmux"
		}
	case "pty":
	case "tmux":
		if !pane.TmuxAvailable() {
			return api.Failedf("the tmux backend needs tmux 3.0 or newer on PATH; install it or use --backend pty")
		}
	default:
		return api.Usagef("unknown backend %q (choose pty or tmux)", req.Backend)
	}
	return nil
}

// checkProgram checks that the program a shell pane runs is there (a CLI
// agent's is found by the supervisor: findAgent).
func checkProgram(req *api.CreateRequest) error {
	if panetype.IsAgent(req.Type) && req.Provider != "" {
		return api.Usagef("--provider applies to cicy panes; a %s pane reads ANTHROPIC_BASE_URL / OPENAI_BASE_URL and their keys from the environment", req.Type)
	}
	if panetype.RunsShellTasks(req.Type) {
		if _, err := exec.LookPath(req.Command[0]); err != nil {
			return api.Usagef("command %q was not found or is not executable", req.Command[0])
		}
	}
	return nil
}

// checkEnvNames checks the variables a terminal pane asks for.
func checkEnvNames(req *api.CreateRequest) error {
	var names []string
	for _, n := range req.Env {
		switch {
		case strings.Contains(n, "="):
			return api.Usagef("--env takes a variable name, not %s=…: the pane gets the supervisor's value of it (a fixed value goes in the command: -- env NAME=value bash)", strings.SplitN(n, "=", 2)[0])
		case !topology.EnvNameRe.MatchString(n):
			return api.Usagef("--env %q is not a variable name (letters, digits and _, not starting with a digit)", n)
		case panetype.IsAgent(req.Type) && slices.Contains(provider.ProviderKeys, n):
			return api.Usagef("a %s pane reaches its model through cicy-agent's gateway with a key of its own; --env %s would hand it the real key: leave it out", req.Type, n)
		case !slices.Contains(names, n):
			names = append(names, n)
		}
	}
	req.Env = names
	return nil
}
