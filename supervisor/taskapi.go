package supervisor

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/cicy-ai/cicy-agent/schema"
)

// TaskInfo is a task as `tasks --json` prints it (see docs/http-api.md).
type TaskInfo struct {
	ID          int64      `json:"id"`
	From        string     `json:"from"`
	To          string     `json:"to"`
	Text        string     `json:"text"`
	Status      string     `json:"status"`
	Result      string     `json:"result"`
	Error       string     `json:"error"`
	Reason      string     `json:"reason"`
	CreatedAt   time.Time  `json:"created_at"`
	DeliveredAt *time.Time `json:"delivered_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	NotifiedAt  *time.Time `json:"notified_at"`
	Attempts    int        `json:"attempts"`
}

func optTime(s string, valid bool) *time.Time {
	if !valid {
		return nil
	}
	t := schema.ParseTime(s)
	return &t
}

func taskInfo(t schema.Task) TaskInfo {
	return TaskInfo{
		ID: t.ID, From: t.From, To: t.To, Text: t.Text, Status: t.Status, Result: t.Result, Error: t.Error,
		Reason: t.Reason, CreatedAt: schema.ParseTime(t.CreatedAt), Attempts: t.Attempts,
		DeliveredAt: optTime(t.DeliveredAt.String, t.DeliveredAt.Valid),
		FinishedAt:  optTime(t.FinishedAt.String, t.FinishedAt.Valid),
		NotifiedAt:  optTime(t.NotifiedAt.String, t.NotifiedAt.Valid),
	}
}

// DispatchRequest creates a task; with Wait the answer comes when it ends
// (or Timeout seconds pass).
type DispatchRequest struct {
	From    string  `json:"from"`
	To      string  `json:"to"`
	Text    string  `json:"text"`
	Wait    bool    `json:"wait"`
	Timeout float64 `json:"timeout"`
	// Caller is the pane the command runs in (CICY_PANE_ID), if any: a
	// master dispatching from its shell is the task's from.
	Caller string `json:"caller,omitempty"`
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
		return 0, usageErr("%q is not a task id (a positive number)", r.PathValue("id"))
	}
	return id, nil
}

func (a *api) taskRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/tasks", func(w http.ResponseWriter, r *http.Request) {
		var req DispatchRequest
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
		respond(w, taskInfo(t), err)
	})
	mux.HandleFunc("GET /api/tasks", func(w http.ResponseWriter, r *http.Request) {
		pane := r.URL.Query().Get("pane")
		if pane != "" {
			id, err := ParsePaneID(pane)
			if err != nil {
				writeErr(w, err)
				return
			}
			pane = id
		}
		ts, err := a.sup.store.ListTasks(r.Context(), pane)
		out := make([]TaskInfo, 0, len(ts))
		for _, t := range ts {
			out = append(out, taskInfo(t))
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
		respond(w, taskInfo(t), err)
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
		respond(w, taskInfo(t), err)
	})
	mux.HandleFunc("POST /api/tasks/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		id, err := taskID(r)
		if err != nil {
			writeErr(w, err)
			return
		}
		t, err := a.sup.CancelTask(r.Context(), id)
		respond(w, taskInfo(t), err)
	})
}
