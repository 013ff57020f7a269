package schema

import (
	"context"
	"fmt"
)

// NodeTasks is the task ledger as one node's outbox sees it: the tasks it
// delivers (to its own panes) and the tasks it reports (from its own
// panes). A pane with no agent_config row (the user, a removed pane)
// belongs to every node, so tasks to or from it are in every node's view;
// the conditional updates make sure only one node acts on each.
type NodeTasks struct {
	s    *Store
	node string
}

// ForNode returns the tasks as node's outbox sees them; node "" sees all.
func (s *Store) ForNode(node string) *NodeTasks { return &NodeTasks{s: s, node: node} }

// notOthers is a condition on the pane column col: the pane is the
// node's own or has no row. It takes the node as its one argument.
func notOthers(col string) string {
	return col + ` NOT IN (SELECT pane_id FROM agent_config WHERE node <> ?)`
}

// ListTasks returns the tasks from or to pane, oldest first, as
// Store.ListTasks; with pane "" the tasks to or from a pane of the node
// (or a pane with no row).
func (v *NodeTasks) ListTasks(ctx context.Context, pane string) ([]Task, error) {
	if pane != "" || v.node == "" {
		return v.s.ListTasks(ctx, pane)
	}
	var out []Task
	if err := v.s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks
		WHERE `+notOthers("to_pane")+` OR `+notOthers("from_pane")+` ORDER BY id`, v.node, v.node); err != nil {
		return nil, fmt.Errorf("list tasks of node %s: %w", v.node, err)
	}
	return out, nil
}

// TasksIn returns the tasks in one status that the node delivers (to its
// panes, or to a pane with no row), oldest first.
func (v *NodeTasks) TasksIn(ctx context.Context, status string) ([]Task, error) {
	if v.node == "" {
		return v.s.TasksIn(ctx, status)
	}
	var out []Task
	if err := v.s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks
		WHERE status = ? AND `+notOthers("to_pane")+` ORDER BY id`, status, v.node); err != nil {
		return nil, fmt.Errorf("list %s tasks of node %s: %w", status, v.node, err)
	}
	return out, nil
}

// Unnotified returns the finished tasks whose master was not told yet
// that the node reports (from its panes, or from a pane with no row such
// as the user), oldest first.
func (v *NodeTasks) Unnotified(ctx context.Context) ([]Task, error) {
	if v.node == "" {
		return v.s.Unnotified(ctx)
	}
	var out []Task
	if err := v.s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks
		WHERE status IN ('done', 'failed') AND notified_at IS NULL AND `+notOthers("from_pane")+` ORDER BY id`,
		v.node); err != nil {
		return nil, fmt.Errorf("list unnotified tasks of node %s: %w", v.node, err)
	}
	return out, nil
}

// MoveTask is Store.MoveTask.
func (v *NodeTasks) MoveTask(ctx context.Context, id int64, ch TaskChange) (bool, error) {
	return v.s.MoveTask(ctx, id, ch)
}

// MarkNotified is Store.MarkNotified.
func (v *NodeTasks) MarkNotified(ctx context.Context, id int64) error {
	return v.s.MarkNotified(ctx, id)
}
