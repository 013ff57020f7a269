package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/schema/disktest"
	"github.com/cicy-ai/cicy-agent/topology"
)

// fullRules script a cicy pane: "fill PATH" runs a tool that fills the
// disk PATH is on; anything else is answered "I got: …".
const fullRules = `rules:
  - match: {tool_result: true}
    reply: {text: filled}
  - match: {last_user: 'fill (\S+)'}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'head -c 100000000 /dev/zero > {{1}} 2>/dev/null; true'}
  - reply: {text: "I got: {{last_user}}"}
`

// faultStore is the real store whose usage writes fail as on a full disk
// while full is set.
type faultStore struct {
	*schema.Store
	full atomic.Bool
}

func (f *faultStore) AddUsage(ctx context.Context, u schema.UsageRow) error {
	if f.full.Load() {
		return fmt.Errorf("record usage: %w", syscall.ENOSPC)
	}
	return f.Store.AddUsage(ctx, u)
}

// fullDiskSupervisor starts a supervisor on a home at root whose store is
// wrapped in a faultStore, with the scripted model.
func fullDiskSupervisor(t *testing.T, root string, retry time.Duration) (*Supervisor, *faultStore, http.Handler) {
	t.Helper()
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(fullRules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	h, store := openTestHome(t, root)
	fs := &faultStore{Store: store}
	getenv := func(k string) string { return map[string]string{"CICY_SCRIPT": rules}[k] }
	cfg := Config{Home: h, Log: quietLog(), Getenv: getenv, LedgerRetry: retry}
	s, err := New(context.Background(), cfg, fs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); _ = s.tmux.KillServer() })
	return s, fs, newAPI(s, cfg, func() {})
}

// ledgerCalls is how many of pane's calls the database holds.
func ledgerCalls(t *testing.T, store *schema.Store, pane string) int64 {
	t.Helper()
	groups, err := store.UsageGroups(context.Background(), schema.UsageQuery{By: schema.ByPane, Pane: pane})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, g := range groups {
		n += g.Calls
	}
	return n
}

// homeNeed is the home's disk-full attention in the status view, if any.
func homeNeed(t *testing.T, s *Supervisor) (topology.Attention, bool) {
	t.Helper()
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.NeedsYou {
		if n.Kind == topology.NeedDiskFull {
			return n, true
		}
	}
	return topology.Attention{}, false
}

// healthNeeds is what GET /api/health says needs you.
func healthNeeds(t *testing.T, h http.Handler) []topology.Attention {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/health", nil))
	var hl api.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &hl); err != nil {
		t.Fatalf("health: %v: %s", err, rec.Body)
	}
	return hl.NeedsYou
}

func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestLedgerQueuesRefusedUsage: a usage row the store refuses (a full
// disk) waits and arrives in the ledger once the store takes it again;
// the turn that made the call ends with "disk full: …"; status, health
// and the event stream's snapshot show the home's disk full, and clear
// once a write succeeds.
func TestLedgerQueuesRefusedUsage(t *testing.T) {
	s, fs, h := fullDiskSupervisor(t, filepath.Join(t.TempDir(), "home"), 20*time.Millisecond)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	fs.full.Store(true)
	res, err := s.Send(ctx, p.ID, api.SendRequest{Text: "hello", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || res.Answer != "I got: hello" || res.Error != res.Unsaved ||
		!strings.HasPrefix(res.Unsaved, "disk full: the usage of 1 model call of this turn is not in the ledger yet") {
		t.Fatalf("send --wait = %+v; want failed, with its answer and the disk full sentence", res)
	}
	need, ok := homeNeed(t, s)
	if !ok || need.ID != topology.HomeID || !strings.HasPrefix(need.Reason, "disk full: the ledger cannot be written") {
		t.Fatalf("status needs you: %+v (found %v); want the home's disk full", need, ok)
	}
	if hn := healthNeeds(t, h); len(hn) != 1 || hn[0].Kind != topology.NeedDiskFull {
		t.Fatalf("health needs you: %+v; want disk-full", hn)
	}
	if snap, err := s.events.Snapshot(ctx); err != nil || !strings.HasPrefix(snap.Home.DiskFull, "disk full: ") {
		t.Fatalf("the snapshot's home = %+v, %v", snap.Home, err)
	}
	if n := ledgerCalls(t, fs.Store, p.ID); n != 0 {
		t.Fatalf("the ledger has %d calls while the store refuses them", n)
	}
	fs.full.Store(false)
	pollFor(t, "the waiting row in the ledger", func() bool { return ledgerCalls(t, fs.Store, p.ID) == 1 })
	pollFor(t, "disk full to clear", func() bool { _, ok := homeNeed(t, s); return !ok })
	if hn := healthNeeds(t, h); len(hn) != 0 {
		t.Fatalf("health still needs you: %+v", hn)
	}
	if s.spend.Waiting() != 0 {
		t.Fatalf("%d rows still wait", s.spend.Waiting())
	}
}

// TestLedgerShutdownWritesWaitingRows: the stop tries the waiting rows
// once more (no retry comes before it here).
func TestLedgerShutdownWritesWaitingRows(t *testing.T) {
	s, fs, _ := fullDiskSupervisor(t, filepath.Join(t.TempDir(), "home"), time.Hour)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	fs.full.Store(true)
	if _, err := s.Send(ctx, p.ID, api.SendRequest{Text: "hello", Wait: true}); err != nil {
		t.Fatal(err)
	}
	fs.full.Store(false)
	s.Close()
	if n := ledgerCalls(t, fs.Store, p.ID); n != 1 {
		t.Fatalf("the ledger has %d calls after the stop; want the one that waited", n)
	}
}

// TestDiskFullRealHome: a home on a real, tiny disk that a cicy turn's
// own tool fills: the turn ends with "disk full: …", status shows the
// home's disk full; once the filler is gone the next turn writes the
// kept history and the home no longer needs you.
func TestDiskFullRealHome(t *testing.T) {
	root := disktest.Tiny(t, 8<<20)
	s, _, _ := fullDiskSupervisor(t, root, 20*time.Millisecond)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(root, "filler")
	res, err := s.Send(ctx, p.ID, api.SendRequest{Text: "fill " + filler, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || res.Answer != "filled" || !strings.HasPrefix(res.Unsaved, "disk full: the history of "+p.ID+" could not be written") {
		t.Fatalf("send --wait = %+v; want failed with its answer and the disk full sentence", res)
	}
	if need, ok := homeNeed(t, s); !ok || !strings.Contains(need.Reason, "the history of "+p.ID) {
		t.Fatalf("status needs you: %+v (found %v); want the home's disk full", need, ok)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	res, err = s.Send(ctx, p.ID, api.SendRequest{Text: "hello", Wait: true})
	if err != nil || res.Status != "completed" {
		t.Fatalf("the turn after the disk was freed = %+v, %v", res, err)
	}
	pollFor(t, "disk full to clear", func() bool { _, ok := homeNeed(t, s); return !ok })
	e, err := s.get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cicy.HistoryDir(e.cfg.Workspace), "current.json"))
	if err != nil || !strings.Contains(string(b), `"filled"`) {
		t.Fatalf("current.json lacks the kept answer: %v\n%s", err, b)
	}
}

// TestDiskFullRefusedWritesNeedYou: on a disk already full, a send to a
// cicy pane and a dispatch are refused, and status shows the home's disk
// full (it showed nothing: no turn ran, no usage was written); once
// there is room again, the retries clear it without any other write, and
// both work.
func TestDiskFullRefusedWritesNeedYou(t *testing.T) {
	root := disktest.Tiny(t, 8<<20)
	s, _, h := fullDiskSupervisor(t, root, 20*time.Millisecond)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	filler := disktest.Fill(t, filepath.Join(root, "filler"))

	if _, err := s.Send(ctx, p.ID, api.SendRequest{Text: "hello"}); err == nil || !strings.Contains(err.Error(), "could not keep the message") {
		t.Fatalf("send on a full disk: %v", err)
	}
	need, ok := homeNeed(t, s)
	if !ok || !strings.HasPrefix(need.Reason, "disk full: the history of "+p.ID+" cannot be written") {
		t.Fatalf("status needs you after a refused send: %+v (found %v); want the home's disk full", need, ok)
	}
	if _, err := s.Dispatch(ctx, "", p.ID, "job"); err == nil || !strings.Contains(err.Error(), "database or disk is full") {
		t.Fatalf("dispatch on a full disk: %v", err)
	}
	need, ok = homeNeed(t, s)
	if !ok || !strings.Contains(need.Reason, "the database") {
		t.Fatalf("status needs you after a refused dispatch: %+v (found %v); want the database named", need, ok)
	}
	if hn := healthNeeds(t, h); len(hn) != 1 || hn[0].Kind != topology.NeedDiskFull {
		t.Fatalf("health needs you: %+v; want disk-full", hn)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "disk full to clear once there is room", func() bool { _, ok := homeNeed(t, s); return !ok })
	if _, err := s.Dispatch(ctx, "", p.ID, "job"); err != nil {
		t.Fatalf("dispatch once there is room: %v", err)
	}
	if res, err := s.Send(ctx, p.ID, api.SendRequest{Text: "hello", Wait: true}); err != nil || res.Status != "completed" {
		t.Fatalf("send once there is room: %+v, %v", res, err)
	}
}

// TestDiskFullRestoreRetried: a turn fills the disk, so its end is not
// written; the supervisor restarts while the disk is still full, and the
// pane cannot be restored (its turn's end cannot be written). Status
// says so (error, and the home's disk full); once there is room the
// restore is tried again by itself: the pane comes back, its cut turn
// goes on to its answer, and it takes messages.
func TestDiskFullRestoreRetried(t *testing.T) {
	root := disktest.Tiny(t, 8<<20)
	s, _, _ := fullDiskSupervisor(t, root, 20*time.Millisecond)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(root, "filler")
	if res, err := s.Send(ctx, p.ID, api.SendRequest{Text: "fill " + filler, Wait: true}); err != nil || res.Unsaved == "" {
		t.Fatalf("the turn that fills the disk: %+v, %v", res, err)
	}
	s.Close()

	s, _, _ = fullDiskSupervisor(t, root, 20*time.Millisecond)
	e, err := s.get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Its cut turn is taken up by the background restore after the start.
	pollFor(t, "the pane's restore tried", func() bool { return e.status().Reason != dormantReason })
	if st := e.status(); st.State != "error" || !strings.HasPrefix(st.Reason, "could not restore: ") {
		t.Fatalf("the pane after a restart on a full disk: %+v; want could not restore", st)
	}
	if need, ok := homeNeed(t, s); !ok || !strings.Contains(need.Reason, "the restore of "+p.ID) {
		t.Fatalf("status needs you: %+v (found %v); want the restore of %s named", need, ok, p.ID)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "the pane restored once there is room", func() bool { return e.status().State == "idle" && s.Home().DiskFull == "" })
	if res, err := s.Send(ctx, p.ID, api.SendRequest{Text: "hello", Wait: true}); err != nil || res.Status != "completed" || res.Answer != "I got: hello" {
		t.Fatalf("send after the restore: %+v, %v", res, err)
	}
	b, err := os.ReadFile(filepath.Join(cicy.HistoryDir(e.cfg.Workspace), "current.json"))
	if err != nil || strings.Count(string(b), `"tool_result"`) != 1 || !strings.Contains(string(b), `"filled"`) {
		t.Fatalf("current.json lacks the end of the cut turn (the fill call's one result, then its answer): %v\n%s", err, b)
	}
}

// TestDiskFullReturnRefusedTwice: a pane found gone at a start cannot come
// back while the disk is full; its return is tried again while the disk
// is still full and refused again, and keeps waiting: once there is room
// it comes back by itself.
func TestDiskFullReturnRefusedTwice(t *testing.T) {
	root := disktest.Tiny(t, 16<<20)
	s, _, _ := fullDiskSupervisor(t, root, 20*time.Millisecond)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: "tmux", Command: []string{"sh", "-c", "echo started; exec sleep 876543"}})
	if err != nil {
		t.Fatal(err)
	}
	started := func(s *Supervisor) func() bool {
		return func() bool { sc, err := s.Screen(p.ID, 0); return err == nil && strings.Contains(sc.Screen, "started") }
	}
	pollFor(t, "the pane started", started(s))
	// The machine's reboot: the supervisor and its tmux server are gone,
	// and with them the pane's session. Its files of this start go too (a
	// start writes them again; the pages they free would let it through).
	s.Close()
	if err := s.tmux.KillServer(); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(root, "run", "tmux", p.ID+".*"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	filler := disktest.Fill(t, filepath.Join(root, "filler"))

	s, _, _ = fullDiskSupervisor(t, root, 20*time.Millisecond)
	e, err := s.get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	refused := func() bool {
		st := e.status()
		return st.State == pane.Error && strings.Contains(st.Reason, "could not come back") && strings.Contains(st.Reason, "no space left on device")
	}
	pollFor(t, "the return refused", refused)
	first := e.status().Since
	pollFor(t, "the return tried again while the disk is full, and refused again", func() bool { return refused() && e.status().Since.After(first) })
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "the pane back once there is room", started(s))
	if st := e.status(); !st.Running() {
		t.Fatalf("the pane after the room made: %+v", st)
	}
}
