package newpane

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/supervisor/agentpane"
	"github.com/cicy-ai/cicy-agent/supervisor/comeback"
)

// Folders is what making a new pane's folders takes of the home: where
// they go, and how a worktree is made when the pane works in one.
type Folders struct {
	Home      string // the home's root
	ID        string // the new pane's id
	PaneDir   string // the pane's own folder under the home
	Workspace string // its workspace when the request names none
	// Guidance is where the pane's guidance file goes, for workspace ws.
	Guidance func(ws string) string
	// Worktree, if set, makes workspace ws a git worktree of its own
	// (package gitwork) and returns how to remove it; else the workspace
	// is a plain folder.
	Worktree func(ws string) (undo func(), err error)
	Log      *logrus.Entry
}

// Prepare makes a new pane's workspace (and its guidance file, from tmpl
// when there is one) and returns it, the warnings to show, and how to undo
// it all. A new pane never adopts folders left by an earlier pane of the
// same id (a lost database): they are moved aside, with a warning. A
// workspace the user names is theirs to choose. On error nothing is left
// to undo.
func Prepare(f Folders, req api.CreateRequest, tmpl *cicy.Template) (ws string, notes []string, undo func(), err error) {
	var putBack []func()
	restore := func() {
		for _, b := range putBack {
			b()
		}
	}
	ws = req.Workspace
	dirs := []string{f.PaneDir}
	if ws == "" {
		ws = f.Workspace
		dirs = append(dirs, ws)
	}
	for _, d := range dirs {
		note, back, err := comeback.SetAsideForeign(f.Home, d, time.Now())
		if err != nil {
			restore()
			return "", nil, nil, api.Failedf("%v", err)
		}
		if note != "" {
			notes = append(notes, note)
			putBack = append(putBack, back)
			f.Log.WithField("pane", f.ID).Warn("Set aside: " + note)
		}
	}
	var u func()
	if f.Worktree != nil {
		u, err = f.Worktree(ws)
	} else {
		u, err = makeWorkspace(ws)
	}
	if err == nil && tmpl != nil {
		if err = agentpane.WriteGuidance(f.Home, f.Guidance(ws), ws, f.ID, req, tmpl); err != nil {
			u()
		}
	}
	if err != nil {
		restore()
		return ws, notes, nil, err
	}
	return ws, notes, func() { u(); restore() }, nil
}

// makeWorkspace creates the workspace folder if needed and checks that the
// pane can write in it. It returns a function that undoes what it created.
func makeWorkspace(dir string) (undo func(), err error) {
	undo = func() {}
	// Find the deepest existing ancestor, so undo removes only what we made.
	top := dir
	for {
		if _, err := os.Stat(top); err == nil {
			break
		}
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		top = parent
	}
	if top != dir {
		first := dir
		for filepath.Dir(first) != top {
			first = filepath.Dir(first)
		}
		undo = func() { os.RemoveAll(first) }
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}, api.Usagef("the workspace %s cannot be created: %v", dir, rootCause(err))
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		undo()
		return func() {}, api.Usagef("the workspace %s is not a folder", dir)
	}
	f, err := os.CreateTemp(dir, ".cicy-write-check-*")
	if err != nil {
		undo()
		return func() {}, api.Usagef("the workspace %s is not writable: %v", dir, rootCause(err))
	}
	f.Close()
	os.Remove(f.Name())
	return undo, nil
}

// rootCause strips the *PathError wrapping, whose path the message already
// names.
func rootCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
