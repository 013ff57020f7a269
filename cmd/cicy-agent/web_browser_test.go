package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/web/webtest"
)

// TestWebApprovesRealClaude: a real Claude Code worker (against the fake
// model server) stops at its permission prompt for a shell command; the
// team page in a real headless Chromium, logged in by 'cicy-agent web
// --url', shows it under needs you with the command; Approve runs it and
// the task is done; explain shows the answer from the web.
func TestWebApprovesRealClaude(t *testing.T) {
	t.Parallel()
	if !haveCLIs() {
		t.Skip("the real CLI agents are not installed (make clis)")
	}
	webtest.Chromium(t)
	home := filepath.Join(t.TempDir(), "home")
	env := append(os.Environ(), "CICY_HOME="+home,
		"PATH="+cliDir+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+fakeURL, "ANTHROPIC_API_KEY=sk-ant-cicy-test-key-0123456789")
	t.Cleanup(func() { stopHome(home, env) })
	id := strings.TrimSpace(runCicy(t, env, "create", "careful", "--type", "claude", "--backend", "tmux"))
	waitPaneState(t, env, id, "idle", 180*time.Second)
	var link api.WebLink
	if err := json.Unmarshal([]byte(runCicy(t, env, "web", "--url", "--json")), &link); err != nil {
		t.Fatal(err)
	}
	ctx := webtest.Browser(t, 1280, 900, 5*time.Minute)
	webtest.LogIn(t, ctx, link.URL)

	runCicy(t, env, "dispatch", "--to", id, "make the file [[shell=echo x > asked.txt]]")
	webtest.Do(t, ctx, "the approval under needs you", chromedp.WaitVisible(chromedp.ID("approve-"+id)))
	if need := webtest.Value(t, ctx, "the need", chromedp.Text(chromedp.ID("need-"+id))); !strings.Contains(need, "echo x > asked.txt") {
		t.Errorf("the need does not show the command: %q", need)
	}
	webtest.Do(t, ctx, "approve", chromedp.Click(chromedp.ID("approve-"+id)))
	asked := filepath.Join(home, "workspaces", id, "asked.txt")
	waitForWithin(t, "Approve from the page to run the command", 90*time.Second, func() bool {
		_, err := os.Stat(asked)
		return err == nil
	}, func() string { return "the pane's screen:\n" + runCicy(t, env, "screen", id) })
	runCicy(t, env, "wait", "1", "--timeout", "120s")
	if x := runCicy(t, env, "explain", id); !strings.Contains(x, "answer:  approve by browser ") || !strings.Contains(x, "from the web") {
		t.Errorf("explain does not show the answer from the web:\n%s", x)
	}
}
