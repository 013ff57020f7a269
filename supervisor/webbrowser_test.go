package supervisor

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/web"
	"github.com/cicy-ai/cicy-agent/supervisor/web/webtest"
)

// The web page in a real headless Chromium (Debian's chromium; .ci/run
// installs it): log in by the link, see the team, answer a dialog, send
// a task, and the checks a browser meets.

// webTeam is a supervisor serving its page, with a stand-in claude that
// draws Claude Code's permission dialog when told "ask" (w-1) and a shell
// worker (w-2); its client and a login link.
func webTeam(t testing.TB, script string) (*api.Client, string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	getenv := envOverlay(os.Getenv, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	home := Home{Root: filepath.Join(t.TempDir(), "home")}
	c, stop := serveUntil(t, home, Config{Web: Web{Addr: "127.0.0.1:0"}, WebPages: web.Pages, Getenv: getenv})
	if c == nil {
		t.Fatalf("supervisor did not start: %v", stop())
	}
	ctx := context.Background()
	for _, req := range []api.CreateRequest{
		{Title: "asker", Type: "claude", Backend: "tmux"},
		{Title: "sh", Type: "shell", Backend: "tmux", Command: []string{"bash", "--norc", "--noprofile"}},
		{Title: xssTitle, Type: "shell", Backend: "tmux", Command: []string{"sh", "-c", "echo '<script>window.pwned=2</script>'; exec sleep 600"}},
	} {
		if _, err := c.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = c.Kill(context.Background(), "w-1")
		_ = c.Kill(context.Background(), "w-2")
		_ = c.Kill(context.Background(), "w-3")
	})
	for _, id := range []string{"w-1", "w-2"} {
		waitFor(t, id+" idle", func() bool { p, err := c.Get(ctx, id); return err == nil && p.State == "idle" })
	}
	link, err := c.WebLink(ctx, api.WebLinkRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return c, link.URL, filepath.Join(home.Root, "workspaces", "w-1")
}

// xssTitle is a pane title that would run script if a page used it as
// HTML.
const xssTitle = `<img src=x onerror="window.pwned=1">`

// TestWebPageInABrowser: the link logs the browser in once; the team page
// shows a CLI agent's approval under needs-you as its dialog appears, and
// Approve runs the tool; a task dispatched from the page is in the
// ledger; a request without the CSRF token is refused; at phone width
// nothing but a screen scrolls sideways.
func TestWebPageInABrowser(t *testing.T) {
	t.Parallel()
	c, link, ws := webTeam(t, standInAsking)
	ctx := webtest.Browser(t, 1280, 900, 3*time.Minute)
	base := link[:strings.Index(link, "/login")]
	webtest.LogIn(t, ctx, link)

	checkNoScriptRan(t, ctx, base)
	if _, err := c.Send(context.Background(), "w-1", api.SendRequest{Text: "ask"}); err != nil {
		t.Fatal(err)
	}
	webtest.Do(t, ctx, "the approval under needs you", chromedp.WaitVisible(chromedp.ID("approve-w-1")))
	shot(t, ctx, "web-desk.png")
	webtest.Do(t, ctx, "approve", chromedp.Click(chromedp.ID("approve-w-1")))
	waitFlash(t, ctx, "approve sent")
	waitFor(t, "the tool to run", func() bool { _, err := os.Stat(filepath.Join(ws, "approved")); return err == nil })

	dispatchFromPage(t, ctx, "w-2", "echo from-the-page")
	waitFor(t, "the task in the ledger", func() bool {
		ts, err := c.Tasks(context.Background(), "w-2")
		return err == nil && len(ts) == 1 && ts[0].Text == "echo from-the-page"
	})

	status := webtest.Value(t, ctx, "a POST without the CSRF token", chromedp.Evaluate[int](
		`fetch('/api/tasks', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({to: 'w-2', text: 'forged'})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if status != 403 {
		t.Errorf("a POST without the CSRF token: %d, want 403", status)
	}

	webtest.Do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("needs-you")))
	overflow := webtest.Value(t, ctx, "the page's width", chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
	if overflow > 0 {
		t.Errorf("the team page at 390×844 overflows sideways by %d px", overflow)
	}
	shot(t, ctx, "web-phone.png")

	webtest.Do(t, ctx, "the link again", chromedp.Navigate(link))
	body := webtest.Value(t, ctx, "its page", chromedp.Text(chromedp.CSS("body")))
	if !strings.Contains(strings.ToLower(body), "used") {
		t.Errorf("the link opened a second time: %q", body)
	}
}

// waitFlash waits until the page's answer to an action says what (the
// next action's answer must not be taken for it, nor it for the next's).
func waitFlash(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	var flash string
	waitForSaying(t, "the page's answer to say "+strconv.Quote(what), 30*time.Second, func() bool {
		flash = webtest.Value(t, ctx, "the flash", chromedp.Evaluate[string](`document.getElementById('flash').textContent`))
		return strings.Contains(flash, what)
	}, func() string { return fmt.Sprintf("it says %q", flash) })
}

// dispatchFromPage fills the team page's dispatch form and sends it; the
// page's answer must say the task was made.
func dispatchFromPage(t *testing.T, ctx context.Context, to, text string) {
	t.Helper()
	webtest.Do(t, ctx, "dispatch",
		chromedp.Evaluate[chromedp.Void](`document.getElementById('flash').textContent = ''`),
		chromedp.SetValue(chromedp.CSS(`[data-test="dispatch-to"]`), to),
		chromedp.SetValue(chromedp.CSS(`[data-test="dispatch-text"]`), text),
		chromedp.Click(chromedp.CSS(`[data-test="dispatch-submit"]`)))
	// The flash may still get the answer of an earlier action: wait for
	// the dispatch's own (a task made) or a refusal.
	var flash string
	waitForSaying(t, "the page's answer to the dispatch", 30*time.Second, func() bool {
		flash = webtest.Value(t, ctx, "the flash", chromedp.Evaluate[string](
			`(document.getElementById('flash').className.includes('err') ? 'refused: ' : '') + document.getElementById('flash').textContent`))
		return strings.HasPrefix(flash, "refused: ") || strings.HasPrefix(flash, "task #")
	}, func() string {
		form := webtest.Value(t, ctx, "the form", chromedp.Evaluate[string](`JSON.stringify([...new FormData(document.getElementById('dispatch-form'))])`))
		return fmt.Sprintf("its flash says %q; the form holds %s", flash, form)
	})
	if !strings.Contains(flash, "for "+to) {
		t.Fatalf("the dispatch from the page was answered %q", flash)
	}
}

// shot saves a screenshot of the page under $CICY_WEB_SCREENSHOTS (the
// docs' pictures are taken so); nothing without it.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("CICY_WEB_SCREENSHOTS")
	if dir == "" {
		return
	}
	png := webtest.Value(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// afterImageHandlers is window.pwned once every image on the page has
// loaded or failed, and the task that fires its load or error event has
// run: an image the page made of the title has had its handler run.
const afterImageHandlers = `new Promise(done => {
	const settled = () => [...document.images].every(i => i.complete);
	const check = () => settled() ? setTimeout(() => done(window.pwned || 0), 0) : setTimeout(check, 10);
	check();
})`

// checkNoScriptRan: a title and a screen holding markup show as text on
// the team page and the pane's page, and run nothing (the page's CSP
// refuses inline handlers as well: the text is the first defence).
func checkNoScriptRan(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	for _, page := range []string{base + "/", base + "/pane/w-3"} {
		webtest.Do(t, ctx, "open "+page, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`main`)))
		if pwned := webtest.Value(t, ctx, "window.pwned", chromedp.Evaluate[int](afterImageHandlers, chromedp.EvalAwaitPromise)); pwned != 0 {
			t.Fatalf("%s ran a pane's text as script (window.pwned = %d)", page, pwned)
		}
		if body := webtest.Value(t, ctx, "the page's text", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(body, xssTitle) {
			t.Errorf("%s does not show the title as text", page)
		}
	}
	webtest.Do(t, ctx, "back to the team", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("needs-you")), chromedp.WaitVisible(chromedp.CSS("#conn.on")))
}

// TestWebMergeConflictInABrowser: Merge on a worker's page asks once
// more; a merge that conflicts changes nothing and names the files.
func TestWebMergeConflictInABrowser(t *testing.T) {
	t.Parallel()
	s, h := newTestSupervisor(t, os.Getenv)
	repo := gitRepo(t)
	_, ws := worktreeTeam(t, s, repo, 2)
	runShellTask(t, s, ws[0], "echo first > a.txt")
	runShellTask(t, s, ws[1], "echo second > a.txt")
	if _, err := s.Merge(context.Background(), api.MergeRequest{Target: ws[0]}); err != nil {
		t.Fatal(err)
	}
	before := gitIn(t, repo, "rev-parse", "HEAD")
	srv, err := web.New(web.Config{API: h, Pages: web.Pages, Home: s.cfg.Home.Root})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	ctx := webtest.Browser(t, 1280, 900, 3*time.Minute)
	webtest.LogIn(t, ctx, ts.URL+"/login?t="+srv.NewLink(0))
	merge := chromedp.CSS(`[data-test="merge"]`)
	webtest.Do(t, ctx, "the worker's page", chromedp.Navigate(ts.URL+"/pane/"+ws[1]), chromedp.WaitVisible(merge))
	webtest.Do(t, ctx, "merge, asked once more", chromedp.Click(merge))
	if gitIn(t, repo, "rev-parse", "HEAD") != before {
		t.Fatal("one press merged: Merge must ask once more")
	}
	webtest.Do(t, ctx, "merge, confirmed", chromedp.Click(merge), chromedp.WaitVisible(chromedp.CSS(`#flash.err`)))
	if msg := webtest.Value(t, ctx, "the answer", chromedp.Text(chromedp.ID("flash"))); !strings.Contains(msg, "conflicts with main in a.txt") {
		t.Errorf("the conflict was told %q, want the files named", msg)
	}
	if gitIn(t, repo, "rev-parse", "HEAD") != before || gitIn(t, repo, "status", "--porcelain") != "" {
		t.Error("a conflict changed the master's checkout")
	}
}
