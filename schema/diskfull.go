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
	if err == nil {
		return nil
	}
	if _, ok := err.(*fullError); ok {
		return err
	}
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

// OnWrite sets fn to be told the outcome of every write to the database
// (nil when it succeeded; an error that says the disk is full matches
// syscall.ENOSPC): the supervisor's view of a full disk. fn must not
// block. A transaction's writes are told when they fail and at its
// commit.
func (s *Store) OnWrite(fn func(error)) { s.db.onWrite.Store(&fn) }
