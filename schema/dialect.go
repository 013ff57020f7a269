package schema

import (
	"context"
	"database/sql"
	"strings"

	"github.com/jmoiron/sqlx"
)

// The store speaks two dialects: SQLite, the embedded default (one file
// per home, one supervisor), and PostgreSQL, shared by the supervisors of
// several nodes. Queries are written once with ? placeholders and rebound
// for the driver (PostgreSQL's $1, $2, …); the few expressions that differ
// come from the dialect, and the migrations' two column types that differ
// are translated (see pgTypes).

// Dialects.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// IsURL reports whether spec names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a SQLite file.
func IsURL(spec string) bool {
	return strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://")
}

// conn is the database with every query rebound for its driver.
type conn struct {
	*sqlx.DB
	dialect string
}

func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.DB.ExecContext(ctx, c.Rebind(q), args...)
}

func (c *conn) GetContext(ctx context.Context, dest any, q string, args ...any) error {
	return c.DB.GetContext(ctx, dest, c.Rebind(q), args...)
}

func (c *conn) SelectContext(ctx context.Context, dest any, q string, args ...any) error {
	return c.DB.SelectContext(ctx, dest, c.Rebind(q), args...)
}

func (c *conn) BeginTxx(ctx context.Context, opts *sql.TxOptions) (*txn, error) {
	tx, err := c.DB.BeginTxx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{Tx: tx}, nil
}

// txn is a transaction with every query rebound for its driver.
type txn struct{ *sqlx.Tx }

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.Rebind(q), args...)
}

func (t *txn) GetContext(ctx context.Context, dest any, q string, args ...any) error {
	return t.Tx.GetContext(ctx, dest, t.Rebind(q), args...)
}

// instant is an SQL expression comparing the RFC 3339 text of col as an
// instant: the text of two times whose fractions differ in length does not
// sort by time.
func (c *conn) instant(col string) string {
	if c.dialect == Postgres {
		return "CAST(" + col + " AS timestamptz)"
	}
	return "julianday(" + col + ")"
}
