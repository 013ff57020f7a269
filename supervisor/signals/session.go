package signals

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// A CLI agent's own session id (its conversation, as it names it and
// resumes it) is recorded as soon as one of its signals carries it — a
// hook's "session_id", opencode's "sessionID" — and replaced when a later
// signal carries another (/clear, /resume, /new inside the agent): the
// latest wins. It is kept in the pane's row, so a restarted supervisor
// knows it, and shown by ls and explain with the arguments that resume it.

// Session is the session id a pane's agent last revealed; the zero value
// has none.
type Session struct {
	// write orders the row's writes: each writes the latest id, so two
	// signals racing leave the later one recorded.
	write sync.Mutex
	mu    sync.Mutex
	id    string
	// since is when the agent was first seen in it; seen when a signal
	// last carried a session id (signals may arrive out of order: an
	// older one changes nothing).
	since, seen time.Time
}

// Seed is the session recorded in the pane's row.
func (l *Session) Seed(id string, since time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.id, l.since, l.seen = id, since, since
}

// note records that a signal of at carried id; changed when id is now
// the pane's session and was not before.
func (l *Session) note(id string, at time.Time) (changed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.Before(l.seen) {
		return false
	}
	l.seen = at
	if id == l.id {
		return false
	}
	l.id, l.since = id, at
	return true
}

// Get is the session id and when it was first seen ("" before any).
func (l *Session) Get() (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id, l.since
}

// SessionStore keeps a pane's session id in its row.
type SessionStore interface {
	SetPaneSession(ctx context.Context, id, session, at string) error
}

// Record notes that a signal of at carried the session id id of the
// agent of pane and, when it is new, records it in the pane's row with st
// (a failure is logged: the signal still applies, and the next one
// records it again).
func (l *Session) Record(ctx context.Context, st SessionStore, log *logrus.Entry, pane, id string, at time.Time) {
	if !l.note(id, at) {
		return
	}
	l.write.Lock()
	defer l.write.Unlock()
	id, at = l.Get()
	log = log.WithFields(logrus.Fields{"pane": pane, "session": id})
	if err := st.SetPaneSession(ctx, pane, id, schema.FormatTime(at)); err != nil {
		log.WithError(err).Warn("Could not record the agent's session id")
		l.forget(id)
		return
	}
	log.Info("Agent's session id recorded")
}

// forget drops id as recorded, so the next signal that carries it writes
// it again.
func (l *Session) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.id == id {
		l.id = ""
	}
}

// Describe adds the agent's session id to what ls and explain show, with
// the arguments that resume it (typ is the pane's type).
func (l *Session) Describe(pi *api.PaneInfo, typ string) {
	id, since := l.Get()
	if id == "" {
		return
	}
	pi.SessionID = id
	if !since.IsZero() {
		pi.SessionAt = &since
	}
	if k, ok := cliagent.Lookup(typ); ok {
		pi.ResumeArgs, _ = k.ResumeArgs(id)
	}
}
