package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

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

// taskRoute is the handler of a task's route: h with the task's id from
// the path; a bad id is answered as a usage error.
func taskRoute(h func(w http.ResponseWriter, r *http.Request, id int64)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := taskID(r)
		if err != nil {
			WriteErr(w, err)
			return
		}
		h(w, r, id)
	}
}

func (a *handler) taskRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/tasks", func(w http.ResponseWriter, r *http.Request) {
		req, ok := decodeOr[api.DispatchRequest](w, r)
		if !ok {
			return
		}
		if req.From == "" && req.Caller != "" {
			req.From = a.sup.CallerMaster(req.Caller)
		}
		t, err := a.sup.Dispatch(r.Context(), req.From, req.To, req.Text)
		if err == nil && req.Wait {
			ctx, cancel := withTimeout(r.Context(), req.Timeout)
			t, err = a.sup.WaitTask(ctx, t.ID)
			cancel()
		}
		Respond(w, a.sup.TaskInfo(t), err)
	})
	mux.HandleFunc("GET /api/tasks", func(w http.ResponseWriter, r *http.Request) {
		pane := r.URL.Query().Get("pane")
		if pane != "" {
			id, err := a.sup.PaneIDOf(pane)
			if err != nil {
				WriteErr(w, err)
				return
			}
			pane = id
		}
		ts, err := a.sup.ListTasks(r.Context(), pane)
		out := make([]api.TaskInfo, 0, len(ts))
		for _, t := range ts {
			out = append(out, a.sup.TaskInfo(t))
		}
		if pane != "" {
			a.cfg.Answers.WithAnswers(r.Context(), pane, out)
		}
		Respond(w, out, err)
	})
	mux.HandleFunc("GET /api/tasks/{id}", taskRoute(func(w http.ResponseWriter, r *http.Request, id int64) {
		t, err := a.sup.GetTask(r.Context(), id)
		ti := a.sup.TaskInfo(t)
		if err == nil {
			ti.Answers = a.cfg.Answers.Answers(r.Context(), "", t.ID)
		}
		Respond(w, ti, err)
	}))
	mux.HandleFunc("GET /api/tasks/{id}/wait", taskRoute(func(w http.ResponseWriter, r *http.Request, id int64) {
		secs, _ := strconv.ParseFloat(r.URL.Query().Get("timeout"), 64)
		ctx, cancel := withTimeout(r.Context(), secs)
		defer cancel()
		t, err := a.sup.WaitTask(ctx, id)
		Respond(w, a.sup.TaskInfo(t), err)
	}))
	mux.HandleFunc("POST /api/tasks/{id}/cancel", taskRoute(func(w http.ResponseWriter, r *http.Request, id int64) {
		t, err := a.sup.CancelTask(r.Context(), id)
		Respond(w, a.sup.TaskInfo(t), err)
	}))
}

// teamTool runs a master's team tool: the body is the tool's JSON input
// (none is {}).
func (a *handler) teamTool(w http.ResponseWriter, r *http.Request) {
	var input json.RawMessage
	if r.ContentLength != 0 {
		if err := Decode(r, &input); err != nil {
			WriteErr(w, err)
			return
		}
	}
	res, err := a.sup.TeamTool(r.Context(), r.PathValue("id"), r.PathValue("tool"), input)
	Respond(w, res, err)
}
