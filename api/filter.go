package api

import (
	"net/url"
	"slices"
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
