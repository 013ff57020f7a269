package comeback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
)

// A team's CLI agent killed (down) leaves its session for the pane of the
// same team, title and type that a later up makes: that pane takes over
// its folders (its config folder, which holds the agent's sessions, and
// its default workspace) and resumes its session, so down and up keep
// each agent's conversation.

// Settings is where what a pane left is kept: the store's settings.
type Settings interface {
	Setting(ctx context.Context, key string) (string, bool, error)
	SetSetting(ctx context.Context, key, value string) error
}

// Left is what a killed team pane left for its successor.
type Left struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Session string `json:"session"`
	// Workspace is its default workspace (under the home), "" when the
	// team file named one (the next pane is given the same).
	Workspace string    `json:"workspace,omitempty"`
	At        time.Time `json:"at"`
}

// leftKey is the setting that keeps what a team's pane titled title left.
func leftKey(team, title string) string { return "team_left/" + team + "/" + title }

// Leave keeps in st what the pane of team titled title, being killed,
// leaves for a later pane of its team and title: l, a CLI agent's
// recorded session.
func Leave(ctx context.Context, st Settings, team, title string, l Left) error {
	b, _ := json.Marshal(l) // strings and a time always encode
	return st.SetSetting(ctx, leftKey(team, title), string(b))
}

// Take is what a killed pane of req's team, title and type left for it
// (nil when nothing), taken from st: the next pane does not get it again.
// A request naming no workspace is given the left one, if it is still
// there.
func Take(ctx context.Context, st Settings, req *api.CreateRequest) *Left {
	if req.Team == "" || req.Worktree || !panetype.IsAgent(req.Type) {
		return nil
	}
	key := leftKey(req.Team, req.Title)
	v, ok, err := st.Setting(ctx, key)
	var l Left
	if err != nil || !ok || v == "" || json.Unmarshal([]byte(v), &l) != nil || l.Type != req.Type {
		return nil
	}
	if err := st.SetSetting(ctx, key, ""); err != nil {
		return nil // it could be taken twice
	}
	if req.Workspace == "" && l.Workspace != "" {
		if fi, err := os.Stat(l.Workspace); err == nil && fi.IsDir() {
			req.Workspace = l.Workspace
		}
	}
	return &l
}

// Move moves what the left pane's folder from holds into the new pane's
// folder to (what is there already stays).
func (l *Left) Move(from, to string) error {
	items, err := os.ReadDir(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	for _, it := range items {
		dst := filepath.Join(to, it.Name())
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.Rename(filepath.Join(from, it.Name()), dst); err != nil {
			return fmt.Errorf("move %s of %s: %w", it.Name(), l.ID, err)
		}
	}
	return nil
}
