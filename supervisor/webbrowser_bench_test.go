package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/web/webtest"
)

// BenchmarkWebEventToPage measures a pane's change (a CLI agent's hook
// that makes it waiting, then idle) until the team page in a real
// headless Chromium shows its new state: the event stream, the page's
// fetch of its live part, the swap.
func BenchmarkWebEventToPage(b *testing.B) {
	c, link, _ := webTeam(b, standInAsking)
	ctx := webtest.Browser(b, 1280, 900, 10*time.Minute)
	webtest.LogIn(b, ctx, link)
	const badge = `(document.querySelector('li[data-pane="w-1"] .state') || {}).textContent || ''`
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		event, want := "PermissionRequest", "waiting"
		if i%2 == 1 {
			event, want = "Stop", "idle"
		}
		start := time.Now()
		if _, err := c.Hook(context.Background(), "w-1", api.HookRequest{Agent: "claude", Event: event, Payload: []byte(`{}`)}); err != nil {
			b.Fatal(err)
		}
		for {
			got := webtest.Value(b, ctx, "the badge", chromedp.Evaluate[string](badge))
			if strings.TrimSpace(got) == want {
				break
			}
			if time.Since(start) > 30*time.Second {
				b.Fatalf("the page never showed w-1 %s (it shows %q)", want, got)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	report(b, "event-to-page", lat)
}

// BenchmarkWebDialogToButtons measures a stand-in Claude Code drawing
// its permission dialog until the team page in a real headless Chromium
// shows its Approve button under needs you. The stand-in thinks for
// 1.0–1.9 s first (as a model does: the dialog comes a while after the
// typed line, at no fixed phase of the supervisor's looks) and records the moment it drew the dialog; the latency is
// from that moment. The screen alone tells: the stand-in runs no hook.
// Each round denies the tool from the page.
func BenchmarkWebDialogToButtons(b *testing.B) {
	script := standInDialogAfter(`printf '\033[2J\033[H✻ Thinking… (esc to interrupt)\n'; sleep 1.$((RANDOM % 10))`,
		`date +%s%N > drawn.tmp && mv drawn.tmp drawn`, askingDialog, askingKeys)
	c, link, ws := webTeam(b, script)
	ctx := webtest.Browser(b, 1280, 900, 10*time.Minute)
	webtest.LogIn(b, ctx, link)
	const shown = `!!document.getElementById('approve-w-1')`
	drawn := filepath.Join(ws, "drawn")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = os.Remove(drawn)
		start := time.Now()
		if _, err := c.Send(context.Background(), "w-1", api.SendRequest{Text: "ask"}); err != nil {
			b.Fatal(err)
		}
		for !webtest.Value(b, ctx, "the button", chromedp.Evaluate[bool](shown)) {
			if time.Since(start) > 30*time.Second {
				b.Fatal("the page never showed the approval")
			}
			time.Sleep(2 * time.Millisecond)
		}
		seen := time.Now()
		lat = append(lat, seen.Sub(drawnAt(b, drawn)))
		webtest.Do(b, ctx, "deny", chromedp.Click(chromedp.ID("deny-w-1")))
		// The next round is a new wait: the pane idle again, the page too.
		waitFor(b, "w-1 idle", func() bool { p, err := c.Get(context.Background(), "w-1"); return err == nil && p.State == "idle" })
		for webtest.Value(b, ctx, "the button gone", chromedp.Evaluate[bool](shown)) {
			if time.Since(start) > time.Minute {
				b.Fatal("the approval stayed on the page after Deny")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	b.StopTimer()
	report(b, "dialog-to-buttons", lat)
}

// drawnAt is the moment the stand-in recorded in path (nanoseconds since
// the epoch).
func drawnAt(b *testing.B, path string) time.Time {
	b.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("the stand-in recorded no dialog drawn: %v", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		b.Fatalf("the stand-in's record %q: %v", raw, err)
	}
	return time.Unix(0, ns)
}
