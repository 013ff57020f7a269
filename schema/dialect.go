package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"

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

// conn is the database with every query rebound for its driver. Every
// write's error that says the disk is full is marked so (markFull), and
// every write's outcome goes to the hook set with Store.OnWrite.
type conn struct {
	*sqlx.DB
	dialect string
	onWrite atomic.Pointer[func(error)]
}

// wrote marks err as a full disk when it is one and tells the hook.
func (c *conn) wrote(err error) error {
	err = markFull(err)
	if f := c.onWrite.Load(); f != nil {
		(*f)(err)
	}
	return err
}

// isWrite reports whether q changes the database (a write that returns
// rows, INSERT … RETURNING, goes through GetContext).
func isWrite(q string) bool {
	q = strings.ToUpper(strings.TrimSpace(q))
	return strings.HasPrefix(q, "INSERT") || strings.HasPrefix(q, "UPDATE") || strings.HasPrefix(q, "DELETE")
}

func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := c.DB.ExecContext(ctx, c.Rebind(q), args...)
	if isWrite(q) {
		err = c.wrote(err)
	}
	return res, err
}

func (c *conn) NamedExecContext(ctx context.Context, q string, arg any) (sql.Result, error) {
	res, err := c.DB.NamedExecContext(ctx, q, arg)
	return res, c.wrote(err)
}

func (c *conn) GetContext(ctx context.Context, dest any, q string, args ...any) error {
	err := c.DB.GetContext(ctx, dest, c.Rebind(q), args...)
	if isWrite(q) {
		err = c.wrote(err)
	}
	return err
}

func (c *conn) SelectContext(ctx context.Context, dest any, q string, args ...any) error {
	return c.DB.SelectContext(ctx, dest, c.Rebind(q), args...)
}

// selectMap reads the rows of a query of two columns named k and v as a
// map from k to v; what says what failed.
func selectMap[K comparable, V any](ctx context.Context, c *conn, what, q string, args ...any) (map[K]V, error) {
	var rows []struct {
		K K `db:"k"`
		V V `db:"v"`
	}
	if err := c.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make(map[K]V, len(rows))
	for _, r := range rows {
		out[r.K] = r.V
	}
	return out, nil
}

// put2 sets m[a][b] to v, making m[a] when it is missing.
func put2[A, B comparable, V any](m map[A]map[B]V, a A, b B, v V) {
	if m[a] == nil {
		m[a] = map[B]V{}
	}
	m[a][b] = v
}

func (c *conn) BeginTxx(ctx context.Context, opts *sql.TxOptions) (*txn, error) {
	tx, err := c.DB.BeginTxx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{Tx: tx, c: c}, nil
}

// txn is a transaction with every query rebound for its driver; its
// writes' errors and its commit's outcome are told as the conn's are.
type txn struct {
	*sqlx.Tx
	c *conn
}

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := t.Tx.ExecContext(ctx, t.Rebind(q), args...)
	if err != nil {
		err = t.c.wrote(err)
	}
	return res, err
}

func (t *txn) NamedExecContext(ctx context.Context, q string, arg any) (sql.Result, error) {
	res, err := t.Tx.NamedExecContext(ctx, q, arg)
	if err != nil {
		err = t.c.wrote(err)
	}
	return res, err
}

// Commit ends the transaction; its outcome is the write's.
func (t *txn) Commit() error { return t.c.wrote(t.Tx.Commit()) }

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
