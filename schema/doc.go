// Package schema owns the supervisor's database: numbered SQL migrations
// embedded in the binary and applied at open, and a sqlx store with the
// queries the supervisor needs, on either of two databases (OpenSpec picks
// by the spec: a postgres:// or postgresql:// URL, else a file):
//
//   - the home's SQLite file (modernc.org/sqlite, no cgo; Open): WAL mode,
//     a busy timeout and a single connection, so a supervisor killed at any
//     moment leaves a file that opens cleanly; it is checked (quick_check)
//     at open and made the user's alone;
//   - a PostgreSQL database (pgx; OpenURL, `serve --db postgres://…`)
//     shared by the nodes of a cluster: a pool of connections, a session
//     advisory lock per node that Hold takes so two supervisors never
//     serve one node, the nodes table with each node's lease (nodes.go),
//     and LISTEN/NOTIFY: a trigger notifies channel cicy_tasks of every
//     task insert or update, and RegisterNode announces a node on
//     cicy_nodes; WatchTasks listens on a connection of its own,
//     reconnecting with a backoff (watch.go).
//
// Queries are written once with ? placeholders and rebound for the
// driver (PostgreSQL's $1, $2, …); the few expressions that differ come
// from the dialect (dialect.go). Migrations are applied in order, each in
// its own transaction, and recorded in schema_migrations; applying them
// again is a no-op. NNNN_name.sql applies to both databases,
// NNNN_name.postgres.sql and NNNN_name.sqlite.sql to theirs alone; on
// PostgreSQL the migrations' two column types that differ are translated,
// and each migration first takes an advisory lock, so of several
// supervisors starting together one applies it (migrate.go).
//
// Every change of a task's status is a conditional update (MoveTask), so
// a task ends exactly once whoever decides it, on one machine or several;
// on PostgreSQL a claim of a queued task (queued→delivered) also skips a
// row another node holds locked (FOR UPDATE SKIP LOCKED) rather than wait
// for it. ForNode is the tasks as one node's outbox sees them: those to
// its own panes, which it delivers, and those from them, which it reports;
// a pane with no row (the user, a removed pane) belongs to every node
// (nodetasks.go). A write the database refused for lack of space is
// marked as a full disk, errors.Is(err, syscall.ENOSPC) whatever the
// database (diskfull.go; the ledger's AddUsage).
//
// Notifications (notify.go) go through a durable queue, one row per event
// and sink (enqueued once however often): a sender claims due rows for a
// lease — on PostgreSQL skipping the rows another node is claiming, and
// re-checking the claim, so two nodes never hold one row — and records
// each as sent (never claimed again) or failed (due again at its
// backoff). Beside it are the sinks (where each one's secret lives, not
// the secret), the needs-you episodes open now, mutes, the answers given
// from a messenger (the first of an event wins) and the flap windows
// that hold back a key's repeated events for a digest.
package schema
