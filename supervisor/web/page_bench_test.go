package web

import (
	"encoding/json"
	"fmt"
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
func BenchmarkTeamPage1000Panes(b *testing.B) {
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
	h := Pages(mux, func(*http.Request) string { return "token" })
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
