package schema

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jmoiron/sqlx"

	"github.com/cicy-ai/cicy-agent/schema/pgtest"
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

// TestAgentTypeIsText: a database made before 0010, whose table checked
// the pane type against the five types of then, takes any type after it
// (the registry checks them), and keeps its panes, their runtime rows and
// gateway tokens — and the cascade that removes those with their pane.
func TestAgentTypeIsText(t *testing.T) { eachOldStore(t, testAgentTypeIsText) }

// eachOldStore runs f on a fresh SQLite database and a fresh PostgreSQL
// one, each given as a bare connection (old: for f to build it as an
// older version left it) and as the store that opens it (reopen: every
// migration).
func eachOldStore(t *testing.T, f func(t *testing.T, old *conn, reopen func() *Store)) {
	t.Run(SQLite, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cicy.db")
		db, err := sqlx.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(ON)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		f(t, &conn{DB: db, dialect: SQLite}, func() *Store { return open(t, path) })
	})
	t.Run(Postgres, func(t *testing.T) {
		url := pgtest.Need(t).NewDB(t)
		db, err := sqlx.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		f(t, &conn{DB: db, dialect: Postgres}, func() *Store {
			s, err := OpenURL(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// applyBefore applies to old the migrations before version.
func applyBefore(t *testing.T, old *conn, version int) {
	t.Helper()
	all, err := migrations(old.dialect)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		if m.version < version {
			if err := apply(context.Background(), old, m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// testAgentTypeIsText makes old's database as it was before 0010, then
// opens it with every migration (reopen).
func testAgentTypeIsText(t *testing.T, old *conn, reopen func() *Store) {
	ctx := context.Background()
	applyBefore(t, old, 10)
	for _, q := range []string{
		`INSERT INTO agent_config (pane_id, title, agent_type, workspace, backend, created_at, updated_at, budget_usd, node)
			VALUES ('w-1', 'lead', 'claude', '/w', 'tmux', 't0', 't1', 2.5, 'n1')`,
		`INSERT INTO pane_runtime (pane_id, state, since) VALUES ('w-1', 'idle', 't2')`,
		`INSERT INTO gateway_tokens (pane_id, token_hash, created_at) VALUES ('w-1', 'h', 't3')`,
		`UPDATE counters SET value = 1 WHERE name = 'pane'`,
	} {
		if _, err := old.ExecContext(ctx, old.Rebind(q)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.ExecContext(ctx, `INSERT INTO agent_config (pane_id, title, agent_type, workspace, backend, created_at, updated_at)
		VALUES ('w-2', 'x', 'gemini', '/w', 'tmux', 't0', 't1')`); err == nil {
		t.Fatal("the old table took a type it did not list: the test does not start where it should")
	}
	old.Close()
	s := reopen()
	p, err := s.GetPane(ctx, "w-1")
	if err != nil || p.Type != "claude" || p.Title != "lead" || p.Node != "n1" || !p.BudgetUSD.Valid || p.BudgetUSD.Float64 != 2.5 || p.State.String != "idle" {
		t.Fatalf("the pane after 0010: %+v, %v", p, err)
	}
	tokens, err := s.GatewayTokens(ctx)
	if err != nil || tokens["h"] != "w-1" {
		t.Fatalf("tokens after 0010: %v, %v", tokens, err)
	}
	if _, err := s.CreatePane(ctx, Pane{Title: "g", Type: "gemini", Workspace: "/w", Backend: "tmux"}, ws); err != nil {
		t.Fatalf("a type the old table did not list: %v", err)
	}
	if err := s.DeletePane(ctx, "w-1"); err != nil {
		t.Fatal(err)
	}
	if tokens, _ := s.GatewayTokens(ctx); len(tokens) != 0 {
		t.Fatalf("a removed pane's token stayed: %v", tokens)
	}
}

// TestWorkerMasterRecorded: 0011 records, for a worker that had none, the
// master it reported to by the old rule (the only master, looked up each
// time), so that no worker of a database made before it changes master;
// with several masters, a worker keeps none.
func TestWorkerMasterRecorded(t *testing.T) {
	for _, masters := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d masters", masters), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cicy.db")
			db, err := sqlx.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(ON)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			old := &conn{DB: db, dialect: SQLite}
			ctx := context.Background()
			all, err := migrations(SQLite)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range all {
				if m.version < 11 {
					if err := apply(ctx, old, m); err != nil {
						t.Fatal(err)
					}
				}
			}
			rows := []string{
				`('w-1', 'lead', 'master', NULL)`,
				`('w-2', 'free', 'worker', NULL)`,
				`('w-3', 'told', 'worker', 'w-1')`,
				`('w-4', 'rev', 'reviewer', NULL)`,
			}
			if masters == 2 {
				rows = append(rows, `('w-5', 'boss', 'master', NULL)`)
			}
			for _, r := range rows {
				if _, err := old.ExecContext(ctx, `INSERT INTO agent_config (pane_id, title, role, master, agent_type, workspace, backend, created_at, updated_at)
					SELECT v.*, 'shell', '/w', 'pty', 't0', 't1' FROM (VALUES `+r+`) v`); err != nil {
					t.Fatal(err)
				}
			}
			old.Close()
			s := open(t, path)
			want := map[string]string{"w-1": "", "w-2": "w-1", "w-3": "w-1", "w-4": ""}
			if masters == 2 {
				want["w-2"] = ""
			}
			for id, m := range want {
				p, err := s.GetPane(ctx, id)
				if err != nil || p.Master.String != m {
					t.Errorf("%s's master after 0011: %q, %v; want %q", id, p.Master.String, err, m)
				}
			}
		})
	}
}
