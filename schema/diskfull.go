package schema

import (
	"errors"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// pgDiskFull is PostgreSQL's SQLSTATE disk_full.
const pgDiskFull = "53100"

// fullError is a database error that says the disk is full; it matches
// syscall.ENOSPC, so callers test one thing whatever the database.
type fullError struct{ err error }

func (e *fullError) Error() string   { return e.err.Error() }
func (e *fullError) Unwrap() []error { return []error{e.err, syscall.ENOSPC} }

// markFull returns err marked as a full disk (errors.Is(err,
// syscall.ENOSPC)) when the database refused a write for lack of space:
// SQLite's SQLITE_FULL, PostgreSQL's disk_full; else err unchanged.
func markFull(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return &fullError{err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgDiskFull {
		return &fullError{err}
	}
	return err
}
