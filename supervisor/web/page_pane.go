package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/panetype"
)

// paneScreenRows is how much of a pane's screen its page shows.
const paneScreenRows = 60

type panePage struct {
	base
	Pane     api.PaneInfo
	Screen   string
	Styled   [][]api.StyledRun // the screen with its colours
	Options  []option
	CLI      bool // a CLI agent: its dialogs are answered with approve/deny
	Waiting  bool
	Stopped  bool // exited or in error: it can be restarted
	Worker   bool
	Tasks    []api.TaskInfo // newest first
	Usage    *api.UsageReport
	Budget   *api.Budget
	Guidance *api.GuidanceDoc // nil: the pane has no role file to edit
	Notes    []string         // what could not be read
}

func (p *pages) pane(w http.ResponseWriter, r *http.Request) {
	id, err := api.ParsePaneID(r.PathValue("id"))
	v := panePage{base: p.base(r, "pane", r.PathValue("id"))}
	if err != nil {
		v.Err = err.Error()
		p.render(w, r, "pane", http.StatusBadRequest, v)
		return
	}
	v.PaneID, v.Title = id, id
	ctx := r.Context()
	if err := p.api.get(ctx, r, "/api/panes/"+esc(id), &v.Pane); err != nil {
		status := http.StatusBadGateway
		if notFound(err) {
			status = http.StatusNotFound
		}
		v.Err = err.Error()
		p.render(w, r, "pane", status, v)
		return
	}
	v.Title = v.Pane.Title + " (" + id + ")"
	v.CLI = panetype.IsAgent(v.Pane.Type)
	v.Waiting = v.Pane.State == "waiting"
	v.Stopped = v.Pane.State == "exited" || v.Pane.State == "error"
	v.Worker = v.Pane.Role == "worker"
	p.paneDetails(ctx, r, &v)
	p.render(w, r, "pane", http.StatusOK, v)
}

// paneDetails reads what the pane page shows besides the pane: its screen,
// tasks, usage, budget and role file. A part that cannot be read is a note,
// not a failed page.
func (p *pages) paneDetails(ctx context.Context, r *http.Request, v *panePage) {
	id := v.PaneID
	note := func(what string, err error) {
		v.Notes = append(v.Notes, fmt.Sprintf("its %s could not be read: %v", what, err))
	}
	var sc api.ScreenResponse
	if err := p.api.get(ctx, r, fmt.Sprintf("/api/panes/%s/screen?lines=%d&styled=1", esc(id), paneScreenRows), &sc); err != nil {
		note("screen", err)
	} else {
		v.Screen, v.Styled = sc.Screen, sc.Styled
		if v.CLI && v.Waiting && sc.Dialog != nil {
			v.Options = dialogOptions(sc.Dialog.Options)
		}
	}
	if err := p.api.get(ctx, r, "/api/tasks?pane="+url.QueryEscape(id), &v.Tasks); err != nil {
		note("tasks", err)
	}
	slices.Reverse(v.Tasks)
	var u api.UsageReport
	if err := p.api.get(ctx, r, "/api/usage?by=model&pane="+url.QueryEscape(id), &u); err != nil {
		note("usage", err)
	} else {
		v.Usage = &u
	}
	var b api.Budget
	if err := p.api.get(ctx, r, "/api/budgets/"+esc(id), &b); err != nil {
		note("budget", err)
	} else {
		v.Budget = &b
	}
	if panetype.RunsShellTasks(v.Pane.Type) {
		return // a shell pane has no role file
	}
	var g api.GuidanceDoc
	err := p.api.get(ctx, r, "/api/memory/templates/agent/"+esc(id), &g)
	switch {
	case err == nil:
		v.Guidance = &g
	case notFound(err) && panetype.InProcess(v.Pane.Type):
		v.Guidance = &api.GuidanceDoc{Scope: "agent", Name: id, Filename: panetype.GuidanceFile(v.Pane.Type)}
	case !notFound(err) && !errors.Is(err, context.Canceled):
		note("role file", err)
	}
}

// answerable is what the approve/deny buttons need.
type answerable struct {
	ID      string
	Options []option
}

// Answerable is the pane as the answer buttons take it.
func (v panePage) Answerable() answerable { return answerable{ID: v.Pane.ID, Options: v.Options} }

// Tokens are every token of the pane's usage.
func (v panePage) Tokens() int64 {
	u := v.Pane.Usage
	return u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// recentTasks is how many of a pane's tasks its page shows.
const recentTasks = 20

// RecentTasks are the pane's newest tasks.
func (v panePage) RecentTasks() []api.TaskInfo { return v.Tasks[:min(len(v.Tasks), recentTasks)] }

// ScreenRows is how many lines the live screen follows.
func (v panePage) ScreenRows() int { return paneScreenRows }
