package supervisor

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// startServer runs a supervisor in this process for the test and returns a
// client to it; the supervisor stops at cleanup.
func startServer(tb testing.TB) *api.Client { return startServerWith(tb, Config{}) }

// startServerWith is startServer with cfg's settings (home, version and
// log are the test's).
func startServerWith(tb testing.TB, cfg Config) *api.Client {
	tb.Helper()
	c, stop := serveUntil(tb, Home{Root: filepath.Join(tb.TempDir(), "home")}, cfg)
	if c == nil {
		tb.Fatalf("supervisor did not start: %v", stop())
	}
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	return c
}

func hasScreenLine(screen, line string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// BenchmarkSendToScreen measures the latency from `send` of an echo to the
// echoed line being visible through `screen`, both over the socket.
func BenchmarkSendToScreen(b *testing.B) {
	c := startServer(b)
	ctx := context.Background()
	p, err := c.Create(ctx, api.CreateRequest{Title: "bench", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		b.Fatal(err)
	}
	// Wait for the prompt.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if pi, _ := c.Get(ctx, p.ID); pi.State == "idle" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("pane never idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok := fmt.Sprintf("t%d-%d", time.Now().UnixNano(), i)
		start := time.Now()
		if _, err := c.Send(ctx, p.ID, api.SendRequest{Text: "echo " + tok}); err != nil {
			b.Fatal(err)
		}
		for {
			sc, err := c.Screen(ctx, p.ID, 5)
			if err != nil {
				b.Fatal(err)
			}
			if hasScreenLine(sc.Screen, tok) {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("token %s never showed", tok)
			}
		}
		lat = append(lat, time.Since(start))
		if i%50 == 49 {
			_, _ = c.Send(ctx, p.ID, api.SendRequest{Keys: []string{"C-l"}, NoEnter: true})
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
