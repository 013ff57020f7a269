// Package webtest drives the web page in a real headless Chromium, for
// tests only (never imported by the product): the browser found, a tab
// of its own profile, actions that fail the test.
package webtest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is the headless browser's program: $CICY_CHROMIUM, else one on
// PATH. Without one the test is skipped, unless CICY_REQUIRE_BROWSER is
// set (CI sets it: a missing browser fails there).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CICY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CICY_REQUIRE_BROWSER") != "" {
		t.Fatal("no Chromium found (install Debian's chromium, or set CICY_CHROMIUM)")
	}
	t.Skip("no Chromium found (install Debian's chromium, or set CICY_CHROMIUM)")
	return ""
}

// Browser is a headless Chromium tab of its own profile, w×h, ended with
// the test; its actions time out after limit.
func Browser(t testing.TB, w, h int, limit time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Chromium(t)), chromedp.NoSandbox, chromedp.WindowSize(w, h),
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // the browser starts, for as long as ctx
		t.Fatalf("start Chromium: %v", err)
	}
	ctx, cancelRun := context.WithTimeout(ctx, limit)
	t.Cleanup(cancelRun)
	return ctx
}

// Do runs browser actions, failing the test on an error.
func Do(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Value runs one browser action that returns a value.
func Value[T any](t testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// LogIn opens the login link and waits for the team page, live.
func LogIn(t testing.TB, ctx context.Context, link string) {
	t.Helper()
	Do(t, ctx, "log in", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("needs-you")), chromedp.WaitVisible(chromedp.CSS("#conn.on")))
}
