package fakellm

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway/modelapi"
)

// Truth is what a [Server] knows, at one moment, of the work its clients
// asked of it: the ground truth a screen recorder labels a screen with.
type Truth struct {
	// InFlight is the number of model requests being answered (held by
	// [[delay]], or streaming); a request counts until its handler returns,
	// a moment after the client has the last byte.
	InFlight int
	// Calls are the tool calls the server has answered and whose result
	// has not come back in a later request, oldest first: a tool running,
	// or waiting for a person to allow it or answer it.
	Calls []Call
	// RetryAfter, when above 0, is how long from now a client was told to
	// retry by an error answer's Retry-After ([[retry=N]]); it is 0 once
	// that time has passed or any model request has come since.
	RetryAfter time.Duration
}

// Call is a tool call the server answered.
type Call struct {
	ID   string // the id the client returns with the result
	Name string
	Args map[string]any
}

// Truth returns what the server knows of its clients' work now.
func (s *Server) Truth() Truth { return s.watch.now() }

// watcher keeps a [Server]'s [Truth] as its handler's
// [modelapi.Observer]. Its methods are safe for concurrent use.
type watcher struct {
	mu         sync.Mutex
	inFlight   int
	calls      map[string]Call
	order      []string // call ids, oldest first
	retryUntil time.Time
}

// Begin counts a model request in flight and settles the calls whose
// results it carries; any pending retry has come.
func (w *watcher) Begin(q *modelapi.Query) {
	var answered []string
	for _, m := range q.Request.Messages {
		for _, b := range m.Content {
			if b.Type == wire.TypeToolResult {
				answered = append(answered, b.ToolUseID)
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight++
	w.retryUntil = time.Time{}
	for _, id := range answered {
		delete(w.calls, id)
	}
	w.order = slices.DeleteFunc(w.order, func(id string) bool { _, ok := w.calls[id]; return !ok })
}

// End counts a model request answered (or abandoned).
func (w *watcher) End(*modelapi.Query) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight--
}

// Delivered records a tool call delivered to a client.
func (w *watcher) Delivered(id, name string, args map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[string]Call{}
	}
	w.calls[id] = Call{ID: id, Name: name, Args: maps.Clone(args)}
	w.order = append(w.order, id)
}

// Retry records an error answer that told the client to come back after d.
func (w *watcher) Retry(d time.Duration) {
	if d <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.retryUntil = time.Now().Add(d)
}

// now is the current truth.
func (w *watcher) now() Truth {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := Truth{InFlight: w.inFlight}
	for _, id := range w.order {
		c := w.calls[id]
		c.Args = maps.Clone(c.Args)
		t.Calls = append(t.Calls, c)
	}
	if d := time.Until(w.retryUntil); d > 0 {
		t.RetryAfter = d
	}
	return t
}
