package api

import (
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/cicy-ai/cicy-agent/topology"
)

// PaneStates are the states a pane can be in, as ls --state takes them.
var PaneStates = []string{"starting", "idle", "busy", "waiting", "exited", "error", "unreachable"}

// PaneRoles are the roles ls --role takes: master, worker, and
// untracked for a pane whose role is a label of its own.
var PaneRoles = []string{"master", "worker", "untracked"}

// PaneFilter picks the panes List returns: a pane is listed when it
// matches each list that is set (any of its values). Empty, every pane.
type PaneFilter struct {
	States []string `json:"states,omitempty"`
	Roles  []string `json:"roles,omitempty"`
	Teams  []string `json:"teams,omitempty"`
	Nodes  []string `json:"nodes,omitempty"`
}

// Query is the filter as GET /api/panes's parameters (state, role, team,
// node; each repeatable).
func (f PaneFilter) Query() url.Values {
	q := url.Values{}
	for k, vs := range map[string][]string{"state": f.States, "role": f.Roles, "team": f.Teams, "node": f.Nodes} {
		for _, v := range vs {
			q.Add(k, v)
		}
	}
	return q
}

// FilterOf reads a filter from GET /api/panes's parameters.
func FilterOf(q url.Values) PaneFilter {
	return PaneFilter{States: q["state"], Roles: q["role"], Teams: q["team"], Nodes: q["node"]}
}

// Matches reports whether pane p passes the filter.
func (f PaneFilter) Matches(p PaneInfo) bool {
	role := p.Role
	if role != "master" && role != "worker" {
		role = "untracked"
	}
	return in(f.States, p.State) && in(f.Roles, role) && in(f.Teams, p.Team) && in(f.Nodes, p.Node)
}

// in: no values, or v is one of them.
func in(values []string, v string) bool { return len(values) == 0 || slices.Contains(values, v) }

// Check refuses a filter that names a state or role that does not exist,
// or a team or node that none of panes has (nodes: the cluster's nodes,
// which count even with no pane), with the ones there are.
func (f PaneFilter) Check(panes []PaneInfo, nodes []string) error {
	if err := checkChoices("--state", f.States, PaneStates); err != nil {
		return err
	}
	if err := checkChoices("--role", f.Roles, PaneRoles); err != nil {
		return err
	}
	teams, known := map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		known[n] = true
	}
	for _, p := range panes {
		teams[p.Team], known[p.Node] = true, true
	}
	delete(teams, "")
	if err := checkChoices("--team", f.Teams, slices.Sorted(maps.Keys(teams))); err != nil {
		return err
	}
	return checkChoices("--node", f.Nodes, slices.Sorted(maps.Keys(known)))
}

// checkChoices refuses a value of flag that is not one of choices.
func checkChoices(flag string, values, choices []string) error {
	for _, v := range values {
		if slices.Contains(choices, v) {
			continue
		}
		if len(choices) == 0 {
			return Usagef("%s %s: there is none (no pane has one)", flag, v)
		}
		return Usagef("%s %s: there is no such %s (choose %s)", flag, v, strings.TrimPrefix(flag, "--"), topology.List(choices, "or"))
	}
	return nil
}
