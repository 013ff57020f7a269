package signals

import (
	"fmt"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// What the gateway saw of a CLI agent's model requests is the truth of its
// tasks (docs/gateway.md): the last main-loop answer of the task's turn is
// its result, or its failure; requests that keep failing make the pane
// need a person (kind upstream) until one succeeds.

// UpstreamAfter is how many main-loop requests in a row must fail before
// the pane needs a person.
const UpstreamAfter = 2

// Answers is what the gateway told of a pane's main-loop requests; kept
// across restarts of the pane's program. Guarded by mu; the zero value is
// empty and ready.
type Answers struct {
	mu   sync.Mutex
	last gateway.Answer // the newest answer, by when it ended
	has  bool
	// failures counts the failed requests since the last success (the
	// agent's own cancelled requests aside); lastErr is the newest one's.
	failures int
	lastErr  string
	failedAt time.Time
}

// Note records an answer and reports whether the pane's need of a person
// (upstream) changed.
func (w *Answers) Note(a gateway.Answer) (changed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last, w.has = a, true
	was := w.failures >= UpstreamAfter
	switch {
	case a.Cancelled:
		return false
	case a.Failed():
		w.failures++
		w.lastErr, w.failedAt = a.Error, a.Ended
	default:
		w.failures, w.lastErr = 0, ""
	}
	return was || w.failures >= UpstreamAfter
}

// Since is the newest answer to a request that started at or after t.
func (w *Answers) Since(t time.Time) (gateway.Answer, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.has || w.last.Started.Before(t) {
		return gateway.Answer{}, false
	}
	return w.last, true
}

// Upstream is why the pane needs a person for its upstream: its requests
// failed UpstreamAfter times or more in a row, the newest with lastErr;
// "" when not.
func (w *Answers) Upstream() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failures < UpstreamAfter {
		return ""
	}
	return fmt.Sprintf("%d model requests in a row failed, the last at %s: %s", w.failures, w.failedAt.Format("15:04:05"), w.lastErr)
}
