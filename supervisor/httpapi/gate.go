package httpapi

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cicy-ai/cicy-agent/api"
)

// Gate is the socket's handler while the supervisor starts: it answers
// GET /api/health at once, saying it is starting and how far the restore
// of the panes is, and holds every other request until the supervisor is
// ready (then passes it on) or could not start (then says why). So a
// client never finds the socket missing while a supervisor with many
// panes restores them.
type Gate struct {
	health api.Health // what is known before the supervisor is

	done, total atomic.Int64

	mu     sync.Mutex
	next   http.Handler
	failed error
	open   chan struct{} // closed once next or failed is set
}

// NewGate is a gate whose health, while it is shut, is h.
func NewGate(h api.Health) *Gate {
	return &Gate{health: h, open: make(chan struct{})}
}

// Restoring records the restore's progress (Config.Restoring).
func (g *Gate) Restoring(done, total int) {
	g.done.Store(int64(done))
	g.total.Store(int64(total))
}

// Ready passes every request on to h from now on.
func (g *Gate) Ready(h http.Handler) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next = h
	close(g.open)
}

// Fail answers every request held or to come with err.
func (g *Gate) Fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed = err
	close(g.open)
}

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-g.open:
	default:
		if r.Method == http.MethodGet && r.URL.Path == "/api/health" {
			h := g.health
			h.PID, h.Starting, h.Restoring = os.Getpid(), true, g.progress()
			WriteJSON(w, http.StatusOK, h)
			return
		}
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
	}
	g.mu.Lock()
	next, failed := g.next, g.failed
	g.mu.Unlock()
	if failed != nil {
		WriteErr(w, fmt.Errorf("the supervisor could not start: %w", failed))
		return
	}
	next.ServeHTTP(w, r)
}

// progress is the restore's progress for people, "" until the first
// panes are restored (a home with none has nothing worth telling).
func (g *Gate) progress() string {
	total := g.total.Load()
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("restoring %s of %s panes", thousands(g.done.Load()), thousands(total))
}

// thousands is n with commas: 64,000.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
