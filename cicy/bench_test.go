package cicy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/tools"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// realisticHistory is n messages shaped like a working session: a user
// request, then tool rounds (assistant tool_use, user tool_result of about
// 1.5 KB), then an answer.
func realisticHistory(n int) []wire.Message {
	out := make([]wire.Message, 0, n)
	for i := 0; len(out) < n; i++ {
		switch {
		case i%4 == 0:
			out = append(out, wire.Message{Role: wire.RoleUser, Content: []wire.Block{wire.Text(fmt.Sprintf("Step %d: please check the build output of module %d and fix what fails. %s", i, i, strings.Repeat("context ", 20)))}})
		case i%4 == 1:
			in, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("go build ./mod%d/... 2>&1 | head -50", i)})
			out = append(out, wire.Message{Role: wire.RoleAssistant, Content: []wire.Block{wire.Text("Let me look."), {Type: wire.TypeToolUse, ID: fmt.Sprintf("toolu_%d", i), Name: "shell", Input: in}}})
		case i%4 == 2:
			out = append(out, wire.Message{Role: wire.RoleUser, Content: []wire.Block{wire.ToolResult(fmt.Sprintf("toolu_%d", i-1), strings.Repeat("mod/file.go:12:3: undefined: frobnicate\n", 36), false)}})
		default:
			out = append(out, wire.Message{Role: wire.RoleAssistant, Content: []wire.Block{wire.Text(strings.Repeat("The build fails because frobnicate is gone; I replaced it. ", 8))}})
		}
	}
	return out
}

// BenchmarkRoundOverhead is the local work of one round, network excluded:
// assembling the request, encoding it, and putting the round's two new
// messages on disk (the history journal) and reply.json, each with its
// fsync — what a turn does every round.
func BenchmarkRoundOverhead(b *testing.B) {
	for _, n := range []int{10, 300, 600} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			hist := realisticHistory(n)
			w := historyWriter{dir: b.TempDir(), agentID: "w-1", convID: "conv"}
			if err := w.save(hist[:n-2], time.Now()); err != nil {
				b.Fatal(err)
			}
			tl := []wire.Tool{tools.ShellDef(), tools.SkillDef()}
			reply := Reply{TurnID: "t1", Status: TurnWorking, ToolCalls: []ToolCall{{Name: "shell", Input: json.RawMessage(`{"command":"ls"}`), Result: strings.Repeat("x", 1500)}}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The round's two new messages, encoded and appended anew.
				w.enc, w.written = w.enc[:n-2], n-2
				if err := os.Truncate(filepath.Join(w.dir, journalName), 0); err != nil && !os.IsNotExist(err) {
					b.Fatal(err)
				}
				req := Assemble(Prompt{Model: "m", MaxTokens: 8192, PaneID: "w-1", TurnID: "t1", System: "You are a helpful assistant.",
					Tools: tl, Role: "# Role\nYou are w-1.", Memories: "- [fact★3] x: y", History: hist, Encoded: w.enc})
				if _, err := req.Body(); err != nil {
					b.Fatal(err)
				}
				if err := w.appendRound(hist, time.Now()); err != nil {
					b.Fatal(err)
				}
				if err := writeJSONAtomic(filepath.Join(w.dir, "reply.json"), reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScriptedSessionCacheHit runs a 100-turn session through the
// real turn loop with the scripted model (each turn one tool round and an
// answer) and reports the cache-hit ratio: cache-read input tokens over
// all input tokens. Beside it, the physical limit for the same session:
// every request must at least pay for what it adds after the longest
// prefix it shares with the request before it.
func BenchmarkScriptedSessionCacheHit(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ratio, limit := scriptedSession(b, 100)
		b.ReportMetric(ratio, "hit-ratio")
		b.ReportMetric(limit, "limit")
	}
}

type recordingProvider struct {
	inner  *provider.Script
	bodies [][]byte
	usage  wire.Usage
}

func (r *recordingProvider) Stream(ctx context.Context, req *wire.Request, on func(wire.Event)) (*wire.Response, error) {
	resp, err := r.inner.Stream(ctx, req, on)
	if err == nil {
		r.usage.Add(resp.Usage)
		body, _ := json.Marshal(stripCache(req))
		r.bodies = append(r.bodies, body)
	}
	return resp, err
}

// stripCache renders a request without its cache marks, the way a cache
// compares bytes.
func stripCache(req *wire.Request) *wire.Request {
	c := *req
	c.System = append([]wire.Block(nil), req.System...)
	for i := range c.System {
		c.System[i].CacheControl = nil
	}
	c.Tools = append([]wire.Tool(nil), req.Tools...)
	for i := range c.Tools {
		c.Tools[i].CacheControl = nil
	}
	c.Messages = cloneMessages(req.Messages)
	return &c
}

func scriptedSession(tb testing.TB, turns int) (ratio, limit float64) {
	home, ws := tb.TempDir(), tb.TempDir()
	// A login shell reads ~/.profile; an empty HOME keeps the tool rounds
	// from timing this machine's shell start-up files.
	tb.Setenv("HOME", tb.TempDir())
	if err := SeedTemplates(home); err != nil {
		tb.Fatal(err)
	}
	rules, err := provider.ParseScript([]byte(`rules:
  - match: {tool_result: true}
    reply: {text: "The listing shows the files; step done. {{tool_result}}"}
  - match: {last_user: "."}
    reply:
      text: "Checking the workspace."
      tool_calls:
        - name: shell
          input: {command: "ls -la; echo step"}
`))
	if err != nil {
		tb.Fatal(err)
	}
	rec := &recordingProvider{inner: &provider.Script{Rules: rules, Sim: provider.NewCacheSim(nil)}}
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("# Role\n\nYou are w-1, an assistant.\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	a, err := Start(PaneConfig{ID: "w-1", Workspace: ws, RoleTemplate: "assistant"}, Env{
		Home: home, NewProvider: func(string) (Provider, error) { return rec, nil },
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer a.Close()
	for i := 0; i < turns; i++ {
		ch, err := a.Send(fmt.Sprintf("Turn %d: look at the workspace and tell me what changed since the last step.", i), "", true)
		if err != nil {
			tb.Fatal(err)
		}
		if r := <-ch; r.Status != TurnCompleted {
			tb.Fatalf("turn %d: %+v", i, r)
		}
	}
	u := rec.usage
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	var fresh int64
	for i, body := range rec.bodies {
		shared := 0
		if i > 0 {
			shared = commonPrefix(rec.bodies[i-1], body)
		}
		fresh += int64(len(body)-shared+3) / 4
	}
	var total int64
	for _, body := range rec.bodies {
		total += int64(len(body)+3) / 4
	}
	return float64(u.CacheReadInputTokens) / float64(prompt), 1 - float64(fresh)/float64(total)
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// cloneMessages copies messages and their block slices (blocks are values)
// and clears any cache_control a restored history carried.
func cloneMessages(in []wire.Message) []wire.Message {
	out := make([]wire.Message, len(in))
	for i, m := range in {
		out[i] = wire.Message{Role: m.Role, Content: make([]wire.Block, len(m.Content))}
		for j, b := range m.Content {
			b.CacheControl = nil
			out[i].Content[j] = b
		}
	}
	return out
}
