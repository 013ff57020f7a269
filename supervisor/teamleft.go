package supervisor

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
	"github.com/cicy-ai/cicy-agent/schema"
)

// A team's CLI agent killed (down) leaves its session for the pane of the
// same team, title and type that a later up makes: that pane takes over
// its folders (its config folder, which holds the agent's sessions, and
// its default workspace) and resumes its session, so down and up keep
// each agent's conversation.

// leftPane is what a killed team pane left for its successor.
type leftPane struct {
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

// noteLeft keeps what the team pane e, being killed, leaves for a later
// pane of its team and title: a CLI agent's recorded session.
func (s *Supervisor) noteLeft(ctx context.Context, e *entry) {
	session := resumable(e)
	if e.team == "" || session == "" || isWorktreePane(e) {
		return
	}
	l := leftPane{ID: e.cfg.ID, Type: e.cfg.Type, Session: session, At: time.Now()}
	if e.cfg.Workspace == s.cfg.Home.Workspace(e.cfg.ID) {
		l.Workspace = e.cfg.Workspace
	}
	b, _ := json.Marshal(l) // strings and a time always encode
	if err := s.store.SetSetting(ctx, leftKey(e.team, e.cfg.Title), string(b)); err != nil {
		s.log.WithError(err).WithField("pane", e.cfg.ID).Warn("Could not keep the pane's session for the team's next up")
	}
}

// takeLeft is what a killed pane of req's team, title and type left for
// it (nil when nothing), taken: the next pane does not get it again. A
// request naming no workspace is given the left one, if it is still there.
func (s *Supervisor) takeLeft(ctx context.Context, req *api.CreateRequest) *leftPane {
	if req.Team == "" || req.Worktree || !panetype.IsAgent(req.Type) {
		return nil
	}
	key := leftKey(req.Team, req.Title)
	v, ok, err := s.store.Setting(ctx, key)
	var l leftPane
	if err != nil || !ok || v == "" || json.Unmarshal([]byte(v), &l) != nil || l.Type != req.Type {
		return nil
	}
	if err := s.store.SetSetting(ctx, key, ""); err != nil {
		return nil // it could be taken twice
	}
	if req.Workspace == "" && l.Workspace != "" {
		if fi, err := os.Stat(l.Workspace); err == nil && fi.IsDir() {
			req.Workspace = l.Workspace
		}
	}
	return &l
}

// moveLeft moves what the left pane's folder holds into the new pane id's
// (what is there already stays).
func (s *Supervisor) moveLeft(l *leftPane, id string) error {
	from, to := s.cfg.Home.paneDir(l.ID), s.cfg.Home.paneDir(id)
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

// resumeLeft is the session a new pane resumes: the left one's, once its
// folders are moved ("" when there is none, or they could not be).
func (s *Supervisor) resumeLeft(l *leftPane, row schema.Pane) string {
	if l == nil {
		return ""
	}
	if err := s.moveLeft(l, row.ID); err != nil {
		s.log.WithError(err).WithField("pane", row.ID).Warn("Could not take over the folder of the team's earlier pane; a new conversation")
		return ""
	}
	return l.Session
}
