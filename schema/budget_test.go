package schema

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"
)

// A pane's budget is stored with it, changed and removed, and goes when
// the pane goes; a team's is kept by name until removed. Neither may be
// zero or negative.
func TestBudgets(t *testing.T) { eachStore(t, testBudgets) }

func testBudgets(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	p := newPane("a")
	p.BudgetUSD = sql.NullFloat64{Float64: 0.5, Valid: true}
	a, err := s.CreatePane(ctx, p, ws)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreatePane(ctx, newPane("b"), ws)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetPane(ctx, a.ID); got.BudgetUSD != p.BudgetUSD {
		t.Errorf("created with %v, read back %v", p.BudgetUSD, got.BudgetUSD)
	}
	if got, _ := s.GetPane(ctx, b.ID); got.BudgetUSD.Valid {
		t.Errorf("a pane created without a budget has %v", got.BudgetUSD)
	}
	if err := s.SetPaneBudget(ctx, b.ID, sql.NullFloat64{Float64: 2, Valid: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPaneBudget(ctx, a.ID, sql.NullFloat64{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPaneBudget(ctx, "w-99", sql.NullFloat64{Float64: 1, Valid: true}); !errors.Is(err, ErrNotFound) {
		t.Errorf("budget of a missing pane: %v, want ErrNotFound", err)
	}
	refuseBadBudgets(t, s, b.ID)
	setTeamBudgets(t, s)
	s.Close()

	s = reopen()
	ps, err := s.ListPanes(ctx)
	if err != nil || len(ps) != 2 || ps[0].BudgetUSD.Valid || ps[1].BudgetUSD != (sql.NullFloat64{Float64: 2, Valid: true}) {
		t.Fatalf("panes after reopen: %+v, %v; want a without a budget and b with $2", ps, err)
	}
	teams, err := s.TeamBudgets(ctx)
	if want := map[string]float64{"demo": 7.3, "other": 1}; err != nil || !reflect.DeepEqual(teams, want) {
		t.Errorf("team budgets %v, %v; want %v", teams, err, want)
	}
	if err := s.DeletePane(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.Get(&n, `SELECT COUNT(*) FROM agent_config WHERE budget_usd IS NOT NULL`); err != nil || n != 0 {
		t.Errorf("%d pane budgets left after the pane was removed (%v)", n, err)
	}
}

// refuseBadBudgets checks the store refuses a budget of 0 or less.
func refuseBadBudgets(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	for _, bad := range []float64{0, -1} {
		if err := s.SetPaneBudget(ctx, id, sql.NullFloat64{Float64: bad, Valid: true}); err == nil {
			t.Errorf("a pane budget of %v was stored", bad)
		}
		if err := s.SetTeamBudget(ctx, "demo", sql.NullFloat64{Float64: bad, Valid: true}); err == nil {
			t.Errorf("a team budget of %v was stored", bad)
		}
	}
}

// setTeamBudgets sets, changes and removes team budgets: demo $7.3 and
// other $1 are left.
func setTeamBudgets(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []struct {
		team string
		usd  sql.NullFloat64
	}{
		{"demo", sql.NullFloat64{Float64: 5, Valid: true}}, {"other", sql.NullFloat64{Float64: 1, Valid: true}},
		{"gone", sql.NullFloat64{Float64: 3, Valid: true}}, {"demo", sql.NullFloat64{Float64: 7.3, Valid: true}},
		{"gone", sql.NullFloat64{}},
	} {
		if err := s.SetTeamBudget(ctx, c.team, c.usd); err != nil {
			t.Fatal(err)
		}
	}
}
