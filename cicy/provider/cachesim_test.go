package provider

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// fakeClock is an injectable clock for the cache simulator.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestSim() (*CacheSim, *fakeClock) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return NewCacheSim(clk.now), clk
}

// convo builds requests the way the turn loop does (see docs/requests-and-caching.md): system with a
// breakpoint, the history with a breakpoint on its last block, then a
// <memories> block after it in the last user message.
type convo struct {
	system  string
	tools   []wire.Tool
	history []wire.Message
}

func (c *convo) add(role string, texts ...string) {
	m := wire.Message{Role: role}
	for _, t := range texts {
		m.Content = append(m.Content, wire.Text(t))
	}
	c.history = append(c.history, m)
}

// addBlocks appends n single-block messages, alternating assistant and
// user, ending with a user message when n is even.
func (c *convo) addBlocks(n int) {
	for i := range n {
		role := wire.RoleAssistant
		if (n-i)%2 == 1 {
			role = wire.RoleUser
		}
		c.add(role, fmt.Sprintf("step %d of the loop", i))
	}
}

func (c *convo) request() *wire.Request {
	req := &wire.Request{Model: "claude-test", MaxTokens: 1000}
	for i, t := range c.tools {
		if i == len(c.tools)-1 {
			t.CacheControl = wire.Ephemeral()
		}
		req.Tools = append(req.Tools, t)
	}
	req.System = []wire.Block{{Type: wire.TypeText, Text: c.system, CacheControl: wire.Ephemeral()}}
	for _, m := range c.history {
		m.Content = append([]wire.Block(nil), m.Content...)
		req.Messages = append(req.Messages, m)
	}
	last := &req.Messages[len(req.Messages)-1]
	last.Content[len(last.Content)-1].CacheControl = wire.Ephemeral()
	last.Content = append(last.Content, wire.Text("<memories>\nuser likes tea\n</memories>"))
	return req
}

// tok is the independent token estimate of a JSON value (ceil(bytes/4)).
func tok(t *testing.T, v any) int64 {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return int64((len(b) + 3) / 4)
}

// upToLastBreakpoint counts, independently of the simulator, the tokens
// of req up to and including its last breakpoint, and the total.
func upToLastBreakpoint(t *testing.T, req *wire.Request) (prefix, total int64) {
	t.Helper()
	for _, tl := range req.Tools {
		bp := tl.CacheControl != nil
		tl.CacheControl = nil
		total += tok(t, tl)
		if bp {
			prefix = total
		}
	}
	for _, b := range req.System {
		bp := b.CacheControl != nil
		b.CacheControl = nil
		total += tok(t, b)
		if bp {
			prefix = total
		}
	}
	for _, m := range req.Messages {
		total += tok(t, m.Role)
		for _, b := range m.Content {
			bp := b.CacheControl != nil
			b.CacheControl = nil
			total += tok(t, b)
			if bp {
				prefix = total
			}
		}
	}
	return prefix, total
}

func checkAdditive(t *testing.T, req *wire.Request, u wire.Usage) {
	t.Helper()
	_, total := upToLastBreakpoint(t, req)
	if got := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens; got != total {
		t.Fatalf("input %d + creation %d + read %d = %d, want the prompt's %d tokens",
			u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, got, total)
	}
	if u.InputTokens < 0 || u.CacheCreationInputTokens < 0 || u.CacheReadInputTokens < 0 {
		t.Fatalf("negative usage field: %+v", u)
	}
}

func TestCacheSimFirstRequestWritesPrefix(t *testing.T) {
	sim, _ := newTestSim()
	c := &convo{system: "You are a helpful assistant."}
	c.add(wire.RoleUser, "hello there")
	req := c.request()
	u := sim.Usage(req, 7)
	prefix, total := upToLastBreakpoint(t, req)
	want := wire.Usage{InputTokens: total - prefix, OutputTokens: 7, CacheCreationInputTokens: prefix}
	if u != want {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
	checkAdditive(t, req, u)
	if u.InputTokens != tok(t, wire.Text("<memories>\nuser likes tea\n</memories>")) {
		t.Fatalf("input tokens %d should be exactly the <memories> block after the breakpoint", u.InputTokens)
	}
}

func TestCacheSimSameRequestReadsAll(t *testing.T) {
	sim, _ := newTestSim()
	c := &convo{system: "sys"}
	c.add(wire.RoleUser, "hello")
	req := c.request()
	sim.Usage(req, 1)
	u := sim.Usage(req, 1)
	prefix, total := upToLastBreakpoint(t, req)
	if u.CacheReadInputTokens != prefix || u.CacheCreationInputTokens != 0 || u.InputTokens != total-prefix {
		t.Fatalf("second identical request: %+v, want read %d, creation 0", u, prefix)
	}
	checkAdditive(t, req, u)
}

func TestCacheSimMovingBreakpointReadsPreviousPrefix(t *testing.T) {
	sim, _ := newTestSim()
	c := &convo{system: "sys", tools: []wire.Tool{{Name: "shell", Description: "run", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	c.add(wire.RoleUser, "first question")
	first := c.request()
	sim.Usage(first, 1)
	prevPrefix, _ := upToLastBreakpoint(t, first)

	// Next round: the old <memories> copy is gone (wire-only), two
	// messages are appended and the breakpoint moves to the new end.
	c.add(wire.RoleAssistant, "an answer")
	c.add(wire.RoleUser, "a follow-up")
	second := c.request()
	u := sim.Usage(second, 1)
	prefix, _ := upToLastBreakpoint(t, second)
	if u.CacheReadInputTokens != prevPrefix {
		t.Fatalf("read %d, want the previous prefix %d", u.CacheReadInputTokens, prevPrefix)
	}
	if u.CacheCreationInputTokens != prefix-prevPrefix {
		t.Fatalf("creation %d, want only the new part %d", u.CacheCreationInputTokens, prefix-prevPrefix)
	}
	checkAdditive(t, second, u)
}

func TestCacheSimLookbackLimit(t *testing.T) {
	for _, tc := range []struct {
		appended int
		hit      bool
	}{
		{appended: 2, hit: true},
		{appended: 20, hit: true},  // the previous breakpoint is exactly 20 blocks back
		{appended: 21, hit: false}, // one block too far
		{appended: 40, hit: false},
	} {
		t.Run(fmt.Sprint(tc.appended), func(t *testing.T) {
			sim, _ := newTestSim()
			c := &convo{system: "sys"}
			c.add(wire.RoleUser, "go")
			first := c.request()
			sim.Usage(first, 1)
			prevPrefix, _ := upToLastBreakpoint(t, first)
			systemOnly := tok(t, wire.Text("sys"))

			c.addBlocks(tc.appended)
			req := c.request()
			u := sim.Usage(req, 1)
			prefix, _ := upToLastBreakpoint(t, req)
			// On a miss the system breakpoint's own entry is still read.
			wantRead := systemOnly
			if tc.hit {
				wantRead = prevPrefix
			}
			if u.CacheReadInputTokens != wantRead || u.CacheCreationInputTokens != prefix-wantRead {
				t.Fatalf("usage %+v, want read %d creation %d", u, wantRead, prefix-wantRead)
			}
			checkAdditive(t, req, u)
		})
	}
}

func TestCacheSimIntermediateBreakpointKeepsLongLoopInReach(t *testing.T) {
	sim, _ := newTestSim()
	c := &convo{system: "sys"}
	c.add(wire.RoleUser, "go")
	first := c.request()
	sim.Usage(first, 1)
	prevPrefix, _ := upToLastBreakpoint(t, first)

	c.addBlocks(30)
	req := c.request()
	// A breakpoint 15 blocks after the previous one: its own lookback
	// reaches the previous request's entry.
	req.Messages[15].Content[0].CacheControl = wire.Ephemeral()
	u := sim.Usage(req, 1)
	if u.CacheReadInputTokens != prevPrefix {
		t.Fatalf("read %d, want %d via the intermediate breakpoint", u.CacheReadInputTokens, prevPrefix)
	}
	checkAdditive(t, req, u)
}

func TestCacheSimInvalidation(t *testing.T) {
	tool := wire.Tool{Name: "shell", Description: "run", InputSchema: json.RawMessage(`{"type":"object"}`)}
	for _, tc := range []struct {
		name     string
		noTools  bool
		mutate   func(c *convo)
		wantRead func(t *testing.T) int64
	}{
		{"system byte without tools", true, func(c *convo) { c.system = "sys." }, func(*testing.T) int64 { return 0 }},
		// The last tool carries its own breakpoint, so the tools stay cached.
		{"system byte", false, func(c *convo) { c.system = "sys." }, func(t *testing.T) int64 { return tok(t, tool) }},
		{"tool description", false, func(c *convo) { c.tools[0].Description = "Run" }, func(*testing.T) int64 { return 0 }},
		{"first message", false, func(c *convo) { c.history[0].Content[0].Text = "hellO" },
			func(t *testing.T) int64 { return tok(t, tool) + tok(t, wire.Text("sys")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, _ := newTestSim()
			c := &convo{system: "sys", tools: []wire.Tool{tool}}
			if tc.noTools {
				c.tools = nil
			}
			c.add(wire.RoleUser, "hello")
			sim.Usage(c.request(), 1)
			tc.mutate(c)
			req := c.request()
			u := sim.Usage(req, 1)
			if want := tc.wantRead(t); u.CacheReadInputTokens != want {
				t.Fatalf("read %d after changing the %s, want %d", u.CacheReadInputTokens, tc.name, want)
			}
			checkAdditive(t, req, u)
		})
	}
}

func TestCacheSimModelIsPartOfTheKey(t *testing.T) {
	sim, _ := newTestSim()
	c := &convo{system: "sys"}
	c.add(wire.RoleUser, "hello")
	sim.Usage(c.request(), 1)
	req := c.request()
	req.Model = "another-model"
	if u := sim.Usage(req, 1); u.CacheReadInputTokens != 0 {
		t.Fatalf("read %d across models, want 0", u.CacheReadInputTokens)
	}
}

func TestCacheSimTTL(t *testing.T) {
	sim, clk := newTestSim()
	c := &convo{system: "sys"}
	c.add(wire.RoleUser, "hello")
	req := c.request()
	prefix, _ := upToLastBreakpoint(t, req)
	sim.Usage(req, 1)

	steps := []struct {
		after time.Duration
		read  int64
	}{
		{4*time.Minute + 59*time.Second, prefix}, // still alive; the read refreshes it
		{4*time.Minute + 59*time.Second, prefix}, // alive only thanks to the refresh
		{5 * time.Minute, 0},                     // idle exactly 5 minutes: expired
		{time.Second, prefix},                    // the miss wrote it again
	}
	for i, st := range steps {
		clk.advance(st.after)
		u := sim.Usage(req, 1)
		if u.CacheReadInputTokens != st.read {
			t.Fatalf("step %d (+%v): read %d, want %d", i, st.after, u.CacheReadInputTokens, st.read)
		}
		checkAdditive(t, req, u)
	}
}

func TestCacheSimDropsExpiredEntries(t *testing.T) {
	sim, clk := newTestSim()
	for i := range 10 {
		c := &convo{system: fmt.Sprintf("system %d", i)}
		c.add(wire.RoleUser, "hello")
		sim.Usage(c.request(), 1)
	}
	if n := len(sim.entries); n != 20 { // system and history breakpoints
		t.Fatalf("%d entries, want 20", n)
	}
	clk.advance(6 * time.Minute)
	c := &convo{system: "fresh"}
	c.add(wire.RoleUser, "hello")
	sim.Usage(c.request(), 1)
	if n := len(sim.entries); n != 2 {
		t.Fatalf("%d entries after expiry, want only the new request's 2", n)
	}
}

func TestCacheSimMinTokens(t *testing.T) {
	c := &convo{system: "sys"}
	c.add(wire.RoleUser, strings.Repeat("long text ", 100))
	req := c.request()
	prefix, total := upToLastBreakpoint(t, req)
	systemTokens := tok(t, wire.Text("sys"))

	for _, tc := range []struct {
		name      string
		min       int64
		wantWrite int64
	}{
		{"none cached", prefix + 1, 0},
		{"only the long prefix", systemTokens + 1, prefix},
		{"everything", 0, prefix},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, _ := newTestSim()
			sim.MinTokens = tc.min
			u := sim.Usage(req, 1)
			if u.CacheCreationInputTokens != tc.wantWrite || u.CacheReadInputTokens != 0 {
				t.Fatalf("usage %+v, want creation %d", u, tc.wantWrite)
			}
			checkAdditive(t, req, u)
			u = sim.Usage(req, 1)
			if u.CacheReadInputTokens != tc.wantWrite {
				t.Fatalf("second read %d, want %d", u.CacheReadInputTokens, tc.wantWrite)
			}
			if tc.wantWrite == 0 && u.InputTokens != total {
				t.Fatalf("uncached input %d, want %d", u.InputTokens, total)
			}
		})
	}
}

func TestCacheSimNoBreakpoints(t *testing.T) {
	sim, _ := newTestSim()
	req := &wire.Request{Model: "m", Messages: []wire.Message{{Role: wire.RoleUser, Content: []wire.Block{wire.Text("hi")}}}}
	for range 2 {
		u := sim.Usage(req, 3)
		if u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens != 0 || u.InputTokens != PromptTokens(req) {
			t.Fatalf("usage %+v without breakpoints, want all input", u)
		}
		checkAdditive(t, req, u)
	}
}
