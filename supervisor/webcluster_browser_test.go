package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/web"
	"github.com/cicy-ai/cicy-agent/supervisor/web/webtest"
)

// TestWebClusterInABrowser: the page one node of a two-node cluster
// serves is the whole team's. Node a serves it, its master there; on node
// b a stand-in Claude Code worker and a shell worker. The tree names each
// pane's node; b's worker's dialog comes under needs you on a's page and
// Approve there runs the tool on b; a task dispatched from a's page to
// b's shell worker is in the ledger and, done, on the tasks page with its
// result; b's pane's page shows its live screen.
func TestWebClusterInABrowser(t *testing.T) {
	t.Parallel()
	db, env := privateClusterEnv(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(standInAsking), 0o755); err != nil {
		t.Fatal(err)
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	a := startNodeConfig(t, Config{DB: db, Node: "a", Listen: Listen{Addr: "127.0.0.1:0", Token: testClusterToken},
		Getenv: envOverlay(nil, env...), Web: Web{Addr: "127.0.0.1:0"}, WebPages: web.Pages})
	b := startNode(t, db, "b", env...)
	ctx := context.Background()

	boss := mustCreate(t, a.c, api.CreateRequest{Title: "boss", Type: "cicy", Provider: "script", Role: "master"})
	asker := mustCreate(t, b.c, api.CreateRequest{Title: "asker", Type: "claude", Backend: "tmux", Master: boss.ID})
	sh := mustCreate(t, b.c, api.CreateRequest{Title: "sh", Type: "shell", Backend: "tmux", Master: boss.ID, Command: []string{"bash", "--norc", "--noprofile"}})
	t.Cleanup(func() {
		_ = b.c.Kill(context.Background(), asker.ID)
		_ = b.c.Kill(context.Background(), sh.ID)
	})
	ps := waitPanes(t, a, "b's workers idle, seen from a", func(ps map[string]api.PaneInfo) bool {
		return ps[asker.ID].State == "idle" && ps[sh.ID].State == "idle" && ps[boss.ID].State == "idle"
	})
	link, err := a.c.WebLink(ctx, api.WebLinkRequest{})
	if err != nil {
		t.Fatal(err)
	}
	base := link.URL[:strings.Index(link.URL, "/login")]
	br := webtest.Browser(t, 1280, 900, 3*time.Minute)
	webtest.LogIn(t, br, link.URL)

	// The page's live part may be swapped while it is read: read it until
	// it says so.
	rowNamesNode := `(document.querySelector('li[data-pane="` + asker.ID + `"]') || {}).textContent || ''`
	waitFor(t, "b's worker's row on a's page to name its node", func() bool {
		return strings.Contains(webtest.Value(t, br, "b's worker in the tree", chromedp.Evaluate[string](rowNamesNode)), "@b")
	})

	if _, err := a.c.Send(ctx, asker.ID, api.SendRequest{Text: "ask"}); err != nil {
		t.Fatal(err)
	}
	webtest.Do(t, br, "b's approval under needs you on a's page", chromedp.WaitVisible(chromedp.ID("approve-"+asker.ID)))
	webtest.Do(t, br, "approve", chromedp.Click(chromedp.ID("approve-"+asker.ID)))
	waitFlash(t, br, "approve sent")
	waitFor(t, "the tool to run on b", func() bool {
		_, err := os.Stat(filepath.Join(ps[asker.ID].Workspace, "approved"))
		return err == nil
	})

	dispatchFromPage(t, br, sh.ID, "echo from-node-a")
	var last []api.TaskInfo
	waitFor(t, "the task in the ledger", func() bool {
		var err error
		last, err = b.c.Tasks(ctx, sh.ID)
		return err == nil && len(last) == 1 && last[0].Text == "echo from-node-a"
	})
	// A task crosses nodes: a generous limit under load.
	waitForSaying(t, "the task dispatched from a's page to b's worker to end done", 90*time.Second, func() bool {
		if ts, err := b.c.Tasks(ctx, sh.ID); err == nil && len(ts) == 1 {
			last = ts
		}
		return last[0].Status == "done"
	}, func() string { return fmt.Sprintf("it is %+v\nits screen:\n%s", last[0], screenOf(t, b, sh.ID)) })
	webtest.Do(t, br, "the tasks page", chromedp.Navigate(base+"/tasks"), chromedp.WaitVisible(chromedp.CSS("main")))
	if body := webtest.Value(t, br, "its text", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(body, "echo from-node-a") {
		t.Errorf("the tasks page on a does not list the task b's worker did: %q", body)
	}

	webtest.Do(t, br, "b's pane's page", chromedp.Navigate(base+"/pane/"+sh.ID), chromedp.WaitVisible(chromedp.CSS("main")))
	waitFor(t, "b's screen on a's page", func() bool {
		return strings.Contains(webtest.Value(t, br, "the screen", chromedp.Text(chromedp.CSS("main"))), "from-node-a")
	})
}

// screenOf is a pane's screen as node n reads it, for a failure's message.
func screenOf(t *testing.T, n *node, id string) string {
	t.Helper()
	sc, err := n.c.Screen(context.Background(), id, 0)
	if err != nil {
		return err.Error()
	}
	return sc.Screen
}
