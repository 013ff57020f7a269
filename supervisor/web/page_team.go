package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Screens shown with what needs you: at most this many, of this many lines.
const (
	needScreens    = 12
	needScreenRows = 16
)

type teamPage struct {
	base
	Needs      []needView
	Masters    []masterView
	Unassigned []workerView
	Untracked  []topology.Untracked
	Workers    []topology.Worker // the dispatch form's choices
	CameBack   string
	Panes      int
	// Hidden is how many workers the tree leaves out (a big team shows
	// its first treeRows unless ?all=1 asks for every one).
	Hidden int
}

// treeRows is how many workers the team tree shows at first: a team of
// a thousand panes paints in a fraction of the page's bytes; what needs
// you is listed whole above it anyway.
const treeRows = 200

// needView is one thing that needs you, with what the page can do about it.
type needView struct {
	topology.Attention
	Title   string
	Type    string
	Screen  string
	Styled  [][]api.StyledRun // the screen with its colours
	Options []option
	CLI     bool // a CLI agent: approve, deny, option:N
	Restart bool // stopped or in error: restart
}

type masterView struct {
	topology.Master
	Cost    string
	Workers []workerView
}

type workerView struct {
	topology.Worker
	Cost  string
	Lines string
}

func (p *pages) team(w http.ResponseWriter, r *http.Request) {
	v := teamPage{base: p.base(r, "team", "team")}
	var st api.StatusResponse
	var panes []api.PaneInfo
	ctx := r.Context()
	err := p.api.get(ctx, r, "/api/status", &st)
	if err == nil {
		err = p.api.get(ctx, r, "/api/panes", &panes)
	}
	if err != nil {
		v.Err = "the supervisor did not answer: " + err.Error()
		p.render(w, r, "team", http.StatusBadGateway, v)
		return
	}
	if !topology.SpansNodes(st.Nodes()...) {
		st = oneNode(st) // one machine: no node to name
	}
	byID := make(map[string]api.PaneInfo, len(panes))
	for _, pi := range panes {
		byID[pi.ID] = pi
	}
	v.Panes = len(panes)
	v.Needs = p.needs(ctx, r, st.NeedsYou, byID)
	for _, m := range st.Masters {
		mv := masterView{Master: m, Cost: usd(byID[m.ID].CostUSD)}
		for _, wk := range m.Workers {
			mv.Workers = append(mv.Workers, worker(wk, byID))
			v.Workers = append(v.Workers, wk)
		}
		v.Masters = append(v.Masters, mv)
	}
	for _, wk := range st.Unassigned {
		v.Unassigned = append(v.Unassigned, worker(wk, byID))
		v.Workers = append(v.Workers, wk)
	}
	v.Untracked = st.Untracked
	if r.URL.Query().Get("all") != "1" {
		v.Hidden = v.trim(treeRows)
	}
	if st.CameBack != nil {
		v.CameBack = st.CameBack.Line()
	}
	p.render(w, r, "team", http.StatusOK, v)
}

func worker(wk topology.Worker, byID map[string]api.PaneInfo) workerView {
	return workerView{Worker: wk, Cost: usd(byID[wk.ID].CostUSD), Lines: workLines(wk.Work)}
}

// needs are the status's needs-you in its order (the most urgent first),
// each a waiting pane's with the screen around its question.
func (p *pages) needs(ctx context.Context, r *http.Request, att []topology.Attention, byID map[string]api.PaneInfo) []needView {
	out := make([]needView, len(att))
	var wg sync.WaitGroup
	screens := 0
	for i, a := range att {
		pi := byID[a.ID]
		nv := needView{Attention: a, Title: pi.Title, Type: pi.Type}
		nv.CLI = a.Kind == topology.NeedWaiting && panetype.IsAgent(pi.Type)
		nv.Restart = a.ID != topology.HomeID && (pi.State == "exited" || pi.State == "error")
		out[i] = nv
		if a.ID == topology.HomeID || pi.ID == "" || screens >= needScreens || a.State == "unreachable" {
			continue
		}
		if a.Kind != topology.NeedWaiting && a.Kind != topology.NeedError && a.Kind != topology.NeedCrashLoop {
			continue
		}
		screens++
		wg.Add(1)
		go func(nv *needView) {
			defer wg.Done()
			var sc api.ScreenResponse
			if err := p.api.get(ctx, r, fmt.Sprintf("/api/panes/%s/screen?lines=%d&styled=1", esc(nv.ID), needScreenRows), &sc); err != nil {
				nv.Screen = "(its screen could not be read: " + err.Error() + ")"
				return
			}
			nv.Screen, nv.Styled = sc.Screen, sc.Styled
			if nv.CLI && sc.Dialog != nil {
				nv.Options = dialogOptions(sc.Dialog.Options)
			}
		}(&out[i])
	}
	wg.Wait()
	return out
}

// oneNode is the status without its panes' node names: a team on one
// machine shows none (as the CLI's tables do).
func oneNode(st api.StatusResponse) api.StatusResponse {
	workerNode := func(w *topology.Worker) *string { return &w.Node }
	for i := range st.Masters {
		m := &st.Masters[i]
		m.Node = ""
		m.Workers = noNodes(m.Workers, workerNode)
	}
	st.Unassigned = noNodes(st.Unassigned, workerNode)
	st.Untracked = noNodes(st.Untracked, func(u *topology.Untracked) *string { return &u.Node })
	st.NeedsYou = noNodes(st.NeedsYou, func(a *topology.Attention) *string { return &a.Node })
	return st
}

// noNodes is a copy of rows with the node name (node's field) of each
// cleared.
func noNodes[T any](rows []T, node func(*T) *string) []T {
	rows = slices.Clone(rows)
	for i := range rows {
		*node(&rows[i]) = ""
	}
	return rows
}

// trim keeps the first n workers of the tree (and of the dispatch form's
// choices), and says how many it left out.
func (v *teamPage) trim(n int) (hidden int) {
	left := n
	keep := func(ws []workerView) []workerView {
		if len(ws) > left {
			hidden += len(ws) - left
			ws = ws[:left]
		}
		left -= len(ws)
		return ws
	}
	for i := range v.Masters {
		v.Masters[i].Workers = keep(v.Masters[i].Workers)
	}
	v.Unassigned = keep(v.Unassigned)
	if len(v.Workers) > n {
		v.Workers = v.Workers[:n]
	}
	return hidden
}
