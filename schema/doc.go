// Package schema owns the supervisor's SQLite database: numbered SQL
// migrations embedded in the binary and applied at open, and a sqlx store
// with the queries the supervisor needs.
//
// The database runs in WAL mode with a busy timeout and a single connection,
// so a supervisor killed at any moment leaves a file that opens cleanly.
// Migrations are applied in order, each in its own transaction, and recorded
// in schema_migrations; applying them again is a no-op.
package schema
