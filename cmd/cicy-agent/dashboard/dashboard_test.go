package dashboard

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current rendering")

// t0 is the fixtures' clock.
var t0 = time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// fixture is a team in the middle of its work: a master with three
// workers (one busy on a task, one waiting for a permission answer, one
// idle whose last task failed), an untracked reviewer, usage and costs.
func fixture() api.Event {
	lead := "w-1"
	at := func(s int) *time.Time { return ptr(t0.Add(time.Duration(s) * time.Second)) }
	panes := []api.PaneInfo{
		{ID: "w-1", Title: "lead", Type: "cicy", Role: "master", State: "busy", Reason: "turn t1a2", Since: t0.Add(-5 * time.Second),
			Usage: api.Usage{InputTokens: 1200, OutputTokens: 3400, CacheReadInputTokens: 52000, CacheCreationInputTokens: 6000}, CacheHit: 0.881, CostUSD: ptr(0.1234)},
		{ID: "w-2", Title: "alice", Type: "cicy", Role: "worker", Master: &lead, State: "busy", Reason: "turn t3b4",
			Usage: api.Usage{InputTokens: 800, OutputTokens: 900, CacheReadInputTokens: 9000, CacheCreationInputTokens: 2000}, CacheHit: 0.7377, CostUSD: ptr(0.0321)},
		{ID: "w-3", Title: "claude-reviewer", Type: "claude", Role: "worker", Master: &lead, State: "waiting", Reason: "hook:Notification permission_prompt", CacheHit: -1},
		{ID: "w-4", Title: "bash1", Type: "shell", Role: "worker", Master: &lead, State: "idle", Reason: "output quiet 500ms", CacheHit: -1},
		{ID: "w-5", Title: "notes", Type: "opencode", Role: "reviewer", State: "idle", Reason: "hook:session.idle", CacheHit: -1},
	}
	tasks := []api.TaskInfo{
		{ID: 1, From: "w-1", To: "w-2", Text: "Count the lines of each text file in demo-data", Status: "done", Result: "a.txt 3", CreatedAt: t0.Add(-90 * time.Second), DeliveredAt: at(-89), FinishedAt: at(-60)},
		{ID: 2, From: "w-1", To: "w-4", Text: "sum the numbers in numbers.csv", Status: "failed", Error: "exit status 1", CreatedAt: t0.Add(-80 * time.Second), DeliveredAt: at(-79), FinishedAt: at(-70)},
		{ID: 3, From: "w-1", To: "w-2", Text: "Find the most common word in words.txt", Status: "delivered", CreatedAt: t0.Add(-50 * time.Second), DeliveredAt: at(-47)},
		{ID: 4, From: "w-1", To: "w-3", Text: "Review the report draft for mistakes", Status: "delivered", CreatedAt: t0.Add(-20 * time.Second), DeliveredAt: at(-18)},
		{ID: 5, From: "w-1", To: "w-2", Text: "Write the summary", Status: "queued", CreatedAt: t0.Add(-2 * time.Second)},
	}
	sum := api.TaskSummary{
		Counts: map[string]map[string]int{"w-1": {"done": 1, "failed": 1, "delivered": 2, "queued": 1}},
		Failed: []topology.FailedTask{{ID: 2, Worker: "w-4", Error: "exit status 1"}},
	}
	return api.Event{Type: "snapshot", At: t0, Snapshot: &api.Snapshot{Panes: panes, Tasks: tasks, Summary: sum}}
}

// plain is a frame without its colours, so a golden file is readable
// text; the meaning must be in the text anyway.
func plain(m *Model) string { return ansi.Strip(m.Frame()) }

func newFixtureModel(t *testing.T, w, h int, b Backend) *Model {
	t.Helper()
	m := NewModel(Options{Backend: b, Now: func() time.Time { return t0 }})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(linkMsg{up: true})
	m.Update(eventsMsg{fixture()})
	m.Update(previewMsg{seq: m.seq, screen: api.ScreenResponse{ID: "w-1", State: "busy",
		Screen: "› 🔔 [w-2] task 1 → done: a.txt 3\n\nTwo of three are in. Waiting for w-2's word count\nand w-3's review before the report.\n\n⚙ task_status → 3 delivered, 1 queued\n"}})
	return m
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./cmd/cicy-agent/dashboard -run Golden -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (rerun with -update if the change is meant):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// checkFrame: exactly h lines of exactly w cells.
func checkFrame(t *testing.T, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Fatalf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n != w {
			t.Errorf("line %d is %d cells wide, want %d: %q", i+1, n, w, l)
		}
	}
}

func TestGolden(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {120, 40}, {60, 20}, {40, 12}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := newFixtureModel(t, size.w, size.h, nil)
			frame := plain(m)
			checkFrame(t, frame, size.w, size.h)
			checkGolden(t, fmt.Sprintf("dashboard-%dx%d", size.w, size.h), frame)
		})
	}
}

// TestGoldenColour: the styled frame is as wide and tall as the plain one.
func TestGoldenColour(t *testing.T) {
	m := newFixtureModel(t, 80, 24, nil)
	frame := m.Frame()
	if !strings.Contains(frame, "\x1b[") {
		t.Fatal("no colour in a 256-colour frame")
	}
	checkFrame(t, frame, 80, 24)
}

func TestHelpGolden(t *testing.T) {
	m := newFixtureModel(t, 80, 24, nil)
	m.Update(key("?"))
	frame := plain(m)
	checkFrame(t, frame, 80, 24)
	checkGolden(t, "dashboard-help-80x24", frame)
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case " ":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	return tea.KeyPressMsg{Code: []rune(s)[0], Text: s}
}

// fakeBackend records the actions asked of it.
type fakeBackend struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeBackend) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeBackend) Send(_ context.Context, id string, req api.SendRequest) (*api.SendResult, error) {
	f.record("send " + id + " " + req.Text)
	return nil, nil
}

func (f *fakeBackend) Dispatch(_ context.Context, req api.DispatchRequest) (api.TaskInfo, error) {
	f.record("dispatch " + req.To + " " + req.Text)
	return api.TaskInfo{ID: 6}, nil
}

func (f *fakeBackend) Command(_ context.Context, id, cmd string) (*api.SendResult, error) {
	f.record("command " + id + " " + cmd)
	return &api.SendResult{Status: "completed", Answer: "compacted 40 messages"}, nil
}

func (f *fakeBackend) Kill(_ context.Context, id string) error {
	f.record("kill " + id)
	return nil
}

// press sends keys and runs the commands they return (actions and their
// outcome messages), the way the program would.
func press(m *Model, keys ...string) {
	for _, k := range keys {
		_, cmd := m.Update(key(k))
		run(m, cmd)
	}
}

func run(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	switch msg := msg.(type) {
	case nil, tickMsg, selectMsg:
	case tea.BatchMsg:
		for _, c := range msg {
			run(m, c)
		}
	default:
		_, next := m.Update(msg)
		run(m, next)
	}
}

func lastLine(frame string) string {
	lines := strings.Split(frame, "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func TestKeys(t *testing.T) {
	b := &fakeBackend{}
	m := newFixtureModel(t, 80, 24, b)
	if m.selected != "w-1" {
		t.Fatalf("selected %q at start, want the first pane", m.selected)
	}
	press(m, "j", "down", "k")
	if m.selected != "w-2" {
		t.Fatalf("selected %q after j, down, k; want w-2", m.selected)
	}
	press(m, "s", "h", "i", " ", "t", "h", "e", "r", "e", "enter")
	press(m, "d", "r", "u", "n", "esc") // cancelled: nothing dispatched
	press(m, "d", "g", "o", "enter")
	press(m, "c")
	press(m, "x", "n")
	if got := lastLine(plain(m)); got != "not killed" {
		t.Errorf("footer after x n: %q", got)
	}
	press(m, "x", "y")
	if got := lastLine(plain(m)); got != "killed w-2" {
		t.Errorf("footer after x y: %q", got)
	}
	want := []string{"send w-2 hi there", "dispatch w-2 go", "command w-2 /compact", "kill w-2"}
	if strings.Join(b.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("actions %q, want %q", b.calls, want)
	}

	// A master takes no tasks, a CLI pane no /compact: said, not done.
	press(m, "g", "d")
	if got := lastLine(plain(m)); !strings.Contains(got, "w-1 is a master; tasks go to workers") {
		t.Errorf("d on a master: footer %q", got)
	}
	press(m, "j", "j", "c")
	if got := lastLine(plain(m)); !strings.Contains(got, "w-3 is a claude pane; c compacts cicy panes") {
		t.Errorf("c on a claude pane: footer %q", got)
	}
	if len(b.calls) != len(want) {
		t.Fatalf("refused actions reached the supervisor: %q", b.calls)
	}
	_, cmd := m.Update(key("q"))
	if cmd == nil || cmd() != tea.Quit() {
		t.Fatal("q does not quit")
	}
}

func TestSelectionFollowsRemovedPane(t *testing.T) {
	m := newFixtureModel(t, 80, 24, nil)
	press(m, "j", "j")
	m.Update(eventsMsg{{Type: "pane_removed", ID: "w-3"}})
	if m.selected != "w-2" {
		t.Fatalf("selected %q after its pane went, want its neighbour w-2", m.selected)
	}
	m.Update(eventsMsg{{Type: "pane", Pane: &api.PaneInfo{ID: "w-7", Title: "late", Type: "shell", Role: "worker", State: "idle", CacheHit: -1}}})
	if !strings.Contains(plain(m), "w-7") {
		t.Fatal("a new pane is not in the table")
	}
}

func TestBellRingsForNewAttentionOnly(t *testing.T) {
	var bell bytes.Buffer
	m := NewModel(Options{Now: func() time.Time { return t0 }, Bell: true, BellOut: &bell})
	_, cmd := m.Update(eventsMsg{fixture()})
	run(m, cmd)
	if m.bells != 0 {
		t.Fatalf("the first snapshot rang %d times: what needs you at start is not news", m.bells)
	}
	w4 := fixture().Snapshot.Panes[3]
	w4.State, w4.Reason = "waiting", "screen:permission"
	_, cmd = m.Update(eventsMsg{{Type: "pane", Pane: &w4}})
	run(m, cmd)
	if m.bells != 1 || bell.String() != "\a" {
		t.Fatalf("a pane entering waiting: bells %d, wrote %q", m.bells, bell.String())
	}
	_, cmd = m.Update(eventsMsg{{Type: "pane", Pane: &w4}})
	run(m, cmd)
	if m.bells != 1 {
		t.Fatal("the same waiting pane rang again")
	}
	// A failed task rings; with the bell off nothing does.
	sum := fixture().Snapshot.Summary
	sum.Failed = append(sum.Failed, topology.FailedTask{ID: 3, Worker: "w-2", Error: "turn failed"})
	_, cmd = m.Update(eventsMsg{{Type: "summary", Summary: &sum}})
	run(m, cmd)
	if m.bells != 2 {
		t.Fatalf("a failed task: bells %d, want 2", m.bells)
	}
	if !strings.Contains(plain(m), "! w-2 alice — task 3 failed: turn failed") {
		t.Fatalf("the failure is not highlighted:\n%s", plain(m))
	}
	m.bell = false
	w4.State = "error"
	_, cmd = m.Update(eventsMsg{{Type: "pane", Pane: &w4}})
	run(m, cmd)
	if m.bells != 2 {
		t.Fatal("rang with the bell off")
	}
}

// TestUpstreamFailuresNeedYou: a pane whose model requests keep failing
// upstream rings the bell and is listed with the error; a success clears
// it.
func TestUpstreamFailuresNeedYou(t *testing.T) {
	var bell bytes.Buffer
	m := NewModel(Options{Now: func() time.Time { return t0 }, Bell: true, BellOut: &bell})
	_, cmd := m.Update(eventsMsg{fixture()})
	run(m, cmd)
	w2 := fixture().Snapshot.Panes[1]
	w2.Upstream = "2 model requests in a row failed, the last at 12:00:05: the upstream answered 429: rate_limit_error: slow down"
	_, cmd = m.Update(eventsMsg{{Type: "pane", Pane: &w2}})
	run(m, cmd)
	if m.bells != 1 {
		t.Fatalf("upstream failures: bells %d, want 1", m.bells)
	}
	if !strings.Contains(plain(m), "! w-2 alice — upstream: 2 model requests in a row failed") {
		t.Fatalf("the upstream failures are not listed:\n%s", plain(m))
	}
	w2.Upstream = ""
	_, cmd = m.Update(eventsMsg{{Type: "pane", Pane: &w2}})
	run(m, cmd)
	if strings.Contains(plain(m), "upstream:") {
		t.Fatalf("a success did not clear it:\n%s", plain(m))
	}
}

// TestDiskFullNeedsYou: a home whose disk is full is listed like the
// other needs-you kinds (and rings); a write that succeeds clears it.
func TestDiskFullNeedsYou(t *testing.T) {
	var bell bytes.Buffer
	m := NewModel(Options{Now: func() time.Time { return t0 }, Bell: true, BellOut: &bell})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	_, cmd := m.Update(eventsMsg{fixture()})
	run(m, cmd)
	home := api.HomeInfo{DiskFull: "disk full: the ledger cannot be written (record usage: database or disk is full (13))"}
	_, cmd = m.Update(eventsMsg{{Type: "home", Home: &home}})
	run(m, cmd)
	if m.bells != 1 {
		t.Fatalf("disk full: bells %d, want 1", m.bells)
	}
	if !strings.Contains(plain(m), "! home — disk full: the ledger cannot be written") {
		t.Fatalf("the full disk is not listed:\n%s", plain(m))
	}
	if got, want := m.needs(m.team.Status(t0), 10)[0], st.bad.Render(fit("! home — "+home.DiskFull, m.width)); got != want {
		t.Fatalf("styled %q, want the error style %q", got, want)
	}
	_, cmd = m.Update(eventsMsg{{Type: "home", Home: &api.HomeInfo{}}})
	run(m, cmd)
	if strings.Contains(plain(m), "disk full") {
		t.Fatalf("a write that succeeded did not clear it:\n%s", plain(m))
	}
}

// panicky is a client whose event stream blows up when told to.
type panicky struct {
	fakeBackend
	boom chan struct{}
}

func (p *panicky) TeamEvents(context.Context) (*api.EventStream, error) {
	<-p.boom
	panic("stream exploded")
}

func (*panicky) Preview(context.Context, string, int) (io.ReadCloser, error) {
	return nil, errors.New("no preview")
}

// TestCrashRestoresTerminal: a panic in a helper goroutine ends the
// program with the terminal restored (alternate screen left, cursor
// shown) and an error saying so.
func TestCrashRestoresTerminal(t *testing.T) {
	var out syncBuffer
	cl := &panicky{boom: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), cl, RunOptions{In: bytes.NewReader(nil), Out: &out,
			ProgramOptions: []tea.ProgramOption{tea.WithInput(nil), tea.WithoutSignalHandler(), tea.WithWindowSize(80, 24)}})
	}()
	// The stream blows up once the dashboard has taken the screen.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "\x1b[?1049h"); {
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard never took the screen: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(cl.boom)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stream exploded") {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end after a crash")
	}
	s := out.String()
	if !strings.Contains(s, "\x1b[?1049h") || strings.LastIndex(s, "\x1b[?1049l") < strings.LastIndex(s, "\x1b[?1049h") {
		t.Fatalf("the alternate screen was not left: %q", s)
	}
	if strings.LastIndex(s, "\x1b[?25h") < strings.LastIndex(s, "\x1b[?25l") {
		t.Fatalf("the cursor was left hidden: %q", s)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAnySizeFits: whatever the terminal's size, every frame is exactly
// that size (no wrapped line scrolls the screen), in every mode.
func TestAnySizeFits(t *testing.T) {
	for _, w := range []int{1, 5, 12, 20, 33, 47, 79, 81, 100, 200} {
		for _, h := range []int{1, 2, 3, 5, 8, 13, 24, 60} {
			m := newFixtureModel(t, w, h, &fakeBackend{})
			checkFrame(t, m.Frame(), w, h)
			press(m, "s", "x", "y", "z")
			checkFrame(t, m.Frame(), w, h)
			press(m, "esc", "?")
			checkFrame(t, m.Frame(), w, h)
		}
	}
}

// TestDrainEvents: batches waiting are folded into one update; the first
// other message comes back to be sent after them, and the rest stays.
func TestDrainEvents(t *testing.T) {
	msgs := make(chan tea.Msg, 8)
	msgs <- eventsMsg{{Type: "state", ID: "w-2"}}
	msgs <- eventsMsg{{Type: "state", ID: "w-3"}}
	msgs <- previewMsg{seq: 1}
	msgs <- eventsMsg{{Type: "state", ID: "w-4"}}
	got, rest := drainEvents(eventsMsg{{Type: "state", ID: "w-1"}}, msgs)
	if evs, ok := got.(eventsMsg); !ok || len(evs) != 3 || evs[2].ID != "w-3" {
		t.Fatalf("folded %+v", got)
	}
	if _, ok := rest.(previewMsg); !ok {
		t.Fatalf("the other message: %+v", rest)
	}
	if len(msgs) != 1 {
		t.Fatalf("%d messages left, want the last batch", len(msgs))
	}
}

func TestReasonCell(t *testing.T) {
	for in, want := range map[string]string{
		"turn t3b4 done":            "done · turn t3b4",
		"turn t3b4 failed: boom":    "failed: boom · turn t3b4",
		"turn t3b4":                 "turn t3b4",
		"hook:Stop":                 "hook:Stop",
		"output quiet for 500ms":    "output quiet for 500ms",
		"screen:claude-idle-footer": "screen:claude-idle-footer",
	} {
		if got := reasonCell(in); got != want {
			t.Errorf("reasonCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// nodeFixture is the fixture's team with its panes on nodes: all on a
// (one node), or the master on a and its workers on b, whose lease has
// lapsed so its panes are unreachable.
func nodeFixture(spread bool) api.Event {
	ev := fixture()
	for i := range ev.Snapshot.Panes {
		p := &ev.Snapshot.Panes[i]
		p.Node = "a"
		if spread && p.Role != "master" {
			p.Node = "b"
			p.State, p.Reason = "unreachable", "node b's lease lapsed 40 s ago"
		}
	}
	return ev
}

func newNodeModel(t *testing.T, w, h int, spread bool) *Model {
	t.Helper()
	m := newFixtureModel(t, w, h, nil)
	m.Update(eventsMsg{nodeFixture(spread)})
	return m
}

// TestOneNodeHasNoNodeColumn: a team on one node looks exactly as a
// single machine's team always did.
func TestOneNodeHasNoNodeColumn(t *testing.T) {
	m := newNodeModel(t, 80, 24, false)
	checkGolden(t, "dashboard-80x24", plain(m))
}

// TestNodesGolden: a team on two nodes has a NODE column, and the panes
// of the unreachable node are marked in the table and need you.
func TestNodesGolden(t *testing.T) {
	for _, size := range []struct{ w, h int }{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := newNodeModel(t, size.w, size.h, true)
			frame := plain(m)
			checkFrame(t, frame, size.w, size.h)
			checkGolden(t, fmt.Sprintf("dashboard-nodes-%dx%d", size.w, size.h), frame)
			for _, want := range []string{"ID    NODE ", "w-2   b    ", "w-1   a    ", "! w-2 alice — unreachable: node b's lease lapsed 40 s ago"} {
				if !strings.Contains(frame, want) {
					t.Errorf("no %q in the frame", want)
				}
			}
		})
	}
	for _, w := range []int{1, 12, 33, 47, 79, 100, 200} {
		for _, h := range []int{1, 5, 13, 24} {
			checkFrame(t, newNodeModel(t, w, h, true).Frame(), w, h)
		}
	}
}

// TestUnreachableStyled: an unreachable pane's state is drawn as an
// error's is.
func TestUnreachableStyled(t *testing.T) {
	if got, want := st.state("unreachable").Render("x"), st.bad.Render("x"); got != want {
		t.Fatalf("unreachable is styled %q, want the error style %q", got, want)
	}
}

// TestWorktreeChange: a worker in a git worktree shows its unmerged work
// in a CHANGE column and on its master's topology line; a team without
// worktrees has no such column.
func TestWorktreeChange(t *testing.T) {
	ev := fixture()
	ev.Snapshot.Panes[3].Worktree = &api.WorktreeInfo{Pane: "w-4", Branch: "cicy/w-4", Target: "main", Ahead: 2, Files: 3, Added: 42, Deleted: 7}
	ev.Snapshot.Panes[2].Worktree = &api.WorktreeInfo{Pane: "w-3", Branch: "cicy/w-3", Target: "main", Merged: true}
	m := NewModel(Options{Backend: &fakeBackend{}, Now: func() time.Time { return t0 }})
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 30})
	m.Update(linkMsg{up: true})
	m.Update(eventsMsg{ev})
	frame := plain(m)
	checkFrame(t, frame, 140, 30)
	for _, want := range []string{"CHANGE", "2↑ +42 −7", "merged", "w-4 bash1 idle cicy/w-4 2↑ +42 −7"} {
		if !strings.Contains(frame, want) {
			t.Errorf("no %q in the frame:\n%s", want, frame)
		}
	}
	if strings.Contains(plain(newFixtureModel(t, 140, 30, &fakeBackend{})), "CHANGE") {
		t.Error("a team without worktrees has a CHANGE column")
	}
}

// TestFitControls: a cell never carries a control character to the
// terminal, C1 (U+009B, an 8-bit CSI) included.
func TestFitControls(t *testing.T) {
	t.Parallel()
	got := fit("a\x1b]52;c;aGk=\x07b\u009b31mc\u0085d", 40)
	if strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }) {
		t.Fatalf("fit left a control character: %q", got)
	}
}

// TestHeaderNotify: the header says which notification sinks fail, else
// that they deliver.
func TestHeaderNotify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sinks []topology.SinkState
		want  string
	}{
		{"failing", []topology.SinkState{{Name: "ci", Type: "webhook", LastSent: ptr(t0)}, {Name: "phone", Type: "telegram", FailingSince: ptr(t0), LastStatus: 401}}, "notify: phone failing"},
		{"one", []topology.SinkState{{Name: "ci", Type: "webhook"}}, "notify: ci"},
		{"two", []topology.SinkState{{Name: "ci"}, {Name: "phone"}}, "notify: 2 sinks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel(Options{Backend: nil, Now: func() time.Time { return t0 }})
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 30})
			m.Update(linkMsg{up: true})
			ev := fixture()
			ev.Snapshot.Home.Notify = tc.sinks
			m.Update(eventsMsg{ev})
			if head := strings.SplitN(plain(m), "\n", 2)[0]; !strings.Contains(head, tc.want) {
				t.Errorf("header %q lacks %q", head, tc.want)
			}
		})
	}
	m := newFixtureModel(t, 160, 30, nil)
	if head := strings.SplitN(plain(m), "\n", 2)[0]; strings.Contains(head, "notify") {
		t.Errorf("a home without sinks: header %q", head)
	}
}
