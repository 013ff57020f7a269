package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/cicy-ai/cicy-agent/api"
)

// maxTasks bounds the task list: the newest are shown.
const maxTasks = 300

type tasksPage struct {
	base
	Pane   string // the pane whose tasks these are; "" for all
	Tasks  []api.TaskInfo
	Hidden int // older tasks not shown
}

// diffPart is a task's or a worktree worker's change, highlighted.
type diffPart struct {
	Target string
	Head   string
	Lines  []diffLine
	Cut    int
	Notes  []string
	Err    string
}

func (p *pages) tasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("part") == "diff" {
		p.diff(w, r, q.Get("target"))
		return
	}
	v := tasksPage{base: p.base(r, "tasks", "tasks")}
	path := "/api/tasks"
	if pane := q.Get("pane"); pane != "" {
		id, err := api.ParsePaneID(pane)
		if err != nil {
			v.Err = err.Error()
			p.render(w, r, "tasks", http.StatusBadRequest, v)
			return
		}
		v.Pane, v.Title = id, "tasks of "+id
		path += "?pane=" + url.QueryEscape(id)
	}
	if err := p.api.get(r.Context(), r, path, &v.Tasks); err != nil {
		v.Err = "the tasks could not be read: " + err.Error()
		p.render(w, r, "tasks", http.StatusBadGateway, v)
		return
	}
	slices.Reverse(v.Tasks)
	if len(v.Tasks) > maxTasks {
		v.Hidden = len(v.Tasks) - maxTasks
		v.Tasks = v.Tasks[:maxTasks]
	}
	p.render(w, r, "tasks", http.StatusOK, v)
}

// diff renders the change of target (a task id or a worktree worker's id)
// as the part the script puts under its task.
func (p *pages) diff(w http.ResponseWriter, r *http.Request, target string) {
	v := diffPart{Target: target}
	status := http.StatusOK
	var d api.DiffResult
	if target == "" {
		v.Err, status = "which change? give target=<task id or pane id>", http.StatusBadRequest
	} else if err := p.api.get(r.Context(), r, "/api/diff?target="+url.QueryEscape(target), &d); err != nil {
		v.Err, status = err.Error(), http.StatusBadGateway
		if notFound(err) {
			status = http.StatusNotFound
		}
	} else {
		v.Head = d.Work.Stat() + " in " + plural(d.Work.Commits, "commit")
		v.Lines, v.Cut = diffLines(d.Diff)
		v.Notes = d.Notes
	}
	p.render(w, r, "tasks", status, v)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
