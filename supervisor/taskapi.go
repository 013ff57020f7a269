package supervisor

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

func optTime(s string, valid bool) *time.Time {
	if !valid {
		return nil
	}
	t := schema.ParseTime(s)
	return &t
}

func taskInfo(t schema.Task) api.TaskInfo {
	ti := api.TaskInfo{
		ID: t.ID, From: t.From, To: t.To, Text: t.Text, Status: t.Status, Result: t.Result, Error: t.Error,
		Reason: t.Reason, Source: t.Source, CreatedAt: schema.ParseTime(t.CreatedAt), Attempts: t.Attempts,
		DeliveredAt: optTime(t.DeliveredAt.String, t.DeliveredAt.Valid),
		FinishedAt:  optTime(t.FinishedAt.String, t.FinishedAt.Valid),
		NotifiedAt:  optTime(t.NotifiedAt.String, t.NotifiedAt.Valid),
	}
	if t.Branch != "" {
		w := api.Work(t.Work)
		ti.Work = &w
	}
	return ti
}

// taskInfo is taskInfo with the nodes of the task's worker and sender.
func (s *Supervisor) taskInfo(t schema.Task) api.TaskInfo {
	ti := taskInfo(t)
	ti.ToNode, ti.FromNode = s.nodeOf(t.To), s.nodeOf(t.From)
	return ti
}

// nodeOf is the node of a pane ("" when no node has it).
func (s *Supervisor) nodeOf(id string) string {
	if s.isLocal(id) {
		return s.cfg.Node
	}
	return s.cl.NodeOf(id)
}

func withTimeout(ctx context.Context, seconds float64) (context.Context, context.CancelFunc) {
	if seconds > 0 {
		return context.WithTimeout(ctx, time.Duration(seconds*float64(time.Second)))
	}
	return context.WithCancel(ctx)
}

func taskID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, api.Usagef("%q is not a task id (a positive number)", r.PathValue("id"))
	}
	return id, nil
}

func (a *handler) taskRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/tasks", func(w http.ResponseWriter, r *http.Request) {
		var req api.DispatchRequest
		if err := decode(r, &req); err != nil {
			writeErr(w, err)
			return
		}
		if req.From == "" && req.Caller != "" {
			req.From = a.sup.callerMaster(req.Caller)
		}
		t, err := a.sup.Dispatch(r.Context(), req.From, req.To, req.Text)
		if err == nil && req.Wait {
			ctx, cancel := withTimeout(r.Context(), req.Timeout)
			t, err = a.sup.WaitTask(ctx, t.ID)
			cancel()
		}
		respond(w, a.sup.taskInfo(t), err)
	})
	mux.HandleFunc("GET /api/tasks", func(w http.ResponseWriter, r *http.Request) {
		pane := r.URL.Query().Get("pane")
		if pane != "" {
			id, err := a.sup.paneIDOf(pane)
			if err != nil {
				writeErr(w, err)
				return
			}
			pane = id
		}
		ts, err := a.sup.store.ListTasks(r.Context(), pane)
		out := make([]api.TaskInfo, 0, len(ts))
		for _, t := range ts {
			out = append(out, a.sup.taskInfo(t))
		}
		if pane != "" {
			a.sup.notify.WithAnswers(r.Context(), pane, out)
		}
		respond(w, out, err)
	})
	mux.HandleFunc("GET /api/tasks/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := taskID(r)
		if err != nil {
			writeErr(w, err)
			return
		}
		t, err := a.sup.GetTask(r.Context(), id)
		ti := a.sup.taskInfo(t)
		if err == nil {
			ti.Answers = a.sup.notify.Answers(r.Context(), "", t.ID)
		}
		respond(w, ti, err)
	})
	mux.HandleFunc("GET /api/tasks/{id}/wait", func(w http.ResponseWriter, r *http.Request) {
		id, err := taskID(r)
		if err != nil {
			writeErr(w, err)
			return
		}
		secs, _ := strconv.ParseFloat(r.URL.Query().Get("timeout"), 64)
		ctx, cancel := withTimeout(r.Context(), secs)
		defer cancel()
		t, err := a.sup.WaitTask(ctx, id)
		respond(w, a.sup.taskInfo(t), err)
	})
	mux.HandleFunc("POST /api/tasks/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		id, err := taskID(r)
		if err != nil {
			writeErr(w, err)
			return
		}
		t, err := a.sup.CancelTask(r.Context(), id)
		respond(w, a.sup.taskInfo(t), err)
	})
}

// teamTool runs a master's team tool: the body is the tool's JSON input
// (none is {}).
func (a *handler) teamTool(w http.ResponseWriter, r *http.Request) {
	var input json.RawMessage
	if r.ContentLength != 0 {
		if err := decode(r, &input); err != nil {
			writeErr(w, err)
			return
		}
	}
	res, err := a.sup.TeamTool(r.Context(), r.PathValue("id"), r.PathValue("tool"), input)
	respond(w, res, err)
}
