package schema

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
)

func migrationNames(ms []migration) string {
	var names []string
	for _, m := range ms {
		names = append(names, m.name)
	}
	return strings.Join(names, " ")
}

// TestMigrationsPerDialect: a .postgres.sql or .sqlite.sql file applies
// to its dialect only, so a number may appear once per dialect; twice in
// one dialect is an error.
func TestMigrationsPerDialect(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0001_init.sql":             {Data: []byte("a")},
		"m/0002_x.postgres.sql":       {Data: []byte("b")},
		"m/0002_x.sqlite.sql":         {Data: []byte("c")},
		"m/0003_only_pg.postgres.sql": {Data: []byte("d")},
		"m/0004_more.sql":             {Data: []byte("e")},
		"m/README":                    {Data: []byte("not a migration")},
	}
	for dialect, want := range map[string]string{
		Postgres: "0001_init.sql 0002_x.postgres.sql 0003_only_pg.postgres.sql 0004_more.sql",
		SQLite:   "0001_init.sql 0002_x.sqlite.sql 0004_more.sql",
	} {
		got, err := readMigrations(fsys, "m", dialect)
		if err != nil {
			t.Fatalf("%s: %v", dialect, err)
		}
		if names := migrationNames(got); names != want {
			t.Errorf("%s migrations = %s, want %s", dialect, names, want)
		}
	}

	fsys["m/0004_again.postgres.sql"] = &fstest.MapFile{Data: []byte("f")}
	if _, err := readMigrations(fsys, "m", Postgres); err == nil || !strings.Contains(err.Error(), "share a number") {
		t.Fatalf("two PostgreSQL migrations 0004: %v, want an error", err)
	}
	if _, err := readMigrations(fsys, "m", SQLite); err != nil {
		t.Fatalf("SQLite has one 0004: %v", err)
	}
}

// TestTaskNotesTriggerOnPostgresOnly: the PostgreSQL-only migration is
// recorded (and its trigger made) on PostgreSQL and absent from SQLite.
func TestTaskNotesTriggerOnPostgresOnly(t *testing.T) { eachStore(t, testTaskNotesTrigger) }

func testTaskNotesTrigger(t *testing.T, reopen func() *Store) {
	s := reopen()
	var n int
	if err := s.db.GetContext(context.Background(), &n,
		`SELECT COUNT(*) FROM schema_migrations WHERE name = '0007_task_notes.postgres.sql'`); err != nil {
		t.Fatal(err)
	}
	want := 0
	if s.Dialect() == Postgres {
		want = 1
		var triggers int
		if err := s.db.Get(&triggers, `SELECT COUNT(*) FROM pg_trigger WHERE tgname = 'tasks_note'`); err != nil || triggers != 1 {
			t.Fatalf("tasks_note triggers = %d, %v", triggers, err)
		}
	}
	if n != want {
		t.Fatalf("0007 recorded %d times on %s, want %d", n, s.Dialect(), want)
	}
}
