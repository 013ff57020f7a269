package supervisor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/web"
	"github.com/cicy-ai/cicy-agent/supervisor/web/webtest"
)

// TestWebScreenColoursInABrowser: a pane page's screen, followed live,
// keeps its colours: what a shell prints in red after the page opened is a
// span of class fg-1 in a real Chromium (a 24-bit colour the nearest
// palette colour's, reverse video swapped), and markup in it is text that
// runs nothing.
func TestWebScreenColoursInABrowser(t *testing.T) {
	t.Parallel()
	home := Home{Root: filepath.Join(t.TempDir(), "home")}
	c, stop := serveUntil(t, home, Config{Web: Web{Addr: "127.0.0.1:0"}, WebPages: web.Pages})
	if c == nil {
		t.Fatalf("supervisor did not start: %v", stop())
	}
	ctx := context.Background()
	if _, err := c.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Kill(context.Background(), "w-1") })
	waitFor(t, "w-1 idle", func() bool { p, err := c.Get(ctx, "w-1"); return err == nil && p.State == "idle" })
	link, err := c.WebLink(ctx, api.WebLinkRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b := webtest.Browser(t, 1280, 900, 2*time.Minute)
	webtest.LogIn(t, b, link.URL)
	base := link.URL[:strings.Index(link.URL, "/login")]
	webtest.Do(t, b, "the pane's page", chromedp.Navigate(base+"/pane/w-1"), chromedp.WaitVisible(chromedp.ID("screen")))
	// The typed line does not hold the printed text whole.
	if _, err := c.Send(ctx, "w-1", api.SendRequest{Text: `t='<script>window.pwned=3</script>'; printf '\033[31;1m%s-red\033[0m \033[4%dmbg\033[0m \033[38;2;255;128;%dmrgb\033[7mrev\033[0m\n' "$t" 4 0`}); err != nil {
		t.Fatal(err)
	}
	want := "<script>window.pwned=3</script>-red"
	webtest.Do(t, b, "the red run", chromedp.Poll[chromedp.Void](
		`[...document.querySelectorAll('#screen span.fg-1.bo')].some(s => s.textContent === `+jsString(want)+`) && [...document.querySelectorAll('#screen span.bg-4')].some(s => s.textContent === 'bg') && [...document.querySelectorAll('#screen span.fg-208')].some(s => s.textContent === 'rgb') && [...document.querySelectorAll('#screen span.rf.bg-208')].some(s => s.textContent === 'rev')`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if pwned := webtest.Value(t, b, "window.pwned", chromedp.Evaluate[int](`window.pwned || 0`)); pwned != 0 {
		t.Fatalf("the screen's text ran as script (window.pwned = %d)", pwned)
	}
	if n := webtest.Value(t, b, "script elements in the screen", chromedp.Evaluate[int](`document.querySelectorAll('#screen script, #screen [style]').length`)); n != 0 {
		t.Fatalf("the screen holds %d script or styled elements", n)
	}
}

func jsString(s string) string { return strconvQuote(s) }
