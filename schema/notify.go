package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jmoiron/sqlx"
)

// The notification tables (migration 0013): the sinks, the durable queue
// the cluster's sender works through, the needs-you episodes open now, the
// mutes, the answers given from a messenger and the flap windows.

// ErrExists is returned when a row to add is already there.
var ErrExists = errors.New("already exists")

// ErrNotClaimed is returned by NotifySent and NotifyFailed when the row is
// no longer claimed by the node reporting on it: its claim lapsed and
// another node took it, or it was sent or deleted meanwhile.
var ErrNotClaimed = errors.New("not claimed by this node")

// NotifySink is one notify_sinks row: a place events are sent to. Its
// secret is not here, only where it lives.
type NotifySink struct {
	Name string `db:"name"`
	Type string `db:"type"`
	URL  string `db:"url"`
	Chat string `db:"chat"`
	// Events is the filter, a comma list ("" = every event).
	Events string `db:"events"`
	// SecretRef is where the secret lives: "file:<path>" or "env:<NAME>".
	SecretRef string `db:"secret_ref"`
	// Team is "" for the home's own sink, else the name of the team file
	// that declares it.
	Team      string `db:"team"`
	CreatedAt string `db:"created_at"`
}

const sinkCols = `name, type, url, chat, events, secret_ref, team, created_at`

// AddNotifySink adds a sink; ErrExists when its name is taken.
func (s *Store) AddNotifySink(ctx context.Context, k NotifySink) error {
	if k.CreatedAt == "" {
		k.CreatedAt = Now()
	}
	res, err := s.db.NamedExecContext(ctx, `INSERT INTO notify_sinks (`+sinkCols+`)
		VALUES (:name, :type, :url, :chat, :events, :secret_ref, :team, :created_at)
		ON CONFLICT (name) DO NOTHING`, k)
	if err != nil {
		return fmt.Errorf("add sink %s: %w", k.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sink %s: %w", k.Name, ErrExists)
	}
	return nil
}

// PutNotifySink adds a sink or replaces the one of its name (a team file
// applied again); a replaced sink keeps its created_at.
func (s *Store) PutNotifySink(ctx context.Context, k NotifySink) error {
	if k.CreatedAt == "" {
		k.CreatedAt = Now()
	}
	_, err := s.db.NamedExecContext(ctx, `INSERT INTO notify_sinks (`+sinkCols+`)
		VALUES (:name, :type, :url, :chat, :events, :secret_ref, :team, :created_at)
		ON CONFLICT (name) DO UPDATE SET type = excluded.type, url = excluded.url, chat = excluded.chat,
			events = excluded.events, secret_ref = excluded.secret_ref, team = excluded.team`, k)
	if err != nil {
		return fmt.Errorf("put sink %s: %w", k.Name, err)
	}
	return nil
}

// NotifySinks returns every sink by name.
func (s *Store) NotifySinks(ctx context.Context) ([]NotifySink, error) {
	var out []NotifySink
	if err := s.db.SelectContext(ctx, &out, `SELECT `+sinkCols+` FROM notify_sinks ORDER BY name`); err != nil {
		return nil, fmt.Errorf("list sinks: %w", err)
	}
	return out, nil
}

// DeleteNotifySink removes a sink and its unsent queue rows (its sent
// ones stay, the record of what it was sent); ErrNotFound when there is
// no such sink.
func (s *Store) DeleteNotifySink(ctx context.Context, name string) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete sink %s: %w", name, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	res, err := tx.ExecContext(ctx, `DELETE FROM notify_sinks WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("delete sink %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sink %s: %w", name, ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM notify_queue WHERE sink = ? AND sent_at = ''`, name); err != nil {
		return fmt.Errorf("delete the queue of sink %s: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete sink %s: %w", name, err)
	}
	return nil
}

// NotifyItem is one notify_queue row: an event to send to one sink.
type NotifyItem struct {
	ID       int64  `db:"id"`
	EventID  string `db:"event_id"` // the idempotency key, with Sink
	Sink     string `db:"sink"`
	Payload  string `db:"payload"` // JSON
	Attempts int    `db:"attempts"`
	// NextAt is when it may be tried (again).
	NextAt string `db:"next_at"`
	// ClaimedBy is the node sending it ("" when none), until ClaimedUntil.
	ClaimedBy    string `db:"claimed_by"`
	ClaimedUntil string `db:"claimed_until"`
	// TriedAt is its last attempt ("" before the first).
	TriedAt string `db:"tried_at"`
	SentAt  string `db:"sent_at"` // "" until the sink took it
	// Status is the last attempt's HTTP status (a command's exit status).
	Status       int    `db:"status"`
	LastError    string `db:"last_error"`
	FirstErrorAt string `db:"first_error_at"`
	Answer       string `db:"answer"` // the sink's answer to the send that took
	CreatedAt    string `db:"created_at"`
}

const itemCols = `id, event_id, sink, payload, attempts, next_at, claimed_by, claimed_until, tried_at,
	sent_at, status, last_error, first_error_at, answer, created_at`

// EnqueueNotify queues the event (its id and JSON payload) for each of
// sinks, due at at, in one transaction, and returns how many rows it
// added: an event already queued for a sink is not queued again.
func (s *Store) EnqueueNotify(ctx context.Context, eventID, payload string, sinks []string, at time.Time) (added int, err error) {
	if len(sinks) == 0 {
		return 0, nil
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("queue event %s: %w", eventID, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	t := FormatTime(at)
	for _, sink := range sinks {
		res, err := tx.ExecContext(ctx, `INSERT INTO notify_queue (event_id, sink, payload, created_at, next_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (event_id, sink) DO NOTHING`, eventID, sink, payload, t, t)
		if err != nil {
			return 0, fmt.Errorf("queue event %s for %s: %w", eventID, sink, err)
		}
		n, _ := res.RowsAffected()
		added += int(n)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("queue event %s: %w", eventID, err)
	}
	return added, nil
}

// claimFree is the SQL condition that a row's claim is free or lapsed at
// the time bound to its one ?. (A CASE, not an OR: PostgreSQL does not
// promise to test for an empty claimed_until before casting it.)
func (c *conn) claimFree() string {
	return `CASE WHEN claimed_until = '' THEN TRUE ELSE ` + c.instant("claimed_until") + ` <= ` + c.instant("?") + ` END`
}

// ClaimNotify claims for node, until now+lease, up to limit unsent rows of
// sinks that are due (next_at <= now) and not claimed by anyone (or whose
// claim lapsed), and returns them oldest first. Two nodes never claim one
// row: on PostgreSQL the rows another claimer has locked are skipped, on
// SQLite the one statement is one write transaction.
func (s *Store) ClaimNotify(ctx context.Context, node string, sinks []string, now time.Time, lease time.Duration, limit int) ([]NotifyItem, error) {
	if len(sinks) == 0 || limit <= 0 {
		return nil, nil
	}
	t := FormatTime(now)
	pick := `SELECT id FROM notify_queue
		WHERE sent_at = '' AND sink IN (?) AND ` + s.db.instant("next_at") + ` <= ` + s.db.instant("?") + `
			AND ` + s.db.claimFree() + `
		ORDER BY id LIMIT ?`
	if s.db.dialect == Postgres {
		pick += ` FOR UPDATE SKIP LOCKED`
	}
	// The picked rows are a CTE computed once: as a subquery of the
	// UPDATE, PostgreSQL may run the pick again for each row and claim
	// more than limit.
	q, args, err := sqlx.In(`WITH picked AS MATERIALIZED (`+pick+`)
		UPDATE notify_queue SET claimed_by = ?, claimed_until = ?
		WHERE id IN (SELECT id FROM picked) AND sent_at = '' AND `+s.db.claimFree()+`
		RETURNING `+itemCols,
		sinks, t, t, limit, node, FormatTime(now.Add(lease)), t)
	if err != nil {
		return nil, fmt.Errorf("claim notifications: %w", err)
	}
	var out []NotifyItem
	// A write, told as one (the conn tells only the statements that start
	// INSERT, UPDATE or DELETE).
	if err := s.db.wrote(s.db.SelectContext(ctx, &out, q, args...)); err != nil {
		return nil, fmt.Errorf("claim notifications: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ReleaseNotifyClaims ends the claims node holds on unsent rows: a
// supervisor starting again holds none (whatever it was sending when it
// died is due again at once, not when its lease lapses).
func (s *Store) ReleaseNotifyClaims(ctx context.Context, node string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE notify_queue SET claimed_by = '', claimed_until = ''
		WHERE claimed_by = ? AND sent_at = ''`, node)
	if err != nil {
		return fmt.Errorf("release the notifications claimed by %s: %w", node, err)
	}
	return nil
}

// NotifySent records that the sink took the row's event (status, its
// answer) at at, and ends node's claim. ErrNotClaimed when node no longer
// holds the row (another node took it over, or it is sent), ErrNotFound
// when there is no such row.
func (s *Store) NotifySent(ctx context.Context, id int64, node string, status int, answer string, at time.Time) error {
	t := FormatTime(at)
	res, err := s.db.ExecContext(ctx, `UPDATE notify_queue SET sent_at = ?, tried_at = ?, status = ?, answer = ?, claimed_until = ''
		WHERE id = ? AND claimed_by = ? AND sent_at = ''`, t, t, status, answer, id, node)
	if err != nil {
		return fmt.Errorf("record notification %d sent: %w", id, err)
	}
	return s.claimHeld(ctx, res, id, node)
}

// NotifyFailed records a failed attempt on the row at at (status, errText;
// its first error's time is kept), releases node's claim and makes it due
// again at next. ErrNotClaimed or ErrNotFound as NotifySent.
func (s *Store) NotifyFailed(ctx context.Context, id int64, node string, status int, errText string, next time.Time, at time.Time) error {
	t := FormatTime(at)
	res, err := s.db.ExecContext(ctx, `UPDATE notify_queue SET attempts = attempts + 1, tried_at = ?, status = ?, last_error = ?,
			first_error_at = CASE WHEN first_error_at = '' THEN ? ELSE first_error_at END,
			claimed_by = '', claimed_until = '', next_at = ?
		WHERE id = ? AND claimed_by = ? AND sent_at = ''`, t, status, errText, t, FormatTime(next), id, node)
	if err != nil {
		return fmt.Errorf("record notification %d failed: %w", id, err)
	}
	return s.claimHeld(ctx, res, id, node)
}

// claimHeld turns an update of row id under node's claim that changed
// nothing into why: ErrNotFound or ErrNotClaimed.
func (s *Store) claimHeld(ctx context.Context, res sql.Result, id int64, node string) error {
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var row struct {
		By     string `db:"claimed_by"`
		SentAt string `db:"sent_at"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT claimed_by, sent_at FROM notify_queue WHERE id = ?`, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("notification %d: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("notification %d: %w", id, err)
	case row.SentAt != "":
		return fmt.Errorf("notification %d was sent at %s (by %q): %w", id, row.SentAt, row.By, ErrNotClaimed)
	case row.By == "":
		return fmt.Errorf("notification %d is claimed by no node, not %q: %w", id, node, ErrNotClaimed)
	default:
		return fmt.Errorf("notification %d is claimed by %q, not %q: %w", id, row.By, node, ErrNotClaimed)
	}
}

// NotifyNextDue returns when the earliest unsent row of sinks may next be
// claimed: its next_at, or when its claim lapses if that is later (a row
// being sent is not due again before). False when sinks have no unsent
// row.
func (s *Store) NotifyNextDue(ctx context.Context, sinks []string) (time.Time, bool, error) {
	if len(sinks) == 0 {
		return time.Time{}, false, nil
	}
	due := `CASE WHEN claimed_until = '' THEN next_at
		WHEN ` + s.db.instant("claimed_until") + ` > ` + s.db.instant("next_at") + ` THEN claimed_until
		ELSE next_at END`
	q, args, err := sqlx.In(`SELECT due FROM (SELECT `+due+` AS due FROM notify_queue WHERE sent_at = '' AND sink IN (?)) d
		ORDER BY `+s.db.instant("due")+` LIMIT 1`, sinks)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next notification: %w", err)
	}
	var at []string
	if err := s.db.SelectContext(ctx, &at, q, args...); err != nil {
		return time.Time{}, false, fmt.Errorf("next notification: %w", err)
	}
	if len(at) == 0 {
		return time.Time{}, false, nil
	}
	return ParseTime(at[0]), true, nil
}

// NotifyStat is how one sink fares.
type NotifyStat struct {
	Sink       string
	Pending    int    // its unsent rows
	LastSentAt string // "" before its first send
	// LastStatus and LastError are its latest attempt's (LastError ""
	// when that attempt succeeded).
	LastStatus int
	LastError  string
	// FailingSince is the first error's time of the oldest unsent row that
	// failed; "" when none has.
	FailingSince string
}

// NotifyStats returns, for every sink by name, its pending count, last
// send, latest attempt and since when it fails.
func (s *Store) NotifyStats(ctx context.Context) ([]NotifyStat, error) {
	var rows []struct {
		Sink    string         `db:"sink"`
		Pending int            `db:"pending"`
		Sent    sql.NullString `db:"last_sent"`
		Status  sql.NullInt64  `db:"status"`
		Error   sql.NullString `db:"last_error"`
		TrySent sql.NullString `db:"try_sent"`
		Failing sql.NullString `db:"failing"`
	}
	// Per sink: the unsent count; the row sent last; the row tried last;
	// the unsent row that failed first.
	latest := func(where, order string) string {
		return `SELECT * FROM (SELECT sink, sent_at, status, last_error, first_error_at,
			ROW_NUMBER() OVER (PARTITION BY sink ORDER BY ` + order + `, id DESC) AS n
			FROM notify_queue WHERE ` + where + `) r WHERE n = 1`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT k.name AS sink,
			(SELECT COUNT(*) FROM notify_queue q WHERE q.sink = k.name AND q.sent_at = '') AS pending,
			ls.sent_at AS last_sent, lt.status, lt.last_error, lt.sent_at AS try_sent, lf.first_error_at AS failing
		FROM notify_sinks k
		LEFT JOIN (`+latest(`sent_at <> ''`, s.db.instant("sent_at")+` DESC`)+`) ls ON ls.sink = k.name
		LEFT JOIN (`+latest(`tried_at <> ''`, s.db.instant("tried_at")+` DESC`)+`) lt ON lt.sink = k.name
		LEFT JOIN (`+latest(`sent_at = '' AND first_error_at <> ''`, s.db.instant("first_error_at")+` ASC`)+`) lf ON lf.sink = k.name
		ORDER BY k.name`); err != nil {
		return nil, fmt.Errorf("notification stats: %w", err)
	}
	out := make([]NotifyStat, 0, len(rows))
	for _, r := range rows {
		st := NotifyStat{Sink: r.Sink, Pending: r.Pending, LastSentAt: r.Sent.String,
			LastStatus: int(r.Status.Int64), FailingSince: r.Failing.String}
		if r.TrySent.String == "" {
			st.LastError = r.Error.String
		}
		out = append(out, st)
	}
	return out, nil
}

// NotifyItems returns the queue rows of an event, by id.
func (s *Store) NotifyItems(ctx context.Context, eventID string) ([]NotifyItem, error) {
	var out []NotifyItem
	if err := s.db.SelectContext(ctx, &out, `SELECT `+itemCols+` FROM notify_queue WHERE event_id = ? ORDER BY id`, eventID); err != nil {
		return nil, fmt.Errorf("notifications of event %s: %w", eventID, err)
	}
	return out, nil
}

// OpenNeed is one notify_open row: a needs-you episode open now.
type OpenNeed struct {
	Key      string `db:"key"` // e.g. "w-3/approval"
	EventID  string `db:"event_id"`
	Pane     string `db:"pane"`
	Kind     string `db:"kind"`
	OpenedAt string `db:"opened_at"`
	Detail   string `db:"detail"`
}

const needCols = `key, event_id, pane, kind, opened_at, detail`

// OpenNeeds returns the open episodes by key.
func (s *Store) OpenNeeds(ctx context.Context) ([]OpenNeed, error) {
	var out []OpenNeed
	if err := s.db.SelectContext(ctx, &out, `SELECT `+needCols+` FROM notify_open ORDER BY key`); err != nil {
		return nil, fmt.Errorf("list open needs: %w", err)
	}
	return out, nil
}

// OpenNeed records an episode unless its key is open already, and
// reports whether it did. OpenedAt defaults to now.
func (s *Store) OpenNeed(ctx context.Context, n OpenNeed) (added bool, err error) {
	if n.OpenedAt == "" {
		n.OpenedAt = Now()
	}
	res, err := s.db.NamedExecContext(ctx, `INSERT INTO notify_open (`+needCols+`)
		VALUES (:key, :event_id, :pane, :kind, :opened_at, :detail) ON CONFLICT (key) DO NOTHING`, n)
	if err != nil {
		return false, fmt.Errorf("open need %s: %w", n.Key, err)
	}
	c, _ := res.RowsAffected()
	return c == 1, nil
}

// CloseNeeds ends the episodes of keys (a key not open is no error).
func (s *Store) CloseNeeds(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	q, args, err := sqlx.In(`DELETE FROM notify_open WHERE key IN (?)`, keys)
	if err != nil {
		return fmt.Errorf("close needs: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("close needs: %w", err)
	}
	return nil
}

// OpenNeedByEvent returns the open episode whose event is eventID;
// ErrNotFound when none is (it closed: the dialog is gone).
func (s *Store) OpenNeedByEvent(ctx context.Context, eventID string) (OpenNeed, error) {
	var n OpenNeed
	err := s.db.GetContext(ctx, &n, `SELECT `+needCols+` FROM notify_open WHERE event_id = ? ORDER BY key LIMIT 1`, eventID)
	if errors.Is(err, sql.ErrNoRows) {
		return OpenNeed{}, fmt.Errorf("open need of event %s: %w", eventID, ErrNotFound)
	}
	if err != nil {
		return OpenNeed{}, fmt.Errorf("open need of event %s: %w", eventID, err)
	}
	return n, nil
}

// SetNotifyMute mutes target (a pane or a team) until until (the
// caller's time text; "" for no end), replacing its mute.
func (s *Store) SetNotifyMute(ctx context.Context, target, until string) error {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO notify_mutes (target, until) VALUES (?, ?)
		ON CONFLICT (target) DO UPDATE SET until = excluded.until`, target, until); err != nil {
		return fmt.Errorf("mute %s: %w", target, err)
	}
	return nil
}

// DeleteNotifyMute unmutes target; ErrNotFound when it was not muted.
func (s *Store) DeleteNotifyMute(ctx context.Context, target string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM notify_mutes WHERE target = ?`, target)
	if err != nil {
		return fmt.Errorf("unmute %s: %w", target, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("mute of %s: %w", target, ErrNotFound)
	}
	return nil
}

// NotifyMutes returns every mute: target → until.
func (s *Store) NotifyMutes(ctx context.Context) (map[string]string, error) {
	return selectMap[string, string](ctx, s.db, "list mutes", `SELECT target AS k, until AS v FROM notify_mutes`)
}

// NotifyAnswer is one notify_answers row: what a person answered to an
// event from a messenger.
type NotifyAnswer struct {
	EventID string `db:"event_id"`
	Pane    string `db:"pane"`
	Task    int64  `db:"task"` // the pane's task then (0 when none)
	Action  string `db:"action"`
	By      string `db:"by_whom"` // who (e.g. the messenger's user)
	Via     string `db:"via"`     // the sink it came through
	At      string `db:"at"`
	Detail  string `db:"detail"`
}

const answerCols = `event_id, pane, task, action, by_whom, via, at, detail`

// RecordNotifyAnswer records a's answer unless its event was answered
// already: the first answer wins. It returns the answer stored and whether
// it is a. At defaults to now; otherwise it must be a time in the
// columns' format.
func (s *Store) RecordNotifyAnswer(ctx context.Context, a NotifyAnswer) (stored NotifyAnswer, first bool, err error) {
	if a.At == "" {
		a.At = Now()
	} else if ParseTime(a.At).IsZero() {
		return NotifyAnswer{}, false, fmt.Errorf("answer of event %s: time %q is not RFC 3339", a.EventID, a.At)
	}
	res, err := s.db.NamedExecContext(ctx, `INSERT INTO notify_answers (`+answerCols+`)
		VALUES (:event_id, :pane, :task, :action, :by_whom, :via, :at, :detail) ON CONFLICT (event_id) DO NOTHING`, a)
	if err != nil {
		return NotifyAnswer{}, false, fmt.Errorf("record answer of event %s: %w", a.EventID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return a, true, nil
	}
	if err := s.db.GetContext(ctx, &stored, `SELECT `+answerCols+` FROM notify_answers WHERE event_id = ?`, a.EventID); err != nil {
		return NotifyAnswer{}, false, fmt.Errorf("answer of event %s: %w", a.EventID, err)
	}
	return stored, false, nil
}

// NotifyAnswers returns pane's answers ("" for every pane's), oldest
// first.
func (s *Store) NotifyAnswers(ctx context.Context, pane string) ([]NotifyAnswer, error) {
	q := `SELECT ` + answerCols + ` FROM notify_answers`
	var args []any
	if pane != "" {
		q += ` WHERE pane = ?`
		args = append(args, pane)
	}
	var out []NotifyAnswer
	if err := s.db.SelectContext(ctx, &out, q+` ORDER BY `+s.db.instant("at")+`, event_id`, args...); err != nil {
		return nil, fmt.Errorf("answers of %q: %w", pane, err)
	}
	return out, nil
}

// NotifyAnswersOfTask returns the answers given while task was the
// pane's, oldest first.
func (s *Store) NotifyAnswersOfTask(ctx context.Context, task int64) ([]NotifyAnswer, error) {
	var out []NotifyAnswer
	if err := s.db.SelectContext(ctx, &out, `SELECT `+answerCols+` FROM notify_answers WHERE task = ?
		ORDER BY `+s.db.instant("at")+`, event_id`, task); err != nil {
		return nil, fmt.Errorf("answers of task %d: %w", task, err)
	}
	return out, nil
}

// NotifyFlap is one notify_flaps row: the window in which a key's (a
// pane's and kind's) events after the first are held back.
type NotifyFlap struct {
	Key         string `db:"key"`
	WindowStart string `db:"window_start"`
	Suppressed  int    `db:"suppressed"` // how many were held back in it
	LastEvent   string `db:"last_event"` // the payload of the last one held back
}

// NotifyFlap decides, atomically, whether an event of key at now is sent
// or held back: with no window open for key (none yet, or the last one
// ended at its start+window) a window starts now and send is true — and
// digest is the window that ended, when it held events back, for the
// caller to send its digest; else the event is counted in the open window
// (last_event = event) and send is false.
func (s *Store) NotifyFlap(ctx context.Context, key string, now time.Time, window time.Duration, event string) (send bool, digest NotifyFlap, err error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return false, NotifyFlap{}, fmt.Errorf("flap %s: %w", key, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	// The row exists before it is locked: two first events of a key
	// then wait for each other instead of both inserting.
	if _, err := tx.ExecContext(ctx, `INSERT INTO notify_flaps (key) VALUES (?) ON CONFLICT (key) DO NOTHING`, key); err != nil {
		return false, NotifyFlap{}, fmt.Errorf("flap %s: %w", key, err)
	}
	q := `SELECT key, window_start, suppressed, last_event FROM notify_flaps WHERE key = ?`
	if s.db.dialect == Postgres {
		q += ` FOR UPDATE`
	}
	var f NotifyFlap
	if err := tx.GetContext(ctx, &f, q, key); err != nil {
		return false, NotifyFlap{}, fmt.Errorf("flap %s: %w", key, err)
	}
	if f.WindowStart == "" || !now.Before(ParseTime(f.WindowStart).Add(window)) {
		send = true
		if f.Suppressed > 0 {
			digest = f
		}
		_, err = tx.ExecContext(ctx, `UPDATE notify_flaps SET window_start = ?, suppressed = 0, last_event = '' WHERE key = ?`,
			FormatTime(now), key)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE notify_flaps SET suppressed = suppressed + 1, last_event = ? WHERE key = ?`, event, key)
	}
	if err != nil {
		return false, NotifyFlap{}, fmt.Errorf("flap %s: %w", key, err)
	}
	if err := tx.Commit(); err != nil {
		return false, NotifyFlap{}, fmt.Errorf("flap %s: %w", key, err)
	}
	return send, digest, nil
}

// DueNotifyDigests returns the windows that held events back and have
// ended at now, by key: each one's digest is due.
func (s *Store) DueNotifyDigests(ctx context.Context, now time.Time, window time.Duration) ([]NotifyFlap, error) {
	var all []NotifyFlap
	if err := s.db.SelectContext(ctx, &all, `SELECT key, window_start, suppressed, last_event FROM notify_flaps
		WHERE suppressed > 0 ORDER BY key`); err != nil {
		return nil, fmt.Errorf("due digests: %w", err)
	}
	var out []NotifyFlap
	for _, f := range all {
		if !now.Before(ParseTime(f.WindowStart).Add(window)) {
			out = append(out, f)
		}
	}
	return out, nil
}

// TakeNotifyDigest claims the digest of key's window that started at
// windowStart: true once (the count it held back is reset), false when
// the window changed or its digest was taken — by another node, or by
// NotifyFlap starting the next window.
func (s *Store) TakeNotifyDigest(ctx context.Context, key string, windowStart string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE notify_flaps SET suppressed = 0, last_event = ''
		WHERE key = ? AND window_start = ? AND suppressed > 0`, key, windowStart)
	if err != nil {
		return false, fmt.Errorf("take the digest of %s: %w", key, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
