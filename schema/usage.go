package schema

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// UsageRow is the usage of one model call.
type UsageRow struct {
	PaneID         string `db:"pane_id"`
	ConversationID string `db:"conversation_id"`
	TurnID         string `db:"turn_id"`
	Aux            string `db:"aux"`
	Model          string `db:"model"`
	InputTokens    int64  `db:"input_tokens"`
	OutputTokens   int64  `db:"output_tokens"`
	CacheRead      int64  `db:"cache_read"`
	CacheCreation  int64  `db:"cache_creation"`
	LatencyMS      int64  `db:"latency_ms"`
	CreatedAt      string `db:"created_at"`
}

// AddUsage records one model call, at u.CreatedAt when set (a row that
// waited to be written keeps the time of its call), else now. A disk too
// full to take it is an error that matches syscall.ENOSPC.
func (s *Store) AddUsage(ctx context.Context, u UsageRow) error {
	if u.CreatedAt == "" {
		u.CreatedAt = Now()
	}
	_, err := s.db.NamedExecContext(ctx, `INSERT INTO usage
		(pane_id, conversation_id, turn_id, aux, model, input_tokens, output_tokens, cache_read, cache_creation, latency_ms, created_at)
		VALUES (:pane_id, :conversation_id, :turn_id, :aux, :model, :input_tokens, :output_tokens, :cache_read, :cache_creation, :latency_ms, :created_at)`, u)
	if err != nil {
		return fmt.Errorf("record usage: %w", markFull(err))
	}
	return nil
}

// UsageTotal is a pane's summed usage.
type UsageTotal struct {
	InputTokens   int64 `db:"input_tokens"`
	OutputTokens  int64 `db:"output_tokens"`
	CacheRead     int64 `db:"cache_read"`
	CacheCreation int64 `db:"cache_creation"`
}

// UsageByModel sums usage per pane and model: a price is per model.
func (s *Store) UsageByModel(ctx context.Context) (map[string]map[string]UsageTotal, error) {
	var rows []struct {
		PaneID string `db:"pane_id"`
		Model  string `db:"model"`
		UsageTotal
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT pane_id, model, SUM(input_tokens) AS input_tokens,
		SUM(output_tokens) AS output_tokens, SUM(cache_read) AS cache_read, SUM(cache_creation) AS cache_creation
		FROM usage GROUP BY pane_id, model`); err != nil {
		return nil, fmt.Errorf("sum usage: %w", err)
	}
	out := map[string]map[string]UsageTotal{}
	for _, r := range rows {
		put2(out, r.PaneID, r.Model, r.UsageTotal)
	}
	return out, nil
}

// Add is the sum of two totals.
func (u UsageTotal) Add(o UsageTotal) UsageTotal {
	return UsageTotal{
		InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheRead: u.CacheRead + o.CacheRead, CacheCreation: u.CacheCreation + o.CacheCreation,
	}
}

// Usage groupings: what UsageGroups sums by.
const (
	ByPane  = "pane"
	ByModel = "model"
	ByDay   = "day"
)

// usageKeys are the SQL expressions of the groupings; a day is the UTC
// date of created_at (stored as RFC 3339 in UTC).
var usageKeys = map[string]string{
	ByPane:  "pane_id",
	ByModel: "model",
	ByDay:   "substr(created_at, 1, 10)",
}

// UsageQuery selects and groups usage rows.
type UsageQuery struct {
	// By is ByPane, ByModel or ByDay.
	By string
	// Pane, if set, keeps only that pane's rows.
	Pane string
	// Since, if not zero, keeps only the calls made at or after it.
	Since time.Time
}

// UsageGroup is the summed usage of one group's calls of one model, main
// loop or aux: a price is per model, and aux calls are counted apart.
type UsageGroup struct {
	Key   string `db:"key"`
	Model string `db:"model"`
	Aux   bool   `db:"is_aux"`
	Calls int64  `db:"calls"`
	UsageTotal
}

// UsageGroups sums the usage rows q selects per group key, model and
// whether the calls were aux, ordered by key and model.
func (s *Store) UsageGroups(ctx context.Context, q UsageQuery) ([]UsageGroup, error) {
	key, ok := usageKeys[q.By]
	if !ok {
		return nil, fmt.Errorf("group usage by %q: not pane, model or day", q.By)
	}
	where, args := []string{"1 = 1"}, []any{}
	if q.Pane != "" {
		where, args = append(where, "pane_id = ?"), append(args, q.Pane)
	}
	if !q.Since.IsZero() {
		where, args = append(where, s.db.instant("created_at")+" >= "+s.db.instant("?")), append(args, FormatTime(q.Since))
	}
	out := []UsageGroup{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+key+` AS key, model, aux != '' AS is_aux, COUNT(*) AS calls,
		SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,
		SUM(cache_read) AS cache_read, SUM(cache_creation) AS cache_creation
		FROM usage WHERE `+strings.Join(where, " AND ")+`
		GROUP BY 1, model, is_aux ORDER BY 1, model, is_aux`, args...)
	if err != nil {
		return nil, fmt.Errorf("group usage: %w", err)
	}
	return out, nil
}

// HasUsage reports whether any call of the pane was recorded.
func (s *Store) HasUsage(ctx context.Context, pane string) (bool, error) {
	var found bool
	if err := s.db.GetContext(ctx, &found, `SELECT EXISTS (SELECT 1 FROM usage WHERE pane_id = ?)`, pane); err != nil {
		return false, fmt.Errorf("look up usage: %w", err)
	}
	return found, nil
}
