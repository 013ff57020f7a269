package signals

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
)

// Signals spooled while no supervisor runs are replayed in order, each
// pane's to its own, and the spool is emptied.
func TestSpoolReplay(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run", "hooks")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, ev := range []string{"UserPromptSubmit", "Stop"} {
		if err := Spool(dir, "w-1", api.HookRequest{Agent: "claude", Event: ev, At: at.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := Spool(dir, "w-2", api.HookRequest{Agent: "codex", Event: "notify"}); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	log := logrus.New()
	log.SetOutput(io.Discard)
	Replay(dir, func(id string, req api.HookRequest) error {
		got[id] = append(got[id], req.Agent+"/"+req.Event)
		return nil
	}, logrus.NewEntry(log))
	if !slices.Equal(got["w-1"], []string{"claude/UserPromptSubmit", "claude/Stop"}) || !slices.Equal(got["w-2"], []string{"codex/notify"}) {
		t.Errorf("replayed %v", got)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the spool keeps %d files after the replay", len(left))
	}
}

// The count of requests in flight never goes below zero: an end heard
// without its start counts none.
func TestRequestsNeverBelowZero(t *testing.T) {
	t.Parallel()
	var r Requests
	r.Change(-1)
	r.Change(1)
	if n := r.InFlight(); n != 1 {
		t.Errorf("after an end then a start: %d in flight; want 1", n)
	}
	r.Change(-1)
	if n := r.InFlight(); n != 0 {
		t.Errorf("%d in flight; want 0", n)
	}
}
