package web

import (
	"slices"
	"time"

	"encoding/json"
	"fmt"
	"github.com/chromedp/chromedp"
	"github.com/cicy-ai/cicy-agent/supervisor/web/webtest"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/topology"
)

// BenchmarkTeamPage1000Panes: the team page's server render (first paint)
// of a team of 1,000 panes, 10 masters of 99 workers, 20 of them waiting
// with their screens; reports the page's bytes.
// bigTeamAPI is an API handler of a team of 1,000 panes: 10 masters of
// 99 workers, 20 of them waiting with their screens.
func bigTeamAPI() http.Handler {
	var panes []api.PaneInfo
	var st topology.Status
	for m := range 10 {
		mid := fmt.Sprintf("w-%d", m*100+1)
		panes = append(panes, api.PaneInfo{ID: mid, Title: "master", Type: "cicy", Role: "master", State: "idle"})
		ms := topology.Master{ID: mid, Title: "master", Type: "cicy", State: "idle"}
		for w := range 99 {
			id := fmt.Sprintf("w-%d", m*100+2+w)
			state := "busy"
			if w < 2 {
				state = "waiting"
				st.NeedsYou = append(st.NeedsYou, topology.Attention{ID: id, State: state, Kind: topology.NeedWaiting, Reason: "permission: Bash"})
			}
			panes = append(panes, api.PaneInfo{ID: id, Title: "worker " + id, Type: "claude", Role: "worker", Master: &mid, State: state})
			ms.Workers = append(ms.Workers, topology.Worker{ID: id, Title: "worker " + id, Type: "claude", State: state, Tokens: 12345,
				Work: topology.Work{Branch: "cicy/" + id, Ahead: 2, Added: 40, Deleted: 3}})
		}
		st.Masters = append(st.Masters, ms)
	}
	screen := strings.Repeat("some output line of the agent's work\n", 14) + "❯ 1. Yes\n  2. No"
	mux := http.NewServeMux()
	js := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(v) }
	}
	mux.Handle("GET /api/status", js(st))
	mux.Handle("GET /api/panes", js(panes))
	mux.HandleFunc("GET /api/panes/{id}/screen", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(api.ScreenResponse{ID: r.PathValue("id"), State: "waiting", Screen: screen})
	})
	return mux
}

func BenchmarkTeamPage1000Panes(b *testing.B) {
	h := Pages(bigTeamAPI(), func(*http.Request) string { return "token" })
	size := 0
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET /: %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size)/1024, "KB/page")
}

// BenchmarkFirstPaint1000Panes: the team page of 1,000 panes opened in a
// real headless Chromium, through the web server (login, CSP): from the
// navigation's start to the document parsed with its stylesheet
// (DOMContentLoaded; the page is rendered by the server).
func BenchmarkFirstPaint1000Panes(b *testing.B) {
	srv, err := New(Config{API: bigTeamAPI(), Pages: Pages, Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	ctx := webtest.Browser(b, 1280, 900, 10*time.Minute)
	webtest.Do(b, ctx, "log in", chromedp.Navigate(ts.URL+"/login?t="+srv.NewLink(0)), chromedp.WaitVisible(chromedp.ID("needs-you")))
	var paints []time.Duration
	for i := 0; b.Loop(); i++ {
		webtest.Do(b, ctx, "open the team", chromedp.Navigate(fmt.Sprintf("%s/?n=%d", ts.URL, i)), chromedp.WaitVisible(chromedp.ID("needs-you")))
		// Headless Chromium reports no paint entries: the page is rendered
		// by the server, so its parse with its stylesheet is the paint.
		ms := webtest.Value(b, ctx, "first paint", chromedp.Evaluate[float64](`(performance.getEntriesByType('navigation')[0] || {domContentLoadedEventEnd: -1}).domContentLoadedEventEnd`))
		if ms <= 0 {
			b.Fatal("the browser reported no navigation timing")
		}
		paints = append(paints, time.Duration(ms*float64(time.Millisecond)))
	}
	slices.Sort(paints)
	b.ReportMetric(float64(paints[len(paints)/2])/float64(time.Millisecond), "first-paint-p50-ms")
	b.ReportMetric(float64(paints[len(paints)-1])/float64(time.Millisecond), "first-paint-max-ms")
}
