package gateway

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Refusals logs refused requests without letting a flood of them fill the
// log: per source, the first refusal of a minute is logged (its path cut
// to 200 bytes), the others are counted and told in one line with the
// next one logged. Safe for concurrent use.
type Refusals struct {
	mu    sync.Mutex
	bySrc map[string]*refusalWindow
	now   func() time.Time
}

type refusalWindow struct {
	start   time.Time
	dropped int
}

// refusalPeriod is how long one source's refusals are summed up.
const refusalPeriod = time.Minute

// maxRefusalSources bounds the sources remembered: past it, the windows
// that ended are forgotten, then all.
const maxRefusalSources = 4096

// NewRefusals returns an empty Refusals.
func NewRefusals() *Refusals {
	return &Refusals{bySrc: map[string]*refusalWindow{}, now: time.Now}
}

// Log logs (or counts) a refusal of a request from src for path.
func (r *Refusals) Log(log *logrus.Entry, src, path, msg string) {
	now := r.now()
	r.mu.Lock()
	w := r.bySrc[src]
	if w != nil && now.Sub(w.start) < refusalPeriod {
		w.dropped++
		r.mu.Unlock()
		return
	}
	dropped := 0
	if w != nil {
		dropped = w.dropped
	}
	r.forgetOld(now)
	r.bySrc[src] = &refusalWindow{start: now}
	r.mu.Unlock()
	l := log.WithFields(logrus.Fields{"remote": src, "path": clipPath(path)})
	if dropped > 0 {
		l = l.WithField("more_refused_last_minute", dropped)
	}
	l.Warn(msg)
}

// forgetOld keeps the map bounded. The caller holds r.mu.
func (r *Refusals) forgetOld(now time.Time) {
	if len(r.bySrc) < maxRefusalSources {
		return
	}
	for src, w := range r.bySrc {
		if now.Sub(w.start) >= refusalPeriod {
			delete(r.bySrc, src)
		}
	}
	if len(r.bySrc) >= maxRefusalSources {
		clear(r.bySrc)
	}
}
