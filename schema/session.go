package schema

import (
	"context"
	"fmt"
)

// SetPaneSession records the session id a CLI agent pane's program runs
// (its own conversation id, which resuming it takes), seen at at (a time
// column value); ErrNotFound when there is no such pane.
func (s *Store) SetPaneSession(ctx context.Context, id, session, at string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE agent_config SET session_id = ?, session_at = ? WHERE pane_id = ?`, session, at, id)
	if err != nil {
		return fmt.Errorf("record the session of %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
