package schema

import (
	"context"
	"fmt"
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

// AddUsage records one model call.
func (s *Store) AddUsage(ctx context.Context, u UsageRow) error {
	u.CreatedAt = Now()
	_, err := s.db.NamedExecContext(ctx, `INSERT INTO usage
		(pane_id, conversation_id, turn_id, aux, model, input_tokens, output_tokens, cache_read, cache_creation, latency_ms, created_at)
		VALUES (:pane_id, :conversation_id, :turn_id, :aux, :model, :input_tokens, :output_tokens, :cache_read, :cache_creation, :latency_ms, :created_at)`, u)
	if err != nil {
		return fmt.Errorf("record usage: %w", err)
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
		if out[r.PaneID] == nil {
			out[r.PaneID] = map[string]UsageTotal{}
		}
		out[r.PaneID][r.Model] = r.UsageTotal
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
