package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// standIn puts a program named claude on PATH for the benchmark: the
// supervisor seeds and starts it like the real one.
func standIn(b *testing.B, script string) {
	b.Helper()
	if !pane.TmuxAvailable() {
		b.Skip("needs tmux")
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		b.Fatal(err)
	}
	b.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// report gives p50, p99 and the worst of lat.
func report(b *testing.B, name string, lat []time.Duration) {
	reportPercentiles(b, name, lat)
	b.ReportMetric(ms(slices.Max(lat)), name+"-max-ms")
}

// BenchmarkHookToState measures a CLI agent's hook (as `cicy-agent hook`
// posts it, over the socket) until `ls` shows the new state, on a tmux
// pane.
func BenchmarkHookToState(b *testing.B) {
	standIn(b, "exec sleep 100000\n")
	c := startServer(b)
	ctx := context.Background()
	p, err := c.Create(ctx, api.CreateRequest{Title: "bench", Type: "claude", Backend: "tmux"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Kill(context.Background(), p.ID) })
	events := []struct{ event, state string }{{"PermissionRequest", "waiting"}, {"PostToolUse", "busy"}, {"Stop", "idle"}}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := events[i%len(events)]
		start := time.Now()
		if _, err := c.Hook(ctx, p.ID, api.HookRequest{Agent: "claude", Event: ev.event, Payload: []byte(`{}`)}); err != nil {
			b.Fatal(err)
		}
		for {
			pi, err := c.Get(ctx, p.ID)
			if err != nil {
				b.Fatal(err)
			}
			if pi.State == ev.state {
				break
			}
			if time.Since(start) > 5*time.Second {
				b.Fatalf("state %s never showed (have %s)", ev.state, pi.State)
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	report(b, "hook", lat)
}

// BenchmarkScreenFallback measures how long a CLI agent pane whose hooks
// are silent takes to be seen idle once its screen shows the idle
// prompt: the stand-in draws Claude Code's busy footer for 1.2–2.2 s (a
// random time, so the poller's phase is random too), then notes the time
// and draws the idle one.
func BenchmarkScreenFallback(b *testing.B) {
	standIn(b, `while IFS= read -r line; do
  printf '\033[2J\033[H✻ Working… (1s · ↓ 4 tokens)\n────────────────────────────────────────\n❯ \n────────────────────────────────────────\n  ⏵⏵ bypass permissions on · esc to interrupt\n'
  sleep $(awk 'BEGIN { srand(); printf "%.3f", 1.2 + rand() }')
  date +%s%N > "$CICY_HOME/idle-at.tmp"; mv "$CICY_HOME/idle-at.tmp" "$CICY_HOME/idle-at"
  printf '\033[2J\033[H● done\n────────────────────────────────────────\n❯ \n────────────────────────────────────────\n  ⏵⏵ bypass permissions on (shift+tab to cycle)\n'
done
`)
	c := startServer(b)
	ctx := context.Background()
	p, err := c.Create(ctx, api.CreateRequest{Title: "bench", Type: "claude", Backend: "tmux"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Kill(context.Background(), p.ID) })
	mark := filepath.Join(c.Home().Dir(), "idle-at")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = os.Remove(mark)
		if _, err := c.Send(ctx, p.ID, api.SendRequest{Text: "go"}); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			pi, err := c.Get(ctx, p.ID)
			if err != nil {
				b.Fatal(err)
			}
			if raw, err := os.ReadFile(mark); err == nil && pi.State == "idle" && strings.HasPrefix(pi.Reason, "screen:") {
				ns, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
				lat = append(lat, time.Since(time.Unix(0, ns)))
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("never idle by the screen (state %s, %s)", pi.State, pi.Reason)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	report(b, "fallback", lat)
}
