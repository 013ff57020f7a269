package cicy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/memory"
	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// fakeClock is a Clock whose time moves only when the test says.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c    *fakeClock
	at   time.Time
	f    func()
	done bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Advance moves time on and runs the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// auxRecorder wraps the scripted model and records the memory calls.
type auxRecorder struct {
	inner *provider.Script
	mu    sync.Mutex
	calls []*wire.Request
}

func (r *auxRecorder) Stream(ctx context.Context, req *wire.Request, on func(wire.Event)) (*wire.Response, error) {
	if req.Aux == "memory" {
		r.mu.Lock()
		r.calls = append(r.calls, req)
		r.mu.Unlock()
	}
	return r.inner.Stream(ctx, req, on)
}

func (r *auxRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

const memRules = `rules:
  - match: {aux: memory, last_user: "(?s)fail-recognizer"}
    times: 1
    error: {status: 400, type: invalid_request_error, message: scripted failure}
  - match: {aux: memory, last_user: "(?s).*turn (\\d+)"}
    reply: {text: '{"memories":[{"mem_id":"fact_last_turn","type":"fact","title":"Last turn","content":"saw turn {{1}}","salience":3}]}'}
  - match: {aux: memory}
    reply: {text: '{"memories":[]}'}
  - match: {last_user: "."}
    reply: {text: "ok"}
`

type memRig struct {
	t     *testing.T
	a     *Agent
	clock *fakeClock
	rec   *auxRecorder
	ws    string
}

func newMemRig(t *testing.T) *memRig {
	home, ws := t.TempDir(), t.TempDir()
	if err := SeedTemplates(home); err != nil {
		t.Fatal(err)
	}
	rules, err := provider.ParseScript([]byte(memRules))
	if err != nil {
		t.Fatal(err)
	}
	r := &memRig{t: t, clock: newFakeClock(), ws: ws}
	r.rec = &auxRecorder{inner: &provider.Script{Rules: rules, Retry: provider.Retry{Attempts: 1}}}
	r.a, err = Start(PaneConfig{ID: "w-1", Workspace: ws, RoleTemplate: "assistant"}, Env{
		Home: home, Clock: r.clock, NewProvider: func(string) (Provider, error) { return r.rec, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.a.Close)
	return r
}

func (r *memRig) turn(text string) {
	r.t.Helper()
	ch, err := r.a.Send(text, "", true)
	if err != nil {
		r.t.Fatal(err)
	}
	select {
	case res := <-ch:
		if res.Status != TurnCompleted {
			r.t.Fatalf("turn %q: %+v", text, res)
		}
	case <-time.After(20 * time.Second):
		r.t.Fatalf("turn %q did not end", text)
	}
}

// waitCalls waits until n recognitions ran and the buffer settled: none
// is in flight any more (a call is counted when it starts, and a failed
// one leaves the batch buffered, as it was while the call ran).
func (r *memRig) waitCalls(n int, buffered int) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	inflight := func() int {
		k := 0
		r.a.do(func() { k = len(r.a.mem.inflight) })
		return k
	}
	for r.rec.count() != n || r.a.BufferedTurns() != buffered || inflight() > 0 {
		if time.Now().After(deadline) {
			r.t.Fatalf("recognitions = %d (want %d), buffered = %d (want %d), %d turns in flight", r.rec.count(), n, r.a.BufferedTurns(), buffered, inflight())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quiet checks that no recognition started: none was made and none is in
// flight (asked on the loop, so everything sent before is processed).
func (r *memRig) quiet(n int) {
	r.t.Helper()
	inflight := 0
	r.a.do(func() { inflight = len(r.a.mem.inflight) })
	if c := r.rec.count(); c != n || inflight > 0 {
		r.t.Fatalf("recognitions = %d (%d turns in flight), want %d and none starting", c, inflight, n)
	}
}

func TestMemoryIdleDebounceRestartsOnEachTurn(t *testing.T) {
	r := newMemRig(t)
	r.turn("turn 1")
	r.clock.Advance(4 * time.Minute)
	r.quiet(0)
	r.turn("turn 2") // restarts the 5-minute idle wait
	r.clock.Advance(4 * time.Minute)
	r.quiet(0)
	r.clock.Advance(time.Minute)
	r.waitCalls(1, 0)
	if in := r.rec.calls[0].Messages[0].JoinedText(); !strings.Contains(in, "turn 1") || !strings.Contains(in, "turn 2") {
		t.Fatalf("the batch lacks a turn:\n%s", in)
	}
	if r.rec.calls[0].Aux != "memory" || r.rec.calls[0].TurnID != "" {
		t.Fatalf("aux call headers: aux %q turn %q", r.rec.calls[0].Aux, r.rec.calls[0].TurnID)
	}
}

func TestMemorySixthTurnFlushes(t *testing.T) {
	r := newMemRig(t)
	for i := 1; i <= 5; i++ {
		r.turn(fmt.Sprintf("turn %d", i))
	}
	r.quiet(0)
	r.turn("turn 6")
	r.waitCalls(1, 0)
	ms, _, _ := memory.Open(r.ws).List()
	if len(ms) != 1 || ms[0].Content != "saw turn 6" {
		t.Fatalf("memories = %+v", ms)
	}
}

func TestMemoryTwentyMinuteCap(t *testing.T) {
	r := newMemRig(t)
	for i := 1; i <= 5; i++ { // a turn every 4 minutes: never 5 minutes idle
		r.turn(fmt.Sprintf("turn %d", i))
		if i < 5 {
			r.clock.Advance(4 * time.Minute)
			r.quiet(0)
		}
	}
	r.clock.Advance(3*time.Minute + 59*time.Second) // 19:59 after the first turn
	r.quiet(0)
	r.clock.Advance(time.Second)
	r.waitCalls(1, 0)
}

func TestMemoryExplicitWordsFlushAtOnce(t *testing.T) {
	for _, text := range []string{"Remember that I use fish", "请记住我用 fish", "别忘了 turn 1", "记下来", "记一下", "DON'T FORGET this", "dont forget"} {
		t.Run(text, func(t *testing.T) {
			r := newMemRig(t)
			r.turn(text)
			r.waitCalls(1, 0)
		})
	}
}

func TestMemoryRecognizerFailureKeepsTheBatch(t *testing.T) {
	r := newMemRig(t)
	r.turn("fail-recognizer, turn 1: remember this")
	r.waitCalls(1, 1) // failed: the turn is kept
	ms, _, _ := memory.Open(r.ws).List()
	if len(ms) != 0 {
		t.Fatalf("memories after a failed recognition: %+v", ms)
	}
	res := <-r.a.FlushMemory(true) // the later flush stores it
	if res.Error != "" || res.Turns != 1 || res.Stored != 1 {
		t.Fatalf("second flush = %+v", res)
	}
	if r.a.BufferedTurns() != 0 {
		t.Fatal("the batch is still buffered after it was stored")
	}
}

func TestMemoryBufferSurvivesRestart(t *testing.T) {
	r := newMemRig(t)
	r.turn("turn 1")
	r.turn("turn 2")
	r.a.Close()
	a, err := Start(PaneConfig{ID: "w-1", Workspace: r.ws, RoleTemplate: "assistant"}, Env{
		Home: r.a.env.Home, Clock: r.clock, NewProvider: func(string) (Provider, error) { return r.rec, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n := a.BufferedTurns(); n != 2 {
		t.Fatalf("buffered after restart = %d", n)
	}
	r.clock.Advance(MemoryIdle)
	r.a = a
	r.waitCalls(1, 0)
}

// TestMemoryBadRecognizerAnswers: prose, truncated JSON, a mem_id that
// would escape, salience 99, 1 MB of content and 500 memories at once are
// handled: the pane keeps working, nothing is written outside
// .cicy/memory, and the injected index stays within 6,000 bytes.
func TestMemoryBadRecognizerAnswers(t *testing.T) {
	var many []string
	for i := 0; i < 500; i++ {
		many = append(many, fmt.Sprintf(`{"mem_id":"fact_n%03d","type":"fact","title":"Fact %d","content":"fact number %d about the user's setup","salience":%d}`, i, i, i, 1+i%5))
	}
	answers := []string{
		"I think nothing here is worth remembering, sorry.",
		`{"memories":[{"mem_id":"fact_a","type":"fact","title":"A","content":"cut off`,
		`{"memories":[{"mem_id":"../../x","type":"fact","title":"escape","content":"nope"},` +
			`{"mem_id":"pref_loud","type":"preference","title":"Loud","content":"salience out of range","salience":99},` +
			`{"mem_id":"fact_big","type":"fact","title":"Big","content":"` + strings.Repeat("x", 1<<20) + `"}]}`,
		`{"memories":[` + strings.Join(many, ",") + `]}`,
	}
	var yaml strings.Builder
	yaml.WriteString("rules:\n")
	for _, a := range answers {
		yaml.WriteString("  - match: {aux: memory}\n    times: 1\n    reply:\n      text: |\n        " + a + "\n")
	}
	yaml.WriteString("  - match: {last_user: \".\"}\n    reply: {text: ok}\n")
	rules, err := provider.ParseScript([]byte(yaml.String()))
	if err != nil {
		t.Fatal(err)
	}
	r := newMemRig(t)
	r.rec.inner = &provider.Script{Rules: rules, Retry: provider.Retry{Attempts: 1}}
	flush := func() FlushResult {
		r.turn("remember this turn")
		for r.a.BufferedTurns() > 0 {
			if res := <-r.a.FlushMemory(true); res.Error == "" {
				return res
			}
		}
		return FlushResult{}
	}
	// Prose, then truncated JSON: both fail and keep the turn; the third
	// answer is taken: ../../x refused, salience clamped, 1 MB clipped.
	if res := flush(); res.Stored != 2 || res.Turns != 1 {
		t.Fatalf("the flush after two failures = %+v, want the kept turn and 2 memories stored", res)
	}
	st := memory.Open(r.ws)
	if m, err := st.Get("pref_loud"); err != nil || m.Salience != 5 {
		t.Fatalf("salience 99: %+v %v", m, err)
	}
	if m, err := st.Get("fact_big"); err != nil || len(m.Content) > 8192 {
		t.Fatalf("1 MB content: %d bytes, %v", len(m.Content), err)
	}
	if _, err := st.Get("../../x"); err == nil {
		t.Fatal("a mem_id escaping the folder was stored")
	}
	flush() // 500 at once
	ms, _, _ := st.List()
	if len(ms) > 120 || len(ms) < 100 {
		t.Fatalf("%d memories after 500 at once, want the overflow archived to 100", len(ms))
	}
	if got := loadMemories(r.ws); len(got) > MemoryCap {
		t.Fatalf("injected index is %d bytes", len(got))
	}
	// Nothing outside .cicy/memory apart from the history and AGENTS.md.
	err = filepath.Walk(r.ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(r.ws, p)
		if !strings.HasPrefix(rel, ".cicy/memory/") && !strings.HasPrefix(rel, ".cicy/history/") {
			t.Errorf("file outside .cicy/memory: %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(r.ws), "x.md")); err == nil {
		t.Fatal("../../x was written")
	}
	r.turn("still working?")
}
