package schema

import (
	"context"
	"database/sql"
	"fmt"
)

// SetPaneBudget sets a pane's spending limit in US dollars, or removes it
// when usd is not valid; ErrNotFound when there is no such pane.
func (s *Store) SetPaneBudget(ctx context.Context, id string, usd sql.NullFloat64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE agent_config SET budget_usd = ?, updated_at = ? WHERE pane_id = ?`, usd, Now(), id)
	if err != nil {
		return fmt.Errorf("set the budget of %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// SetTeamBudget sets a team's spending limit in US dollars, or removes it
// when usd is not valid.
func (s *Store) SetTeamBudget(ctx context.Context, team string, usd sql.NullFloat64) error {
	var err error
	if usd.Valid {
		_, err = s.db.ExecContext(ctx, `INSERT INTO team_budgets (team, budget_usd, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (team) DO UPDATE SET budget_usd = excluded.budget_usd, updated_at = excluded.updated_at`,
			team, usd.Float64, Now())
	} else {
		_, err = s.db.ExecContext(ctx, `DELETE FROM team_budgets WHERE team = ?`, team)
	}
	if err != nil {
		return fmt.Errorf("set the budget of team %s: %w", team, err)
	}
	return nil
}

// TeamBudgets returns every team's spending limit by team name.
func (s *Store) TeamBudgets(ctx context.Context) (map[string]float64, error) {
	return selectMap[string, float64](ctx, s.db, "read the team budgets", `SELECT team AS k, budget_usd AS v FROM team_budgets`)
}
