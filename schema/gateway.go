package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Setting returns a setting's value; ok is false when it was never set.
func (s *Store) Setting(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.db.GetContext(ctx, &value, `SELECT value FROM settings WHERE key = ?`, key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read setting %s: %w", key, err)
	}
	return value, true, nil
}

// SetSetting stores a setting's value.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("store setting %s: %w", key, err)
	}
	return nil
}

// SaveGatewayToken records the hash of a pane's gateway token, replacing
// the one it had.
func (s *Store) SaveGatewayToken(ctx context.Context, pane, hash string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO gateway_tokens (pane_id, token_hash, created_at) VALUES (?, ?, ?)
		ON CONFLICT (pane_id) DO UPDATE SET token_hash = excluded.token_hash, created_at = excluded.created_at`,
		pane, hash, Now())
	if err != nil {
		return fmt.Errorf("save the gateway token of %s: %w", pane, err)
	}
	return nil
}

// GatewayTokens maps each token hash to its pane.
func (s *Store) GatewayTokens(ctx context.Context) (map[string]string, error) {
	return selectMap[string, string](ctx, s.db, "read the gateway tokens", `SELECT token_hash AS k, pane_id AS v FROM gateway_tokens`)
}
