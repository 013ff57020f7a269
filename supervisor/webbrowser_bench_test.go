package supervisor

import (
	"context"
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
	c, link, _ := webTeam(b)
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
// its permission dialog (from the text that makes it draw one being
// typed) until the team page in a real headless Chromium shows its
// Approve button under needs you; each round denies it from the page.
func BenchmarkWebDialogToButtons(b *testing.B) {
	c, link, _ := webTeam(b)
	ctx := webtest.Browser(b, 1280, 900, 10*time.Minute)
	webtest.LogIn(b, ctx, link)
	const shown = `!!document.getElementById('approve-w-1')`
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		sent := make(chan error, 1)
		go func() { _, err := c.Send(context.Background(), "w-1", api.SendRequest{Text: "ask"}); sent <- err }()
		for !webtest.Value(b, ctx, "the button", chromedp.Evaluate[bool](shown)) {
			if time.Since(start) > 30*time.Second {
				b.Fatal("the page never showed the approval")
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
		if err := <-sent; err != nil {
			b.Fatal(err)
		}
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
