package web

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	_ "github.com/cicy-ai/cicy-agent/supervisor/cliagent" // the pane types: claude is a CLI agent
	"github.com/cicy-ai/cicy-agent/topology"
)

const xss = `<script>alert(1)</script>`

// styledScreen is a screen with colours as the API gives it (styled=1).
var styledScreen = [][]api.StyledRun{
	{{Text: "Run this command?", FG: "1", Bold: true}},
	{{Text: xss, FG: "#ff8000", BG: "4", Reverse: true}, {Text: " after"}},
	{},
	{{Text: "❯ 1. Yes", Italic: true, Underline: true}, {Text: " rev", Reverse: true}},
}

// fakeAPI serves canned documents in the API's own types, as the
// supervisor's API would, every text carrying an XSS attempt.
func fakeAPI(t *testing.T) http.Handler {
	t.Helper()
	master := "w-1"
	cost := 0.42
	now := time.Now().Add(-time.Minute)
	ended := now.Add(30 * time.Second)
	panes := []api.PaneInfo{
		{ID: "w-1", Title: "lead " + xss, Type: "cicy", Role: "master", State: "idle", Since: now, CostUSD: &cost},
		{ID: "w-2", Title: "claude " + xss, Type: "claude", Role: "worker", Master: &master, State: "waiting",
			Reason: "permission: Bash " + xss, Since: now, Usage: api.Usage{InputTokens: 1200, OutputTokens: 300},
			Worktree: &api.WorktreeInfo{Pane: "w-2", Branch: "cicy/w-2", Target: "main", Ahead: 1, Files: 1, Added: 3, Deleted: 1}},
		{ID: "w-3", Title: "busy one", Type: "cicy", Role: "worker", Master: &master, State: "busy", Since: now},
	}
	status := topology.Status{
		Masters: []topology.Master{{ID: "w-1", Title: panes[0].Title, Type: "cicy", State: "idle", Workers: []topology.Worker{
			{ID: "w-3", Title: "busy one", Type: "cicy", State: "busy", Tokens: 10},
			{ID: "w-2", Title: panes[1].Title, Type: "claude", State: "waiting", Reason: panes[1].Reason, Tokens: 1500,
				Work: topology.Work{Branch: "cicy/w-2", Ahead: 1, Added: 3, Deleted: 1}},
		}}},
		NeedsYou: []topology.Attention{{ID: "w-2", State: "waiting", Reason: panes[1].Reason, Kind: topology.NeedWaiting}},
	}
	screen := "Run this command?\n" + xss + "\n❯ 1. Yes\n  2. Yes, and don't ask again\n  3. No, and tell Claude " + xss
	tasks := []api.TaskInfo{
		{ID: 7, From: "w-1", To: "w-2", Text: "fix " + xss, Status: "done", Result: "result " + xss, CreatedAt: now,
			FinishedAt: &ended, Source: "hook", Work: &api.Work{Branch: "cicy/w-2", Base: "aaa", Head: "bbb", Commits: 1, Files: 1, Added: 3, Deleted: 1}},
		{ID: 8, From: "w-1", To: "w-3", Text: "other", Status: "failed", Error: "error " + xss, CreatedAt: now},
	}
	diff := "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,4 @@\n ctx\n-old " + xss + "\n+new " + xss + "\n"
	mux := http.NewServeMux()
	send := func(path string, v any) {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		})
	}
	send("/api/status", status)
	send("/api/panes", panes)
	for _, p := range panes {
		send("/api/panes/"+p.ID, p)
		sc := api.ScreenResponse{ID: p.ID, State: p.State, Screen: screen, Styled: styledScreen}
		if p.State == "waiting" { // the dialog as the agent's registry entry reads it
			sc.Dialog = &api.Dialog{Kind: "approval", Text: "Run this command? " + xss, Options: []string{"Yes", "Yes, and don't ask again", "No, and tell Claude " + xss}}
		}
		send("/api/panes/"+p.ID+"/screen", sc)
		send("/api/budgets/"+p.ID, api.Budget{Scope: "pane", Name: p.ID})
	}
	mux.HandleFunc("GET /api/tasks", func(w http.ResponseWriter, r *http.Request) {
		var out []api.TaskInfo
		for _, tk := range tasks {
			if p := r.URL.Query().Get("pane"); p == "" || tk.To == p || tk.From == p {
				out = append(out, tk)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	send("/api/usage", api.UsageReport{By: "model", Groups: []api.UsageGroup{{Key: "model " + xss}}})
	send("/api/diff", api.DiffResult{Work: *tasks[0].Work, Diff: diff})
	send("/api/memory/templates/agent/w-1", api.GuidanceDoc{Scope: "agent", Name: "w-1", Filename: "AGENTS.md", Content: "role " + xss + "</textarea>", Exists: true})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(api.Error{Kind: api.KindNotFound, Message: "no such thing: " + r.URL.Path})
	})
	return mux
}

func serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Pages(fakeAPI(t), func(*http.Request) string { return "tok-" + xss }))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, http.Header, string) {
	t.Helper()
	res, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return res.StatusCode, res.Header, string(b)
}

var pagePaths = []string{"/", "/pane/w-2", "/pane/w-1", "/tasks", "/tasks?pane=w-2", "/?part=live", "/pane/w-2?part=live", "/tasks?part=diff&target=7"}

// TestPagesEscapeEveryText: a title, a reason, a screen, a task's text,
// result and error, a diff and a role file holding a script appear
// escaped, never as HTML.
func TestPagesEscapeEveryText(t *testing.T) {
	t.Parallel()
	srv := serve(t)
	for _, path := range pagePaths {
		code, h, body := get(t, srv, path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, code, body)
			continue
		}
		if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: content type %q", path, ct)
		}
		if strings.Contains(body, "alert(1)</script>") || strings.Contains(body, "<script>alert") {
			t.Errorf("GET %s: the script is in the page unescaped:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("GET %s: the escaped text is missing:\n%s", path, body)
		}
	}
	_, _, pane := get(t, srv, "/pane/w-1")
	if !strings.Contains(pane, "&lt;/textarea&gt;</textarea>") || strings.Count(pane, "</textarea>") != strings.Count(pane, "<textarea") {
		t.Errorf("a role file's </textarea> closed its box:\n%s", pane)
	}
}

// TestPagesCarryTheCSRFToken: every page has the cicy-csrf meta with the
// session's token (escaped in its attribute).
func TestPagesCarryTheCSRFToken(t *testing.T) {
	t.Parallel()
	srv := serve(t)
	for _, path := range []string{"/", "/pane/w-2", "/tasks"} {
		_, h, body := get(t, srv, path)
		if !strings.Contains(body, `<meta name="cicy-csrf" content="tok-&lt;script&gt;alert(1)&lt;/script&gt;">`) {
			t.Errorf("GET %s: no csrf meta with the token:\n%s", path, body)
		}
		if h.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, h.Get("Cache-Control"))
		}
	}
}

// TestTeamPageNeedsYouFirst: what needs you comes before the team, with
// its reason, its screen, its approve/deny buttons and the dialog's
// options the screen's dialog has.
func TestTeamPageNeedsYouFirst(t *testing.T) {
	t.Parallel()
	srv := serve(t)
	_, _, body := get(t, srv, "/")
	needs, team := strings.Index(body, `id="needs-you"`), strings.Index(body, `data-test="team"`)
	if needs < 0 || team < 0 || needs > team {
		t.Fatalf("needs-you (at %d) is not before the team (at %d):\n%s", needs, team, body)
	}
	item := body[needs:team]
	for _, want := range []string{
		`id="need-w-2"`, `permission: Bash &lt;script&gt;`, `data-test="need-screen"`, `Run this command?`,
		`id="approve-w-2"`, `data-action="approve"`, `id="deny-w-2"`, `data-action="deny"`,
		`data-action="option:1"`, `data-action="option:3"`, `3. No, and tell Claude &lt;script&gt;`,
	} {
		if !strings.Contains(item, want) {
			t.Errorf("the needs-you item lacks %q:\n%s", want, item)
		}
	}
	if strings.Contains(item, `data-action="option:4"`) {
		t.Errorf("an option the dialog has not is offered:\n%s", item)
	}
	tree := body[team:]
	for _, want := range []string{`data-pane="w-1"`, `data-pane="w-3"`, `cicy/w-2`, `1↑ &#43;3 −1`, `$0.42`, `1.5k tok`} {
		if !strings.Contains(tree, want) {
			t.Errorf("the team tree lacks %q", want)
		}
	}
	if !strings.Contains(body, `id="dispatch-form"`) || !strings.Contains(body, `<option value="w-2">`) {
		t.Errorf("no dispatch form with the workers to choose from")
	}
}

// TestPanePageShowsItsScreenTasksAndActions.
func TestPanePageShowsItsScreenTasksAndActions(t *testing.T) {
	t.Parallel()
	srv := serve(t)
	_, _, body := get(t, srv, "/pane/w-2")
	for _, want := range []string{
		`<pre id="screen"`, `data-test="pane-screen"`, `Run this command?`, `id="approve-w-2"`,
		`id="send-form"`, `data-act="merge"`, `data-confirm="Merge cicy/w-2 into main?"`, `data-act="kill"`,
		`data-act="sendback"`, `id="budget-form"`, `#7`, `data-diff="7"`, `model &lt;script&gt;`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the pane page lacks %q", want)
		}
	}
	if code, _, _ := get(t, srv, "/pane/w-9"); code != http.StatusNotFound {
		t.Errorf("a pane that does not exist: %d, want 404", code)
	}
	if code, _, _ := get(t, srv, "/pane/nope"); code != http.StatusBadRequest {
		t.Errorf("a pane id that is not one: %d, want 400", code)
	}
	_, _, lead := get(t, srv, "/pane/w-1")
	if !strings.Contains(lead, `id="role-form"`) || !strings.Contains(lead, "role &lt;script&gt;") {
		t.Errorf("the cicy pane's role file is not editable:\n%s", lead)
	}
}

// TestTaskListShowsResultsErrorsAndDiffs: results and errors, and a task's
// diff with its added and deleted lines highlighted (html/template writes
// a + as &#43;).
func TestTaskListShowsResultsErrorsAndDiffs(t *testing.T) {
	t.Parallel()
	srv := serve(t)
	_, _, body := get(t, srv, "/tasks")
	for _, want := range []string{`id="task-7"`, `result &lt;script&gt;`, `error &lt;script&gt;`, `data-diff="7"`, `1 file &#43;3 −1`} {
		if !strings.Contains(body, want) {
			t.Errorf("the task list lacks %q", want)
		}
	}
	if strings.Index(body, `id="task-8"`) > strings.Index(body, `id="task-7"`) {
		t.Errorf("the task list is not newest first")
	}
	_, _, one := get(t, srv, "/tasks?pane=w-3")
	if strings.Contains(one, `id="task-7"`) || !strings.Contains(one, `id="task-8"`) {
		t.Errorf("?pane=w-3 does not keep w-3's tasks only")
	}
	_, _, diff := get(t, srv, "/tasks?part=diff&target=7")
	for _, want := range []string{`<span class="d-add">&#43;new &lt;script&gt;`, `<span class="d-del">-old &lt;script&gt;`, `<span class="d-hunk">@@`, `<span class="d-file">diff --git`} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff lacks %q:\n%s", want, diff)
		}
	}
}

// TestAssetsServedWithTheirType: every embedded asset is served with its
// content type, and the page links each one that exists.
func TestAssetsServedWithTheirType(t *testing.T) {
	t.Parallel()
	srv := serve(t)
	want := map[string]string{"page.css": "text/css; charset=utf-8", "page.js": "text/javascript; charset=utf-8", "icon.svg": "image/svg+xml"}
	entries, err := fs.ReadDir(assets, staticDir)
	if err != nil {
		t.Fatal(err)
	}
	_, _, page := get(t, srv, "/")
	for _, e := range entries {
		ct, ok := want[e.Name()]
		if !ok {
			t.Errorf("asset %s has no expected content type in this test", e.Name())
			continue
		}
		code, h, _ := get(t, srv, "/static/"+e.Name())
		if code != http.StatusOK || h.Get("Content-Type") != ct || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("/static/%s: %d %q nosniff=%q, want 200 %q", e.Name(), code, h.Get("Content-Type"), h.Get("X-Content-Type-Options"), ct)
		}
		if !strings.Contains(page, "/static/"+e.Name()+"?v="+assetVersion) {
			t.Errorf("the page does not link %s", e.Name())
		}
	}
	for _, bad := range []string{"/static/", "/static/nope.js", "/static/../page.go", "/static/%2e%2e/page.go"} {
		if code, _, _ := get(t, srv, bad); code != http.StatusNotFound && code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 404", bad, code)
		}
	}
}

// TestPageBytesUnder150KB: the page's own bytes (assets and a team page
// without screens) stay under 150 KB uncompressed.
func TestPageBytesUnder150KB(t *testing.T) {
	t.Parallel()
	total := 0
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, path)
		total += len(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, team := get(t, serve(t), "/")
	if total+len(team) >= 150*1024 {
		t.Errorf("the page's assets are %d bytes and its team page %d, over 150 KB", total, len(team))
	}
	t.Logf("assets: %d bytes, the test's team page %d", total, len(team))
}

// inlinePatterns find code a page could run or style without a file: a
// script element (allowed only with src), a style element or attribute,
// an event handler attribute, a javascript: URL.
var inlinePatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)<script(\s[^>]*)?>`),
	regexp.MustCompile(`(?i)<style`),
	regexp.MustCompile(`(?i)\sstyle\s*=`),
	regexp.MustCompile(`(?i)\son[a-z]+\s*=`),
	regexp.MustCompile(`(?i)javascript:`),
}

// inlineCode lists the inline code in text.
func inlineCode(text string) []string {
	var out []string
	for i, re := range inlinePatterns {
		for _, m := range re.FindAllString(text, -1) {
			if i == 0 && strings.Contains(m, ` src="`) {
				continue
			}
			out = append(out, m)
		}
	}
	return out
}

// TestTemplatesHaveNoInlineCode: no inline script, style, event handler
// attribute or javascript: URL in any template, nor in a rendered page
// (the CSP forbids them); the script evaluates no string.
func TestTemplatesHaveNoInlineCode(t *testing.T) {
	t.Parallel()
	entries, err := fs.ReadDir(assets, "assets/templates")
	if err != nil || len(entries) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(assets, "assets/templates/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if found := inlineCode(string(b)); len(found) > 0 {
			t.Errorf("%s has inline code: %q", e.Name(), found)
		}
	}
	srv := serve(t)
	for _, path := range pagePaths {
		_, _, body := get(t, srv, path)
		if found := inlineCode(body); len(found) > 0 {
			t.Errorf("GET %s has inline code: %q", path, found)
		}
	}
	js, err := fs.ReadFile(assets, staticDir+"/page.js")
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`\beval\s*\(|new Function|setTimeout\(\s*['"]`).Match(js) {
		t.Errorf("page.js evaluates strings as code")
	}
}

func TestInlineCodeIsCaught(t *testing.T) {
	t.Parallel()
	for _, text := range []string{`<script>x()</script>`, `<p style="color:red">`, `<a onclick="x()">`, `<style>p{}</style>`, `<a href="javascript:x()">`} {
		if len(inlineCode(text)) == 0 {
			t.Errorf("%q is not caught", text)
		}
	}
	if found := inlineCode(`<script src="/static/page.js?v=1" defer></script>`); len(found) > 0 {
		t.Errorf("a script with src is caught: %q", found)
	}
}

// TestTeamPageNamesNodesOnlyInACluster: a team on one machine shows no
// node names; one on two nodes shows each pane's.
func TestTeamPageNamesNodesOnlyInACluster(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nodes []string
		want  bool
	}{{[]string{"vm", "vm"}, false}, {[]string{"a", "b"}, true}} {
		st := topology.Status{Masters: []topology.Master{{ID: "w-1", Title: "lead", Type: "cicy", State: "idle", Node: tc.nodes[0],
			Workers: []topology.Worker{{ID: "w-2", Title: "w", Type: "shell", State: "idle", Node: tc.nodes[1]}}}},
			NeedsYou: []topology.Attention{{ID: "w-2", State: "error", Kind: topology.NeedError, Reason: "x", Node: tc.nodes[1]}}}
		panes := []api.PaneInfo{{ID: "w-1", Title: "lead", Type: "cicy", Node: tc.nodes[0]}, {ID: "w-2", Title: "w", Type: "shell", Node: tc.nodes[1]}}
		mux := http.NewServeMux()
		for path, v := range map[string]any{"/api/status": st, "/api/panes": panes, "/api/panes/w-2/screen": api.ScreenResponse{ID: "w-2"}} {
			mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(v) })
		}
		srv := httptest.NewServer(Pages(mux, func(*http.Request) string { return "tok" }))
		_, _, body := get(t, srv, "/")
		srv.Close()
		if got := strings.Contains(body, `class="node">@`); got != tc.want {
			t.Errorf("nodes %v: node names shown = %v, want %v", tc.nodes, got, tc.want)
		}
	}
}

// TestBigTeamPageTrimmed: the team page of 1,000 panes shows its first
// 200 workers (every need above them) in under 150 KB, and says how many
// more there are; ?all=1 shows every one.
func TestBigTeamPageTrimmed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Pages(bigTeamAPI(), func(*http.Request) string { return "tok" }))
	t.Cleanup(srv.Close)
	_, _, body := get(t, srv, "/")
	if len(body) >= 150<<10 {
		t.Errorf("the team page of 1,000 panes is %d KB", len(body)>>10)
	}
	if !strings.Contains(body, `data-test="hidden">790 more workers not shown`) || strings.Count(body, `data-test="worker"`) != 200 {
		t.Errorf("the big team's tree: %d worker rows, hidden note %v", strings.Count(body, `data-test="worker"`), strings.Contains(body, `data-test="hidden"`))
	}
	if strings.Count(body, `data-test="need"`) != 20 {
		t.Errorf("%d needs shown, want all 20", strings.Count(body, `data-test="need"`))
	}
	_, _, all := get(t, srv, "/?all=1")
	if strings.Contains(all, `data-test="hidden"`) || strings.Count(all, `data-test="worker"`) != 990 {
		t.Errorf("?all=1 shows %d worker rows, want 990", strings.Count(all, `data-test="worker"`))
	}
}
