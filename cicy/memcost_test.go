package cicy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// sessionRecorder records the main-turn requests and sums usage.
type sessionRecorder struct {
	inner *provider.Script
	mu    sync.Mutex
	reqs  []*wire.Request
	usage wire.Usage // main and aux calls
}

func (r *sessionRecorder) Stream(ctx context.Context, req *wire.Request, on func(wire.Event)) (*wire.Response, error) {
	resp, err := r.inner.Stream(ctx, req, on)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.usage.Add(resp.Usage)
	}
	if req.Aux == "" {
		c := *req
		r.reqs = append(r.reqs, &c)
	}
	return resp, err
}

// A session whose recognizer stores a new memory from every batch of six
// turns, with a tool round in every turn.
const sessionRules = `rules:
  - match: {aux: memory, last_user: "(?s).*Turn (\\d+):"}
    reply: {text: '{"memories":[{"mem_id":"fact_batch_{{1}}","type":"fact","title":"Batch ending at turn {{1}}","content":"The user worked through the steps up to turn {{1}} of the migration plan.","salience":3}]}'}
  - match: {aux: memory}
    reply: {text: '{"memories":[]}'}
  - match: {tool_result: true}
    reply: {text: "Step checked; the listing looks as expected."}
  - match: {last_user: "."}
    reply:
      text: "Checking."
      tool_calls:
        - name: shell
          input: {command: "seq -w 1 1000"}
`

// memorySession runs turns through the real loop with the scripted model
// and its cache simulator. The memory changes every `every` turns: every
// 6 turns is the batch trigger; every turn is a user who says "remember"
// each time. Each change is recognised before the next turn (so runs are
// deterministic).
func memorySession(tb testing.TB, turns int, head bool, every int) *sessionRecorder {
	tb.Helper()
	tb.Setenv("HOME", tb.TempDir()) // bash -l reads ~/.profile; keep it empty
	home, ws := tb.TempDir(), tb.TempDir()
	if err := SeedTemplates(home); err != nil {
		tb.Fatal(err)
	}
	rules, err := provider.ParseScript([]byte(sessionRules))
	if err != nil {
		tb.Fatal(err)
	}
	rec := &sessionRecorder{inner: &provider.Script{Rules: rules, Sim: provider.NewCacheSim(nil)}}
	clock := newFakeClock()
	a, err := Start(PaneConfig{ID: "w-1", Workspace: ws, RoleTemplate: "assistant"}, Env{
		Home: home, Clock: clock, headMemories: head,
		NewProvider: func(string) (Provider, error) { return rec, nil },
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer a.Close()
	for i := 1; i <= turns; i++ {
		clock.Advance(time.Minute) // a turn a minute: memories get distinct update times
		text := fmt.Sprintf("Turn %d: run the next step of the migration plan and check it.", i)
		if every == 1 {
			text += " Remember how far we got."
		}
		ch, err := a.Send(text, "", true)
		if err != nil {
			tb.Fatal(err)
		}
		if r := <-ch; r.Status != TurnCompleted {
			tb.Fatalf("turn %d: %+v", i, r)
		}
		if i%every == 0 {
			if r := <-a.FlushMemory(true); r.Error != "" {
				tb.Fatalf("recognition after turn %d: %s", i, r.Error)
			}
		}
	}
	return rec
}

// inputCost is the input price of a usage relative to uncached input:
// cache writes 1.25×, cache reads 0.1×.
func inputCost(u wire.Usage) float64 {
	return float64(u.InputTokens) + 1.25*float64(u.CacheCreationInputTokens) + 0.1*float64(u.CacheReadInputTokens)
}

// BenchmarkMemoryTailVsHead compares the simulated input cost of a
// 100-turn session with memory updates when the memories are injected at
// the tail (after the last breakpoint) against the system prompt, with the
// memory changing every turn and every 6 turns.
func BenchmarkMemoryTailVsHead(b *testing.B) {
	for _, every := range []int{1, MemoryBatch} {
		b.Run(fmt.Sprintf("update-every=%d", every), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tail := inputCost(memorySession(b, 100, false, every).usage)
				head := inputCost(memorySession(b, 100, true, every).usage)
				b.ReportMetric(tail, "tail-cost")
				b.ReportMetric(head, "head-cost")
				b.ReportMetric(head/tail, "head/tail")
			}
		})
	}
}

// TestPrefixStableOverFiftyTurnsWithMemoryChanges: over 50 turns with a
// memory change every 6 turns, no memory bytes come before the last
// breakpoint of any request, and each request's content up to its last
// breakpoint extends the previous request's.
func TestPrefixStableOverFiftyTurnsWithMemoryChanges(t *testing.T) {
	rec := memorySession(t, 50, false, MemoryBatch)
	var prev []string
	changes := 0
	lastMem := ""
	for i, req := range rec.reqs {
		units, mem := cachedUnits(t, req)
		for _, u := range units {
			if strings.Contains(u, "<memories>") || strings.Contains(u, "fact_batch") || strings.Contains(u, "Batch ending") {
				t.Fatalf("request %d: memory bytes before the last breakpoint: %.120s", i, u)
			}
		}
		if mem != lastMem {
			changes++
			lastMem = mem
		}
		if i > 0 {
			if len(units) < len(prev) {
				t.Fatalf("request %d: shorter cached prefix than request %d", i, i-1)
			}
			for k := range prev {
				if units[k] != prev[k] {
					t.Fatalf("request %d: unit %d of the cached prefix changed:\nwas %.200s\nnow %.200s", i, k, prev[k], units[k])
				}
			}
		}
		prev = units
	}
	if len(rec.reqs) != 100 || changes < 8 {
		t.Fatalf("%d requests, %d memory changes; want 100 requests and a change every 6 turns", len(rec.reqs), changes)
	}
}

// cachedUnits renders the part of a request up to its last breakpoint as
// units (tools, system, then each message's blocks), cache marks removed,
// and returns the memories text after the breakpoint.
func cachedUnits(t *testing.T, req *wire.Request) ([]string, string) {
	var units []string
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tl := range req.Tools {
		tl.CacheControl = nil
		units = append(units, enc(tl))
	}
	for _, s := range req.System {
		s.CacheControl = nil
		units = append(units, enc(s))
	}
	mem := ""
	for mi, m := range req.Messages {
		units = append(units, "role:"+m.Role)
		afterBreakpoint := false
		for _, b := range m.Content {
			if afterBreakpoint { // only the wire-only tail follows
				if b.Type == wire.TypeText && strings.HasPrefix(b.Text, "<memories>") {
					mem = b.Text
				}
				continue
			}
			afterBreakpoint = mi == len(req.Messages)-1 && b.CacheControl != nil
			b.CacheControl = nil
			units = append(units, enc(b))
		}
	}
	return units, mem
}
