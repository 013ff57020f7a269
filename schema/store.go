package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/jmoiron/sqlx"

	"github.com/cicy-ai/cicy-agent/pane"
	_ "modernc.org/sqlite" // registers the "sqlite" driver, pure Go
)

// ErrNotFound is returned when a row asked for does not exist.
var ErrNotFound = errors.New("not found")

// Store is the supervisor's database: a SQLite file, or a PostgreSQL
// database (see dialect.go).
type Store struct {
	db *conn
	// url is the PostgreSQL URL the store was opened with ("" for SQLite),
	// for the connection WatchTasks listens on. It may hold a password:
	// only RedactURL(url) goes into a message.
	url string
	// held is the connection that holds the database for one node's
	// supervisor (see Hold), heldNode that node.
	held     *sql.Conn
	heldNode string
}

// ErrHeld is returned by Hold when another supervisor serves the node.
var ErrHeld = errors.New("another supervisor serves this node on this database")

// holdLock is the first key of the PostgreSQL advisory lock a supervisor
// holds on its database for as long as it runs; the second is the hash of
// its node's name.
const holdLock = 0x63696370 // "cicp"

// Hold claims a node of a PostgreSQL database for this supervisor until
// Close, on a connection of its own (a session advisory lock, which
// PostgreSQL also releases when the supervisor dies): several supervisors
// share a database, but two never serve one node. ErrHeld when another
// supervisor serves node. It tries again for up to wait: a supervisor
// restarted right after one was killed may find the old session not yet
// ended. A SQLite file needs no claim: its home is locked.
func (s *Store) Hold(ctx context.Context, node string, wait time.Duration) error {
	if s.db.dialect != Postgres || s.held != nil {
		return nil
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("claim the node: %w", err)
	}
	for deadline := time.Now().Add(wait); ; {
		var ok bool
		if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, holdLock, node).Scan(&ok); err != nil {
			c.Close()
			return fmt.Errorf("claim the node: %w", err)
		}
		if ok {
			s.held, s.heldNode = c, node
			return nil
		}
		if !time.Now().Before(deadline) {
			c.Close()
			return ErrHeld
		}
		select {
		case <-ctx.Done():
			c.Close()
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pane is one agent_config row with its last recorded runtime state.
type Pane struct {
	ID           string         `db:"pane_id"`
	Title        string         `db:"title"`
	Type         string         `db:"agent_type"`
	Role         string         `db:"role"`
	RoleTemplate string         `db:"role_template"`
	Workspace    string         `db:"workspace"`
	Provider     string         `db:"provider"`
	Model        string         `db:"model"`
	Command      string         `db:"command"` // JSON array
	Backend      string         `db:"backend"`
	Master       sql.NullString `db:"master"`
	Config       string         `db:"config"` // JSON object
	// BudgetUSD is the pane's own spending limit; NULL when it has none.
	BudgetUSD sql.NullFloat64 `db:"budget_usd"`
	// Node is the node whose supervisor started the pane ("" before a
	// supervisor adopted it: see AdoptPanes).
	Node string `db:"node"`
	// SessionID is a CLI agent's own session id, the latest it revealed
	// (its hooks or events); SessionAt when it was seen. "" before any.
	SessionID string `db:"session_id"`
	SessionAt string `db:"session_at"`
	CreatedAt string `db:"created_at"`
	UpdatedAt string `db:"updated_at"`
	Runtime
}

// Runtime is the last state the supervisor recorded for a pane.
type Runtime struct {
	State    sql.NullString `db:"state"`
	Reason   sql.NullString `db:"reason"`
	Since    sql.NullString `db:"since"`
	PID      sql.NullInt64  `db:"pid"`
	ExitCode sql.NullInt64  `db:"exit_code"`
}

// Status is the pane status a stored runtime records ("never started"
// when it has none).
func (r Runtime) Status() pane.Status {
	if !r.State.Valid {
		return pane.Status{State: pane.Exited, Reason: "never started"}
	}
	st := pane.Status{State: pane.State(r.State.String), Reason: r.Reason.String, Since: ParseTime(r.Since.String)}
	if r.ExitCode.Valid {
		c := int(r.ExitCode.Int64)
		st.ExitCode = &c
	}
	return st
}

// RuntimeOf is the runtime to store of a pane's status.
func RuntimeOf(st pane.Status) Runtime {
	r := Runtime{
		State:  sql.NullString{String: string(st.State), Valid: true},
		Reason: sql.NullString{String: st.Reason, Valid: true},
		Since:  sql.NullString{String: FormatTime(st.Since), Valid: true},
		PID:    sql.NullInt64{Int64: int64(st.PID), Valid: true},
	}
	if st.ExitCode != nil {
		r.ExitCode = sql.NullInt64{Int64: int64(*st.ExitCode), Valid: true}
	}
	return r
}

// Open opens (creating if needed) the database at path and applies the
// migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create database folder: %w", err)
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sqlx.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	// One connection: WAL with several writers on one file has produced
	// SQLITE_NOTADB in other projects, and the supervisor is the only writer.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	// SQLite creates its files 0644; they hold task texts and results.
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(f, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			db.Close()
			return nil, fmt.Errorf("make database %s private: %w", f, err)
		}
	}
	var check string
	if err := db.GetContext(ctx, &check, `PRAGMA quick_check`); err != nil || check != "ok" {
		db.Close()
		if err == nil {
			err = errors.New(check)
		}
		return nil, fmt.Errorf("database %s failed its integrity check: %w", path, err)
	}
	c := &conn{DB: db, dialect: SQLite}
	if err := migrate(ctx, c); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: c}, nil
}

// OpenURL opens the PostgreSQL database at url (postgres://…) and applies
// the migrations; several supervisors may open one database at once.
func OpenURL(ctx context.Context, url string) (*Store, error) {
	db, err := sqlx.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", RedactURL(url), err)
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", RedactURL(url), err)
	}
	c := &conn{DB: db, dialect: Postgres}
	if err := migrate(ctx, c); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: c, url: url}, nil
}

// OpenSpec opens a PostgreSQL URL with OpenURL and anything else as a
// SQLite file with Open.
func OpenSpec(ctx context.Context, spec string) (*Store, error) {
	if IsURL(spec) {
		return OpenURL(ctx, spec)
	}
	return Open(ctx, spec)
}

// Dialect is SQLite or Postgres.
func (s *Store) Dialect() string { return s.db.dialect }

// RedactURL is url without its password, for messages and logs.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a database URL that does not parse)"
	}
	return u.Redacted()
}

// Close closes the database (and gives up a claim Hold made).
func (s *Store) Close() error {
	if s.held != nil {
		// Released at once, not when the server notices the closed
		// connection: the next supervisor may start right away.
		_, _ = s.held.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, hashtext($2))`, holdLock, s.heldNode)
		s.held.Close()
		s.held = nil
	}
	return s.db.Close()
}

// Now is the timestamp format of every time column.
func Now() string { return FormatTime(time.Now()) }

// FormatTime formats t the way the time columns hold it.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ParseTime reads a time column; a malformed value gives the zero time.
func ParseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// CreatePane allocates the next pane id, lets prepare set up what the pane
// needs outside the database (it returns the workspace path), and inserts
// the row, all in one transaction: when prepare or the insert fails, the
// counter is rolled back and no row is left.
func (s *Store) CreatePane(ctx context.Context, p Pane, prepare func(id string) (workspace string, err error)) (Pane, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return Pane{}, fmt.Errorf("begin create: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	var n int64
	if err := tx.GetContext(ctx, &n, `UPDATE counters SET value = value + 1 WHERE name = 'pane' RETURNING value`); err != nil {
		return Pane{}, fmt.Errorf("allocate pane id: %w", err)
	}
	p.ID = fmt.Sprintf("w-%d", n)
	ws, err := prepare(p.ID)
	if err != nil {
		return Pane{}, err
	}
	p.Workspace = ws
	p.CreatedAt = Now()
	p.UpdatedAt = p.CreatedAt
	if _, err := tx.NamedExecContext(ctx, `INSERT INTO agent_config
		(pane_id, title, agent_type, role, role_template, workspace, provider, model, command, backend, master, config, budget_usd, node, created_at, updated_at)
		VALUES (:pane_id, :title, :agent_type, :role, :role_template, :workspace, :provider, :model, :command, :backend, :master, :config, :budget_usd, :node, :created_at, :updated_at)`, p); err != nil {
		return Pane{}, fmt.Errorf("insert pane: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Pane{}, fmt.Errorf("commit create: %w", err)
	}
	return p, nil
}

const paneSelect = `SELECT a.pane_id, a.title, a.agent_type, a.role, a.role_template, a.workspace, a.provider,
	a.model, a.command, a.backend, a.master, a.config, a.budget_usd, a.node, a.session_id, a.session_at, a.created_at, a.updated_at,
	r.state, r.reason, r.since, r.pid, r.exit_code
	FROM agent_config a LEFT JOIN pane_runtime r ON r.pane_id = a.pane_id`

// ListPanes returns every pane in id order.
func (s *Store) ListPanes(ctx context.Context) ([]Pane, error) {
	var out []Pane
	// Order by the number after "w-", not by text (w-10 after w-9).
	if err := s.db.SelectContext(ctx, &out, paneSelect+` ORDER BY CAST(substr(a.pane_id, 3) AS INTEGER)`); err != nil {
		return nil, fmt.Errorf("list panes: %w", err)
	}
	return out, nil
}

// Masters returns the panes whose role is master (every node's), in id
// order.
func (s *Store) Masters(ctx context.Context) ([]Pane, error) {
	var out []Pane
	if err := s.db.SelectContext(ctx, &out, paneSelect+` WHERE a.role = 'master' ORDER BY CAST(substr(a.pane_id, 3) AS INTEGER)`); err != nil {
		return nil, fmt.Errorf("list masters: %w", err)
	}
	return out, nil
}

// GetPane returns one pane, or ErrNotFound.
func (s *Store) GetPane(ctx context.Context, id string) (Pane, error) {
	var p Pane
	err := s.db.GetContext(ctx, &p, paneSelect+` WHERE a.pane_id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Pane{}, ErrNotFound
	}
	if err != nil {
		return Pane{}, fmt.Errorf("get pane %s: %w", id, err)
	}
	return p, nil
}

// DeletePane removes a pane's row (and its runtime row); ErrNotFound when
// there is none.
func (s *Store) DeletePane(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM agent_config WHERE pane_id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete pane %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// SaveRuntime records a pane's runtime state.
func (s *Store) SaveRuntime(ctx context.Context, id string, r Runtime) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO pane_runtime (pane_id, state, reason, since, pid, exit_code)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (pane_id) DO UPDATE SET state = excluded.state, reason = excluded.reason,
			since = excluded.since, pid = excluded.pid, exit_code = excluded.exit_code`,
		id, r.State.String, r.Reason.String, r.Since.String, r.PID.Int64, r.ExitCode)
	if err != nil {
		return fmt.Errorf("save runtime of %s: %w", id, err)
	}
	return nil
}

// TaskCounts returns, per dispatching pane, how many tasks it has in each
// status.
func (s *Store) TaskCounts(ctx context.Context) (map[string]map[string]int, error) {
	var rows []struct {
		From   string `db:"from_pane"`
		Status string `db:"status"`
		N      int    `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT from_pane, status, COUNT(*) AS n FROM tasks GROUP BY from_pane, status`); err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	out := map[string]map[string]int{}
	for _, r := range rows {
		put2(out, r.From, r.Status, r.N)
	}
	return out, nil
}

// Tables are the names of the tables in the SQLite file at path, in
// name order, and whether they are ours (the migrations' record is among
// them): a valid file without it — none at all (a `sqlite3 cicy.db
// .quit`), or some other program's tables — is no database of ours. The
// file is opened read-only and not changed.
func Tables(path string) (names []string, ours bool, err error) {
	db, err := sqlx.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	if err := db.Select(&names, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return names, slices.Contains(names, "schema_migrations"), nil
}
