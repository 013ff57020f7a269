package supervisor

import (
	"context"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cluster"
)

// The supervisor's side of its cluster part (package cluster): the names
// its callers know, and what the cluster asks of the supervisor.

// Listen is the cluster API's settings.
type Listen = cluster.Listen

// MinClusterToken is the shortest cluster secret accepted.
const MinClusterToken = cluster.MinClusterToken

// DefaultNode is the node name when none is given: the host name.
func DefaultNode() string { return cluster.DefaultNode() }

// join makes this supervisor a node of the cluster its database is
// shared by, its cluster API at addr ("" when it has none).
func (s *Supervisor) join(addr string) error { return s.cl.Start(addr) }

// Nodes is the cluster's nodes, this one first, then by name. A single
// machine's supervisor (SQLite) is the one node.
func (s *Supervisor) Nodes(ctx context.Context) ([]api.NodeInfo, error) {
	return s.cl.Nodes(ctx, len(s.ListLocal()))
}

// isLocal reports whether a pane is this node's (registered or starting).
func (s *Supervisor) isLocal(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.panes[id]
	if !ok {
		_, ok = s.starting[id]
	}
	return ok
}

// clusterSide is the supervisor as its cluster part sees it: its panes
// (cluster.Panes; its cluster.Events is the event hub itself).
type clusterSide struct{ s *Supervisor }

func (c clusterSide) Has(id string) bool { return c.s.isLocal(id) }

func (c clusterSide) Describe(row schema.Pane, st pane.Status) api.PaneInfo {
	return newEntry(row, st).info()
}
