package schema

import (
	"context"
	"fmt"
	"time"
)

// Node is one nodes row: a supervisor of the cluster.
type Node struct {
	Name        string `db:"name"`
	Addr        string `db:"addr"` // host:port of its cluster API
	PID         int    `db:"pid"`
	Version     string `db:"version"`
	StartedAt   string `db:"started_at"`
	HeartbeatAt string `db:"heartbeat_at"`
	LeaseUntil  string `db:"lease_until"` // it is gone once this has passed
}

// RegisterNode records that n's supervisor started: its row (by name) gets
// n's address, pid and version, started_at and heartbeat_at now, and a
// lease that runs until now+lease; on PostgreSQL its name is announced on
// channel cicy_nodes.
func (s *Store) RegisterNode(ctx context.Context, n Node, lease time.Duration) error {
	t := time.Now()
	now, until := FormatTime(t), FormatTime(t.Add(lease))
	_, err := s.db.ExecContext(ctx, `INSERT INTO nodes (name, addr, pid, version, started_at, heartbeat_at, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET addr = excluded.addr, pid = excluded.pid, version = excluded.version,
			started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, lease_until = excluded.lease_until`,
		n.Name, n.Addr, n.PID, n.Version, now, now, until)
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.Name, err)
	}
	if s.db.dialect == Postgres {
		// The other nodes watch for it (WatchTasks): they need not wait
		// for their next reread to follow a node that joined.
		if _, err := s.db.ExecContext(ctx, `SELECT pg_notify(?, ?)`, nodeChannel, n.Name); err != nil {
			return fmt.Errorf("announce node %s: %w", n.Name, err)
		}
	}
	return nil
}

// RenewNode records a heartbeat of the node: heartbeat_at now, its lease
// until now+lease. ErrNotFound when the node is not registered.
func (s *Store) RenewNode(ctx context.Context, name string, lease time.Duration) error {
	t := time.Now()
	res, err := s.db.ExecContext(ctx, `UPDATE nodes SET heartbeat_at = ?, lease_until = ? WHERE name = ?`,
		FormatTime(t), FormatTime(t.Add(lease)), name)
	if err != nil {
		return fmt.Errorf("renew node %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// LeaveNode records a clean shutdown of the node: its lease ends now.
func (s *Store) LeaveNode(ctx context.Context, name string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE nodes SET lease_until = ? WHERE name = ?`, Now(), name); err != nil {
		return fmt.Errorf("node %s leaves: %w", name, err)
	}
	return nil
}

// Nodes returns every registered node by name.
func (s *Store) Nodes(ctx context.Context) ([]Node, error) {
	var out []Node
	if err := s.db.SelectContext(ctx, &out, `SELECT name, addr, pid, version, started_at, heartbeat_at, lease_until
		FROM nodes ORDER BY name`); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return out, nil
}

// AdoptPanes makes node the owner of the panes no other node owns, and
// returns how many rows it changed. A SQLite home has one supervisor, so
// every pane is its (a home started under another node name keeps its
// panes); on PostgreSQL only the panes with no node (made before nodes
// existed) are adopted.
func (s *Store) AdoptPanes(ctx context.Context, node string) (int64, error) {
	q := `UPDATE agent_config SET node = ? WHERE node = ''`
	args := []any{node}
	if s.db.dialect == SQLite {
		q = `UPDATE agent_config SET node = ? WHERE node <> ?`
		args = append(args, node)
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("adopt panes for node %s: %w", node, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("adopt panes for node %s: %w", node, err)
	}
	return n, nil
}
