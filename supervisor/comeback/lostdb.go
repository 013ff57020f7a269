package comeback

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// A database that is missing or empty (0 bytes) while the home still holds
// what it described — pane workspaces, pane folders, a tmux server with
// sessions — was lost (deleted, truncated, a failed restore). Starting on
// it would forget every pane and task and hand the old ids, with their
// workspaces, conversations and memories, to new panes. The supervisor
// refuses instead, unless told to start fresh (serve --fresh), which first
// moves those folders aside and ends the tmux sessions (CheckDatabase).
// A pane created later whose default folders hold another pane's files
// has them set aside (SetAsideForeign).

// leftovers is what a lost database leaves behind in a home.
type leftovers struct {
	folders  []string // relative to the home: workspaces/w-N, panes/w-N
	sessions int      // live sessions of the home's tmux server
}

func (l leftovers) empty() bool { return len(l.folders) == 0 && l.sessions == 0 }

// describe names what was found, briefly.
func (l leftovers) describe(tmuxSocket string) string {
	var parts []string
	if n := len(l.folders); n > 0 {
		names := l.folders
		more := ""
		if n > 3 {
			names, more = names[:3], fmt.Sprintf(" and %d more", n-3)
		}
		parts = append(parts, fmt.Sprintf("the folders of panes it described (%s%s)", strings.Join(names, ", "), more))
	}
	if l.sessions > 0 {
		parts = append(parts, fmt.Sprintf("a tmux server (%s) with %d session(s)", tmuxSocket, l.sessions))
	}
	return strings.Join(parts, " and ")
}

// findLeftovers lists the pane folders of the home root and its tmux
// sessions.
func findLeftovers(root string, tmux *pane.TmuxServer) leftovers {
	var l leftovers
	for _, pattern := range []string{filepath.Join(root, "workspaces", "w-*"), filepath.Join(root, "panes", "*")} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if rel, err := filepath.Rel(root, m); err == nil {
				l.folders = append(l.folders, rel)
			}
		}
	}
	slices.Sort(l.folders)
	if pane.TmuxAvailable() {
		if sessions, err := tmux.Sessions(); err == nil {
			l.sessions = len(sessions)
		}
	}
	return l
}

// DBLost says how the SQLite database at path is missing, empty or
// another program's, or "" when it is ours.
func DBLost(path string) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "is missing", nil
	case err != nil:
		return "", fmt.Errorf("check the database %s: %w", path, err)
	case fi.Size() == 0:
		return "is empty (0 bytes)", nil
	}
	names, ours, err := schema.Tables(path)
	switch {
	case err != nil || ours:
	case len(names) == 0:
		return "is an empty SQLite file (no tables)", nil
	default:
		more := ""
		if len(names) > 3 {
			names, more = names[:3], fmt.Sprintf(" and %d more", len(names)-3)
		}
		return fmt.Sprintf("is a SQLite file without cicy-agent's tables (it holds %s%s)", strings.Join(names, ", "), more), nil
	}
	return "", nil
}

// CheckDatabase refuses a lost database db (DBLost) beside what it
// described in the home root; with fresh it moves that aside instead (and
// ends the home's tmux server), so the supervisor starts with no panes and
// new panes get clean folders.
func CheckDatabase(root, db string, fresh bool, log *logrus.Entry) error {
	how, err := DBLost(db)
	if err != nil || how == "" {
		return err
	}
	tmux := pane.NewTmuxServer(root, log)
	l := findLeftovers(root, tmux)
	if l.empty() {
		return nil
	}
	if !fresh {
		return fmt.Errorf("the database %s %s but this home still holds %s: restore the database from a backup, "+
			"or start over with 'cicy-agent serve --fresh', which moves those folders to %s and ends the tmux sessions",
			db, how, l.describe(tmux.Socket), filepath.Join(root, "orphaned-<time>"))
	}
	aside := filepath.Join(root, "orphaned-"+time.Now().UTC().Format("20060102-150405"))
	moved, err := moveAside(root, db, aside, l.folders)
	if err != nil {
		return err
	}
	if l.sessions > 0 {
		if err := tmux.KillServer(); err != nil {
			return fmt.Errorf("end the tmux server %s: %w", tmux.Socket, err)
		}
	}
	log.WithFields(logrus.Fields{"database": how, "moved_to": aside, "moved": moved, "tmux_sessions_ended": l.sessions}).
		Warn("Started fresh: the database was lost; what it described was moved aside")
	return nil
}

// moveAside moves the folders (relative to the home root) and what is
// left of the database db into dir, keeping their paths; it returns how
// many it moved.
func moveAside(root, db, dir string, folders []string) (int, error) {
	rels := slices.Clone(folders)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if _, err := os.Lstat(db + suffix); err == nil {
			rel, _ := filepath.Rel(root, db+suffix)
			rels = append(rels, rel)
		}
	}
	for _, rel := range rels {
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return 0, fmt.Errorf("set aside %s: %w", rel, err)
		}
		if err := os.Rename(filepath.Join(root, rel), dst); err != nil {
			return 0, fmt.Errorf("set aside %s: %w", rel, err)
		}
	}
	return len(rels), nil
}

// SetAsideForeign moves away a folder that a pane being created would
// otherwise adopt: a default folder of its id that exists and is not
// empty was left by another pane (one a lost database no longer knows).
// It returns a sentence for the user (empty when nothing was moved; paths
// relative to the home root) and a function that moves the folder back.
func SetAsideForeign(root, dir string, now time.Time) (note string, undo func(), err error) {
	undo = func() {}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", undo, nil
	case err != nil:
		return "", undo, fmt.Errorf("check %s: %w", dir, err)
	case len(entries) == 0:
		return "", undo, nil
	}
	aside := dir + ".orphaned-" + now.UTC().Format("20060102-150405")
	if err := os.Rename(dir, aside); err != nil {
		return "", undo, fmt.Errorf("set aside %s, which holds files of an earlier pane: %w", dir, err)
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(root, p); err == nil {
			return r
		}
		return p
	}
	note = fmt.Sprintf("%s already held files of an earlier pane that this home's database no longer knows; they were moved to %s",
		rel(dir), rel(aside))
	return note, func() { _ = os.Rename(aside, dir) }, nil
}
