package supervisor

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/topology"
)

// diskWatch knows whether the home's writes fail for lack of space: each
// writer (the ledger, a cicy pane's history) says how its last write went.
// One that failed because the disk is full stands until a write of the
// same writer succeeds; while any stands, the home needs you (disk-full).
type diskWatch struct {
	mu   sync.Mutex
	full map[string]error // writer → the error of its failed write
	// changed is called (never under mu, never blocking) when the state
	// of the home changed.
	changed func()
}

func newDiskWatch(changed func()) *diskWatch {
	return &diskWatch{full: map[string]error{}, changed: changed}
}

// note records how writer's last write went: nil when it succeeded. An
// error other than a full disk changes nothing: it is not news of the
// disk.
func (d *diskWatch) note(writer string, err error) {
	d.mu.Lock()
	_, was := d.full[writer]
	switch {
	case err == nil:
		delete(d.full, writer)
	case cicy.IsDiskFull(err):
		d.full[writer] = err
	}
	_, is := d.full[writer]
	d.mu.Unlock()
	if was != is && d.changed != nil {
		d.changed()
	}
}

// reason is the sentence of the home's full disk, "" while writes succeed:
// "disk full: the ledger and the history of w-3 cannot be written (…)".
func (d *diskWatch) reason() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.full) == 0 {
		return ""
	}
	writers := make([]string, 0, len(d.full))
	for w := range d.full {
		writers = append(writers, w)
	}
	slices.Sort(writers)
	names := strings.Join(writers, ", ")
	if n := len(writers); n > 1 {
		names = strings.Join(writers[:n-1], ", ") + " and " + writers[n-1]
	}
	return fmt.Sprintf("disk full: %s cannot be written (%s); free space on that disk: what waits in memory is written again once it can be",
		names, cicy.WriteProblem(d.full[writers[0]]))
}

// Home is what needs a person about the home as a whole.
func (s *Supervisor) Home() api.HomeInfo {
	return api.HomeInfo{DiskFull: s.disk.reason(), Node: s.cfg.Node}
}

// homeNeeds is the home's part of needs-you (for health).
func (s *Supervisor) homeNeeds() []topology.Attention { return s.Home().Needs() }
