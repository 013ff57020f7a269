package schema

import (
	"context"
	"errors"
	"testing"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newPane(title string) Pane {
	return Pane{Title: title, Type: "shell", Role: "worker", Command: `["bash"]`, Backend: "pty", Config: "{}"}
}

func ws(id string) (string, error) { return "/tmp/" + id, nil }

func TestMigrationsAreIdempotent(t *testing.T) { eachStore(t, testMigrationsAreIdempotent) }

func testMigrationsAreIdempotent(t *testing.T, reopen func() *Store) {
	s := reopen()
	if _, err := s.CreatePane(context.Background(), newPane("a"), ws); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = reopen() // the second open applies nothing and keeps the data
	all, err := migrations(s.Dialect())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.Get(&n, `SELECT COUNT(*) FROM schema_migrations`); err != nil || n != len(all) {
		t.Fatalf("schema_migrations rows = %d, %v; want one per migration (%d)", n, err, len(all))
	}
	ps, err := s.ListPanes(context.Background())
	if err != nil || len(ps) != 1 {
		t.Fatalf("panes after reopen = %v, %v", ps, err)
	}
	if s.Dialect() != SQLite {
		return
	}
	var mode string
	if err := s.db.Get(&mode, `PRAGMA journal_mode`); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
}

func TestPaneIDsAreNeverReused(t *testing.T) { eachStore(t, testPaneIDsAreNeverReused) }

func testPaneIDsAreNeverReused(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	a, _ := s.CreatePane(ctx, newPane("a"), ws)
	b, _ := s.CreatePane(ctx, newPane("b"), ws)
	if err := s.DeletePane(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	c, _ := s.CreatePane(ctx, newPane("c"), ws)
	if a.ID != "w-1" || b.ID != "w-2" || c.ID != "w-3" {
		t.Fatalf("ids = %s %s %s", a.ID, b.ID, c.ID)
	}
	if err := s.DeletePane(ctx, b.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestFailedCreateLeavesNothing(t *testing.T) { eachStore(t, testFailedCreateLeavesNothing) }

func testFailedCreateLeavesNothing(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	boom := errors.New("boom")
	if _, err := s.CreatePane(ctx, newPane("x"), func(string) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("create: %v", err)
	}
	bad := newPane("y")
	bad.Type = "" // violates the CHECK constraint after the id is taken
	if _, err := s.CreatePane(ctx, bad, ws); err == nil {
		t.Fatal("a row without a type was accepted")
	}
	ps, _ := s.ListPanes(ctx)
	if len(ps) != 0 {
		t.Fatalf("rows left: %v", ps)
	}
	p, err := s.CreatePane(ctx, newPane("z"), ws)
	if err != nil || p.ID != "w-1" {
		t.Fatalf("next id = %s, %v (the failed creates must not spend ids)", p.ID, err)
	}
}

func TestRuntimeRoundTripAndOrder(t *testing.T) { eachStore(t, testRuntimeRoundTripAndOrder) }

func testRuntimeRoundTripAndOrder(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	for i := 0; i < 11; i++ {
		if _, err := s.CreatePane(ctx, newPane("p"), ws); err != nil {
			t.Fatal(err)
		}
	}
	r := Runtime{}
	r.State.String, r.State.Valid = "exited", true
	r.Reason.String, r.Reason.Valid = "exited with code 3", true
	r.Since.String, r.Since.Valid = Now(), true
	r.ExitCode.Int64, r.ExitCode.Valid = 3, true
	if err := s.SaveRuntime(ctx, "w-10", r); err != nil {
		t.Fatal(err)
	}
	ps, _ := s.ListPanes(ctx)
	if ps[9].ID != "w-10" || ps[10].ID != "w-11" {
		t.Fatalf("order: %s, %s", ps[9].ID, ps[10].ID)
	}
	if got := ps[9].Runtime; got.State.String != "exited" || got.ExitCode.Int64 != 3 || !got.ExitCode.Valid {
		t.Fatalf("runtime = %+v", got)
	}
	if err := s.DeletePane(ctx, "w-10"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.Get(&n, `SELECT COUNT(*) FROM pane_runtime`); err != nil || n != 0 {
		t.Fatalf("runtime rows after delete = %d, %v", n, err)
	}
}
