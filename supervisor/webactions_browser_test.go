package supervisor

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/web"
	"github.com/cicy-ai/cicy-agent/supervisor/web/webtest"
)

// TestWebActionsInABrowser: the page's other actions, each through the
// API the CLI uses, in a real Chromium. A question's option picked from
// the team page reaches the CLI as its keys; an answer to a dialog that
// is gone is refused with why; a line sent to a cicy pane is its turn;
// a budget set (and a bad one refused, nothing changed); the role file
// edited; a stopped worker restarted; Kill asks once more.
func TestWebActionsInABrowser(t *testing.T) {
	t.Parallel()
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(benchRules), 0o644); err != nil {
		t.Fatal(err)
	}
	s, h := newStandInSupervisor(t, envOverlay(os.Getenv, "HOME="+t.TempDir(), "CICY_SCRIPT="+rules), standInQuestion)
	ctx := context.Background()
	for _, req := range []api.CreateRequest{
		{Title: "asker", Type: "claude", Backend: "tmux"},
		{Title: "lead", Type: "cicy", Provider: "script"},
		{Title: "sh", Type: "shell", Backend: "tmux", Command: []string{"bash", "--norc", "--noprofile"}},
	} {
		if _, err := s.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"w-1", "w-2", "w-3"} {
		waitPane(t, s, id, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	}
	srv, err := web.New(web.Config{API: h, Pages: web.Pages, Home: s.cfg.Home.Root})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	b := webtest.Browser(t, 1280, 900, 3*time.Minute)
	webtest.LogIn(t, b, ts.URL+"/login?t="+srv.NewLink(0))

	webPicksAnOption(t, s, b)
	webSendsAndSets(t, s, b, ts.URL+"/pane/w-2")
	webRestartsAndKills(t, s, b, ts.URL+"/pane/w-3")
}

// webPicksAnOption: w-1's question under needs you, option 2 pressed; a
// second answer once the dialog is gone is refused with why.
func webPicksAnOption(t *testing.T, s *Supervisor, b context.Context) {
	t.Helper()
	p, _ := s.Get("w-1")
	if _, err := s.Send(context.Background(), "w-1", api.SendRequest{Text: "ask"}); err != nil {
		t.Fatal(err)
	}
	opt := chromedp.CSS(`#need-w-1 [data-test="option-2"]`)
	webtest.Do(t, b, "the question's options under needs you", chromedp.WaitVisible(opt))
	webtest.Do(t, b, "option 2", chromedp.Click(opt))
	waitFor(t, "the option picked", func() bool {
		got, err := os.ReadFile(filepath.Join(p.Workspace, "picked"))
		return err == nil && string(got) == "2"
	})
	// The answer is recorded once its keys are typed: the stand-in may
	// read them first.
	var as []api.Answer
	waitFor(t, "the answer recorded", func() bool { as = s.notify.Answers(context.Background(), "w-1", 0); return len(as) > 0 })
	if len(as) != 1 || as[0].Via != api.ViaWeb || !strings.HasPrefix(as[0].By, "browser ") || as[0].Action != "option:2" {
		t.Errorf("the answer from the page is recorded as %+v, want option:2 by the browser's session via web", as)
	}
	refused := webtest.Value(t, b, "an answer to the dialog gone", chromedp.Evaluate[refusal](`
		fetch('/api/panes/w-1/answer', {method: 'POST', credentials: 'same-origin',
			headers: {'Content-Type': 'application/json', 'X-Cicy-CSRF': document.querySelector('meta[name="cicy-csrf"]').content},
			body: JSON.stringify({action: 'approve'})}).then(async r => ({status: r.status, text: await r.text()}))`,
		chromedp.EvalAwaitPromise))
	if refused.Status < 400 || !strings.Contains(refused.Text, "no longer waits for an answer") {
		t.Errorf("an answer to a dialog that is gone: %d %s", refused.Status, refused.Text)
	}
}

// refusal is a fetch's status and body, read in the page.
type refusal struct {
	Status int    `json:"status"`
	Text   string `json:"text"`
}

// webSendsAndSets: on the cicy pane's page a line sent is its turn, a
// budget set shows, a bad one is refused and changes nothing, and the
// role file saved is the pane's.
func webSendsAndSets(t *testing.T, s *Supervisor, b context.Context, page string) {
	t.Helper()
	webtest.Do(t, b, "the cicy pane's page", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`[data-test="send-text"]`)))
	webtest.Do(t, b, "send a line",
		chromedp.SendKeys(chromedp.CSS(`[data-test="send-text"]`), "turn from-web"),
		chromedp.Click(chromedp.CSS(`[data-test="send-submit"]`)))
	waitFor(t, "the cicy pane's answer on its page", func() bool {
		return strings.Contains(webtest.Value(t, b, "the screen", chromedp.Text(chromedp.CSS(`[data-test="pane-screen"]`))), "answer from-web")
	})

	budget := chromedp.CSS(`[data-test="budget-usd"]`)
	setBudget := func(v string) string {
		webtest.Do(t, b, "budget "+v, chromedp.SetValue(budget, v), chromedp.Click(chromedp.CSS(`#budget-form button`)))
		var msg string
		waitFor(t, "the page's answer to budget "+v, func() bool {
			msg = webtest.Value(t, b, "the flash", chromedp.Text(chromedp.ID("flash")))
			return strings.Contains(msg, "budget")
		})
		webtest.Do(t, b, "clear the flash", chromedp.Evaluate[chromedp.Void](`document.getElementById('flash').textContent = ''`))
		return msg
	}
	if msg := setBudget("2.50"); !strings.Contains(msg, "set to $2.5") {
		t.Errorf("budget 2.50 from the page: %q", msg)
	}
	if msg := setBudget("-1"); !strings.Contains(msg, "above 0") {
		t.Errorf("budget -1 from the page: %q", msg)
	}
	if got, err := s.spend.Budget("w-2"); err != nil || got.BudgetUSD == nil || *got.BudgetUSD != 2.5 {
		t.Errorf("w-2's budget after 2.50 then -1 from the page: %+v %v", got, err)
	}

	role := "You are the lead, as edited on the web page.\n"
	webtest.Do(t, b, "edit the role",
		chromedp.SetValue(chromedp.CSS(`[data-test="role-content"]`), role),
		chromedp.Click(chromedp.CSS(`#role-form button`)))
	waitFor(t, "the role saved", func() bool {
		g, err := s.cicyPanes.Guidance("w-2")
		return err == nil && g.Content == role
	})
}

// webRestartsAndKills: the shell worker, told exit from its page, is
// stopped; Restart brings it back; Kill asks once more.
func webRestartsAndKills(t *testing.T, s *Supervisor, b context.Context, page string) {
	t.Helper()
	webtest.Do(t, b, "the shell's page", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`[data-test="send-text"]`)))
	webtest.Do(t, b, "send exit",
		chromedp.SendKeys(chromedp.CSS(`[data-test="send-text"]`), "exit 3"),
		chromedp.Click(chromedp.CSS(`[data-test="send-submit"]`)))
	waitPane(t, s, "w-3", "stopped", func(st pane.Status) bool { return !st.Running() })
	restart := chromedp.CSS(`#live button[data-act="restart"]`)
	webtest.Do(t, b, "Restart under the stopped pane", chromedp.WaitVisible(restart), chromedp.Click(restart))
	waitPane(t, s, "w-3", "running again", func(st pane.Status) bool { return st.Running() })

	kill := chromedp.CSS(`[data-test="kill"]`)
	webtest.Do(t, b, "kill, asked once more", chromedp.Click(kill))
	if label := webtest.Value(t, b, "its label", chromedp.Text(kill)); !strings.Contains(label, "Tap again") {
		t.Errorf("Kill's first tap: the button says %q", label)
	}
	if _, err := s.Get("w-3"); err != nil {
		t.Fatalf("one tap of Kill killed the pane: %v", err)
	}
	webtest.Do(t, b, "kill, confirmed", chromedp.Click(kill))
	waitFor(t, "w-3 gone", func() bool { _, err := s.Get("w-3"); return err != nil })
}
