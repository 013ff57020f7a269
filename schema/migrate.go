package schema

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql migrations/postgres/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations of a dialect sorted by their
// number, which is the file name's prefix before the first underscore. A
// PostgreSQL file (migrations/postgres) replaces the shared one of its
// number.
func migrations(dialect string) ([]migration, error) {
	all, err := readMigrations("migrations")
	if err != nil {
		return nil, err
	}
	if dialect == Postgres {
		own, err := readMigrations("migrations/postgres")
		if err != nil {
			return nil, err
		}
		for _, m := range own {
			i := slices.IndexFunc(all, func(a migration) bool { return a.version == m.version })
			if i < 0 {
				return nil, fmt.Errorf("migration postgres/%s replaces no shared migration", m.name)
			}
			all[i] = m
		}
	}
	return all, nil
}

func readMigrations(dir string) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("migration %s has no number prefix", e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad number: %w", e.Name(), err)
		}
		body, err := migrationFS.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a number", out[i-1].name, out[i].name)
		}
	}
	return out, nil
}

// migrateLock is the PostgreSQL advisory lock that makes supervisors
// starting together apply the migrations one at a time.
const migrateLock = 0x63696379 // "cicy"

// migrate applies every embedded migration not yet recorded.
func migrate(ctx context.Context, db *conn) error {
	all, err := migrations(db.dialect)
	if err != nil {
		return err
	}
	for _, m := range all {
		if err := apply(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

// apply applies one migration in a transaction, unless it is recorded.
// On PostgreSQL the transaction first takes migrateLock, so of several
// supervisors starting together one applies it and the others then see
// it recorded.
func apply(ctx context.Context, db *conn, m migration) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration %s: %w", m.name, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	if db.dialect == Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, migrateLock); err != nil {
			return fmt.Errorf("lock for migration %s: %w", m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version); err != nil {
		return fmt.Errorf("check migration %s: %w", m.name, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("apply migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return fmt.Errorf("record migration %s: %w", m.name, err)
	}
	return tx.Commit()
}
