package newpane

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/gitwork"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Config is a pane row's config (agent_config.config): what a pane was
// created with beyond the row's own columns.
type Config struct {
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

// ParseConfig reads a pane row's config; one that does not parse is
// the empty Config.
func ParseConfig(s string) Config {
	var c Config
	_ = json.Unmarshal([]byte(s), &c)
	return c
}

// Row is the row a valid request stores (pw: its worktree, nil for none).
func Row(req api.CreateRequest, pw *gitwork.PaneWorktree) schema.Pane {
	cmdJSON, _ := json.Marshal(req.Command) // a list of strings always encodes
	config := "{}"
	if req.Team != "" || req.AllowAll || len(req.Env) > 0 || pw != nil || req.Restart != "" {
		b, _ := json.Marshal(Config{Team: req.Team, AllowAll: req.AllowAll, Env: req.Env, Worktree: pw, Restart: req.Restart})
		config = string(b)
	}
	return schema.Pane{
		Title: req.Title, Type: req.Type, Role: req.Role, RoleTemplate: req.RoleTemplate,
		Provider: req.Provider, Model: req.Model, Command: string(cmdJSON), Backend: req.Backend,
		Master: sql.NullString{String: req.Master, Valid: req.Master != ""}, Config: config,
		BudgetUSD: sql.NullFloat64{Float64: req.BudgetUSD, Valid: req.BudgetUSD > 0},
	}
}

// CheckNames checks what a new pane names — its role template, in the
// home whose root is home, and its master, whose role roleOf says (ok
// false: there is no such pane, on this node or another) — and returns
// the template.
func CheckNames(home string, req api.CreateRequest, roleOf func(id string) (role string, ok bool)) (*cicy.Template, error) {
	var tmpl *cicy.Template
	if req.RoleTemplate != "" {
		var err error
		if tmpl, err = cicy.LoadTemplate(home, req.RoleTemplate); err != nil {
			return nil, api.Usagef("%v", err)
		}
	}
	if req.Master != "" {
		role, ok := roleOf(req.Master)
		if !ok {
			return nil, api.Usagef("--master %s: no such pane", req.Master)
		}
		if role != topology.RoleMaster {
			return nil, api.Usagef("--master %s names a pane whose role is %q, not master", req.Master, role)
		}
	}
	return tmpl, nil
}

// MissingEnv is a warning for each of a new pane's --env names the
// supervisor's own environment (getenv) does not have: the pane starts
// without it.
func MissingEnv(names []string, getenv func(string) string) []string {
	var warnings []string
	for _, n := range names {
		if getenv(n) == "" {
			warnings = append(warnings, fmt.Sprintf("--env %s: the supervisor has no %s in its environment, so the pane starts without it", n, n))
		}
	}
	return warnings
}
