package schema

import (
	"context"
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
