// Package schema owns the supervisor's database: numbered SQL migrations
// embedded in the binary and applied at open, and a sqlx store with the
// queries the supervisor needs, on either of two databases (dialect.go):
//
//   - the home's SQLite file (modernc.org/sqlite, no cgo; Open): WAL mode,
//     a busy timeout and a single connection, so a supervisor killed at any
//     moment leaves a file that opens cleanly;
//   - a PostgreSQL database (pgx; OpenURL) shared by the nodes of a
//     cluster: a pool of connections, the node table and leases
//     (nodes.go), each node's view of the tasks (nodetasks.go), and
//     LISTEN/NOTIFY of every task change (watch.go; migrations named
//     *.postgres.sql are PostgreSQL's alone).
//
// Migrations are applied in order, each in its own transaction, and
// recorded in schema_migrations; applying them again is a no-op. Every
// change of a task's status is a conditional update (MoveTask), so a task
// ends exactly once whoever decides it, on one machine or several.
package schema
