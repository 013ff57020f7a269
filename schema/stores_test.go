package schema

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cicy-ai/cicy-agent/schema/pgtest"
)

// TestMain starts a private PostgreSQL for the tests that run on both
// dialects (see pgtest.Main).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// eachStore runs f on a fresh SQLite store and on a fresh PostgreSQL
// database (skipped where PostgreSQL is not installed, unless
// CICY_REQUIRE_PG=1). reopen opens the test's database again; each store
// it opens is closed at the test's end.
func eachStore(t *testing.T, f func(t *testing.T, reopen func() *Store)) {
	t.Run(SQLite, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "db", "cicy.db")
		f(t, func() *Store {
			s := open(t, path)
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run(Postgres, func(t *testing.T) {
		url := pgtest.Need(t).NewDB(t)
		f(t, func() *Store {
			s, err := OpenURL(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// TestPostgresOpenTogether: supervisors opening a fresh database at once
// apply each migration once; each node is held by one supervisor at a
// time, until it closes, and several nodes share the database.
func TestPostgresOpenTogether(t *testing.T) {
	url := pgtest.Need(t).NewDB(t)
	ctx := context.Background()
	stores := make([]*Store, 4)
	errs := make(chan error, len(stores))
	for i := range stores {
		go func() {
			s, err := OpenURL(ctx, url)
			stores[i] = s
			errs <- err
		}()
	}
	for range stores {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range stores {
		t.Cleanup(func() { s.Close() })
	}
	all, _ := migrations(Postgres)
	var n int
	if err := stores[0].db.Get(&n, `SELECT COUNT(*) FROM schema_migrations`); err != nil || n != len(all) {
		t.Fatalf("schema_migrations rows = %d, %v; want %d", n, err, len(all))
	}
	if err := stores[0].Hold(ctx, "a", 0); err != nil {
		t.Fatal(err)
	}
	if err := stores[1].Hold(ctx, "b", 0); err != nil {
		t.Fatalf("node b while a is held: %v", err)
	}
	if err := stores[2].Hold(ctx, "a", 0); !errors.Is(err, ErrHeld) {
		t.Fatalf("a second hold of node a: %v, want ErrHeld", err)
	}
	stores[0].Close() // gives the hold up at once
	if err := stores[2].Hold(ctx, "a", 0); err != nil {
		t.Fatalf("a hold of node a after its holder closed: %v", err)
	}
	if err := stores[3].Hold(ctx, "b", 0); !errors.Is(err, ErrHeld) {
		t.Fatalf("a second hold of node b: %v, want ErrHeld", err)
	}
}
