package supervisor

import (
	"context"
	"sync"
	"time"

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

// sessionLog is the session id a pane's agent last revealed.
type sessionLog struct {
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

// seed is the session recorded in the pane's row.
func (l *sessionLog) seed(id string, since time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.id, l.since, l.seen = id, since, since
}

// note records that a signal of at carried id; changed when id is now
// the pane's session and was not before.
func (l *sessionLog) note(id string, at time.Time) (changed bool) {
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

// get is the session id and when it was first seen ("" before any).
func (l *sessionLog) get() (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id, l.since
}

// recordSession notes the session id a signal of at carried and, when it
// is new, records it in the pane's row (a failure is logged: the signal
// still applies, and the next one records it again).
func (s *Supervisor) recordSession(ctx context.Context, e *entry, id string, at time.Time) {
	if !e.session.note(id, at) {
		return
	}
	e.session.write.Lock()
	defer e.session.write.Unlock()
	id, at = e.session.get()
	log := s.log.WithFields(map[string]any{"pane": e.cfg.ID, "session": id})
	if err := s.store.SetPaneSession(ctx, e.cfg.ID, id, schema.FormatTime(at)); err != nil {
		log.WithError(err).Warn("Could not record the agent's session id")
		e.session.forget(id)
		return
	}
	log.Info("Agent's session id recorded")
}

// forget drops id as recorded, so the next signal that carries it writes
// it again.
func (l *sessionLog) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.id == id {
		l.id = ""
	}
}

// describeSession adds the agent's session id to what ls and explain
// show, with the arguments that resume it.
func (e *entry) describeSession(pi *api.PaneInfo) {
	id, since := e.session.get()
	if id == "" {
		return
	}
	pi.SessionID = id
	if !since.IsZero() {
		pi.SessionAt = &since
	}
	if k, ok := cliagent.Lookup(e.cfg.Type); ok {
		pi.ResumeArgs, _ = k.ResumeArgs(id)
	}
}
