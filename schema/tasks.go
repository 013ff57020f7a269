package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cicy-ai/cicy-agent/api"
)

// Task is one tasks row.
type Task struct {
	ID          int64          `db:"id"`
	From        string         `db:"from_pane"`
	To          string         `db:"to_pane"`
	Text        string         `db:"text"`
	Status      string         `db:"status"`
	Result      string         `db:"result"`
	Error       string         `db:"error"`
	Reason      string         `db:"reason"`
	CreatedAt   string         `db:"created_at"`
	DeliveredAt sql.NullString `db:"delivered_at"`
	FinishedAt  sql.NullString `db:"finished_at"`
	UpdatedAt   string         `db:"updated_at"`
	Attempts    int            `db:"attempts"`
	NotifiedAt  sql.NullString `db:"notified_at"`
	// Source is where a finished task's result (or failure) came from:
	// SourceGateway, SourceHook, SourceScreen, SourceShell, SourceTurn;
	// "" when not recorded.
	Source string `db:"result_source"`
	// Work is what the task left on its worker's git worktree.
	api.Work
}

// Where a task's result comes from.
const (
	SourceGateway = "gateway" // the agent's last model answer, seen by the gateway
	SourceHook    = "hook"    // the agent's own turn-end signal
	SourceScreen  = "screen"  // the transcript on the agent's screen
	SourceShell   = "shell"   // a shell command's output and exit status
	SourceTurn    = "turn"    // a cicy agent's turn
)

const taskCols = `id, from_pane, to_pane, text, status, result, error, reason, created_at, delivered_at, finished_at, updated_at, attempts, notified_at, result_source, branch, base_commit, head_commit, commits, diff_files, diff_added, diff_deleted`

// CreateTask queues a task.
func (s *Store) CreateTask(ctx context.Context, from, to, text, reason string) (Task, error) {
	now := Now()
	var id int64
	err := s.db.GetContext(ctx, &id, `INSERT INTO tasks (from_pane, to_pane, text, status, reason, created_at, updated_at)
		VALUES (?, ?, ?, 'queued', ?, ?, ?) RETURNING id`, from, to, text, reason, now, now)
	if err != nil {
		return Task{}, fmt.Errorf("create task: %w", err)
	}
	return s.GetTask(ctx, id)
}

// GetTask returns one task, or ErrNotFound.
func (s *Store) GetTask(ctx context.Context, id int64) (Task, error) {
	var t Task
	err := s.db.GetContext(ctx, &t, `SELECT `+taskCols+` FROM tasks WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, ErrNotFound
	}
	if err != nil {
		return Task{}, fmt.Errorf("get task %d: %w", id, err)
	}
	return t, nil
}

// ListTasks returns the tasks from or to pane ("" for all), oldest first.
func (s *Store) ListTasks(ctx context.Context, pane string) ([]Task, error) {
	var out []Task
	var err error
	if pane == "" {
		err = s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks ORDER BY id`)
	} else {
		err = s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks WHERE from_pane = ? OR to_pane = ? ORDER BY id`, pane, pane)
	}
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// TasksIn returns the tasks in one status, oldest first.
func (s *Store) TasksIn(ctx context.Context, status string) ([]Task, error) {
	var out []Task
	if err := s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks WHERE status = ? ORDER BY id`, status); err != nil {
		return nil, fmt.Errorf("list %s tasks: %w", status, err)
	}
	return out, nil
}

// RecentTasks returns every open task (queued or delivered) and the last
// n finished ones, oldest first.
func (s *Store) RecentTasks(ctx context.Context, n int) ([]Task, error) {
	var out []Task
	if err := s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks WHERE status IN ('queued', 'delivered')
		OR id IN (SELECT id FROM tasks WHERE status IN ('done', 'failed', 'cancelled') ORDER BY id DESC LIMIT ?)
		ORDER BY id`, n); err != nil {
		return nil, fmt.Errorf("list recent tasks: %w", err)
	}
	return out, nil
}

// FailedLast returns the failed tasks that are their worker's latest
// finished task: a failure stands until the worker finishes a later one.
func (s *Store) FailedLast(ctx context.Context) ([]Task, error) {
	var out []Task
	if err := s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks t WHERE status = 'failed'
		AND id = (SELECT MAX(id) FROM tasks u WHERE u.to_pane = t.to_pane AND u.status IN ('done', 'failed', 'cancelled'))
		ORDER BY id`); err != nil {
		return nil, fmt.Errorf("list failed tasks: %w", err)
	}
	return out, nil
}

// Unnotified returns finished tasks whose master was not told yet.
func (s *Store) Unnotified(ctx context.Context) ([]Task, error) {
	var out []Task
	if err := s.db.SelectContext(ctx, &out, `SELECT `+taskCols+` FROM tasks
		WHERE status IN ('done', 'failed') AND notified_at IS NULL ORDER BY id`); err != nil {
		return nil, fmt.Errorf("list unnotified tasks: %w", err)
	}
	return out, nil
}

// TaskChange is a status transition with what it sets.
type TaskChange struct {
	From, To string // the transition; it happens only if the task is in From
	Result   string
	Error    string
	Reason   string
	Source   string // where the result came from (a final transition)
	// Work is the task's change on its worktree (a final transition;
	// recorded when Branch is set).
	Work api.Work
}

// MoveTask applies a transition if the task is still in ch.From, and
// reports whether it did: two deciders can never both finish a task. On
// PostgreSQL queued→delivered is a claim that never waits: while another
// transaction has the task locked, it reports false at once.
func (s *Store) MoveTask(ctx context.Context, id int64, ch TaskChange) (bool, error) {
	now := Now()
	q := `UPDATE tasks SET status = ?, reason = ?, updated_at = ?`
	args := []any{ch.To, ch.Reason, now}
	switch ch.To {
	case api.TaskDelivered:
		q += `, delivered_at = ?, attempts = attempts + 1`
		args = append(args, now)
	case api.TaskQueued:
		q += `, delivered_at = NULL`
	default:
		q += `, finished_at = ?, result = ?, error = ?, result_source = ?`
		args = append(args, now, ch.Result, ch.Error, ch.Source)
		if w := ch.Work; w.Branch != "" {
			q += `, branch = ?, base_commit = ?, head_commit = ?, commits = ?, diff_files = ?, diff_added = ?, diff_deleted = ?`
			args = append(args, w.Branch, w.Base, w.Head, w.Commits, w.Files, w.Added, w.Deleted)
		}
	}
	q += ` WHERE id = ? AND status = ?`
	args = append(args, id, ch.From)
	if s.db.dialect == Postgres && ch.From == api.TaskQueued && ch.To == api.TaskDelivered {
		// A claim: a row another transaction has locked (another node
		// claiming it) is not waited for but left to it.
		q += ` AND id = (SELECT id FROM tasks WHERE id = ? AND status = 'queued' FOR UPDATE SKIP LOCKED)`
		args = append(args, id)
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("update task %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// MarkNotified records that the task's master was told.
func (s *Store) MarkNotified(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE tasks SET notified_at = ? WHERE id = ? AND notified_at IS NULL`, Now(), id)
	if err != nil {
		return fmt.Errorf("mark task %d notified: %w", id, err)
	}
	return nil
}

// LastWork is the work of the latest finished task of pane that recorded
// one (its Head is where the pane's next task starts); false when none.
func (s *Store) LastWork(ctx context.Context, pane string) (api.Work, bool, error) {
	var w api.Work
	err := s.db.GetContext(ctx, &w, `SELECT branch, base_commit, head_commit, commits, diff_files, diff_added, diff_deleted
		FROM tasks WHERE to_pane = ? AND branch <> '' ORDER BY id DESC LIMIT 1`, pane)
	if errors.Is(err, sql.ErrNoRows) {
		return api.Work{}, false, nil
	}
	if err != nil {
		return api.Work{}, false, fmt.Errorf("last work of %s: %w", pane, err)
	}
	return w, true, nil
}
