package api

import (
	"context"
	"net/http"
	"time"
)

// NodeInfo is one supervisor of the cluster as GET /api/nodes shows it.
type NodeInfo struct {
	Name string `json:"name"`
	// Addr is its cluster API (host:port); empty when it has none.
	Addr string `json:"addr"`
	// Self marks the supervisor that answered.
	Self bool `json:"self"`
	// State is up (answering, or this node), unreachable (its lease holds
	// but it does not answer, or it has no cluster API) or lapsed (its
	// lease ran out: stopped or dead); Reason says why when not up.
	State       string    `json:"state"`
	Reason      string    `json:"reason,omitempty"`
	PID         int       `json:"pid"`
	Version     string    `json:"version"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	LeaseUntil  time.Time `json:"lease_until"`
	// Panes is how many panes it runs.
	Panes int `json:"panes"`
}

// Node states.
const (
	NodeUp          = "up"
	NodeUnreachable = "unreachable"
	NodeLapsed      = "lapsed"
)

// Nodes lists the cluster's nodes, this one first.
func (c *Client) Nodes(ctx context.Context) ([]NodeInfo, error) {
	return call[[]NodeInfo](ctx, c, http.MethodGet, "/api/nodes", nil)
}
