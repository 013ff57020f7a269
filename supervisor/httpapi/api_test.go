package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// daemon is a Daemon for the API's own tests: it answers the few calls a
// test makes; any other call panics (the embedded nil Daemon), which
// fails the test that made it.
type daemon struct {
	Daemon
	tasks []schema.Task
}

func (d *daemon) Health() api.Health {
	return api.Health{Gateway: "http://127.0.0.1:1", Node: "n1", Provider: "openai"}
}

func (d *daemon) Get(id string) (api.PaneInfo, error) {
	if id != "w-1" {
		return api.PaneInfo{}, api.PaneNotFound(id)
	}
	return api.PaneInfo{ID: "w-1", Title: "one"}, nil
}

func (d *daemon) PaneIDOf(ref string) (string, error) {
	if ref == "one" || ref == "w-1" {
		return "w-1", nil
	}
	return "", api.PaneNotFound(ref)
}

func (d *daemon) ListTasks(_ context.Context, pane string) ([]schema.Task, error) {
	var out []schema.Task
	for _, t := range d.tasks {
		if pane == "" || t.To == pane || t.From == pane {
			out = append(out, t)
		}
	}
	return out, nil
}

func (d *daemon) TaskInfo(t schema.Task) api.TaskInfo {
	return api.TaskInfo{ID: t.ID, From: t.From, To: t.To, Text: t.Text, Status: t.Status, ToNode: "n1"}
}

// answers records the panes whose tasks were given their answers.
type answers struct{ panes []string }

func (a *answers) Answers(context.Context, string, int64) []api.Answer { return nil }

func (a *answers) WithAnswers(_ context.Context, pane string, tasks []api.TaskInfo) {
	a.panes = append(a.panes, pane)
	for i := range tasks {
		tasks[i].Answers = []api.Answer{{Action: "yes"}}
	}
}

// serve serves New(d, cfg) on 127.0.0.1 for the test.
func serve(t *testing.T, d Daemon, cfg Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(d, cfg))
	t.Cleanup(srv.Close)
	return srv
}

// call makes a request and returns the status and body.
func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestHealthTellsTheDaemonAndTheConfig: health is what the daemon says of
// itself, with the version, home and cluster address the API was made
// with, and this process's pid.
func TestHealthTellsTheDaemonAndTheConfig(t *testing.T) {
	t.Parallel()
	srv := serve(t, &daemon{}, Config{Version: "v9", Home: "/h", Cluster: "127.0.0.1:7"})
	code, body := call(t, http.MethodGet, srv.URL+"/api/health", "")
	var h api.Health
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != http.StatusOK {
		t.Fatalf("health = %d %s", code, body)
	}
	want := api.Health{PID: os.Getpid(), Version: "v9", Home: "/h", Cluster: "127.0.0.1:7", Gateway: "http://127.0.0.1:1", Node: "n1", Provider: "openai"}
	if h.PID != want.PID || h.Version != want.Version || h.Home != want.Home || h.Cluster != want.Cluster ||
		h.Gateway != want.Gateway || h.Node != want.Node || h.Provider != want.Provider {
		t.Fatalf("health = %+v, want %+v", h, want)
	}
}

// TestShutdownAnswersThenStops: POST /api/shutdown answers the pid and
// calls Config.Shutdown.
func TestShutdownAnswersThenStops(t *testing.T) {
	t.Parallel()
	stopped := make(chan struct{})
	srv := serve(t, &daemon{}, Config{Shutdown: func() { close(stopped) }})
	if code, body := call(t, http.MethodPost, srv.URL+"/api/shutdown", ""); code != http.StatusOK || !strings.Contains(body, `"pid"`) {
		t.Fatalf("shutdown = %d %s", code, body)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown was answered but not asked of the supervisor")
	}
}

// TestErrorsAnswerTheirKindsStatus: a pane not found is 404 with the
// error document; an unknown endpoint is 404 and named; a path with a
// ".." part is refused, not cleaned into another route.
func TestErrorsAnswerTheirKindsStatus(t *testing.T) {
	t.Parallel()
	srv := serve(t, &daemon{}, Config{})
	for _, tc := range []struct {
		method, path string
		code         int
		kind, says   string
	}{
		{http.MethodGet, "/api/panes/w-1", http.StatusOK, "", `"title":"one"`},
		{http.MethodGet, "/api/panes/w-2", http.StatusNotFound, api.KindNotFound, "w-2"},
		{http.MethodGet, "/api/nothing", http.StatusNotFound, api.KindNotFound, "no such API endpoint: GET /api/nothing"},
		{http.MethodGet, "/api/panes/w-1/%2e%2e", http.StatusBadRequest, api.KindUsage, "is not a valid name here"},
		{http.MethodGet, "/api/tasks/x", http.StatusBadRequest, api.KindUsage, "not a task id"},
	} {
		code, body := call(t, tc.method, srv.URL+tc.path, "")
		if code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s %s = %d %s, want %d saying %q", tc.method, tc.path, code, body, tc.code, tc.says)
			continue
		}
		var e api.Error
		if tc.kind != "" && (json.Unmarshal([]byte(body), &e) != nil || e.Kind != tc.kind) {
			t.Errorf("%s %s: error %s, want kind %s", tc.method, tc.path, body, tc.kind)
		}
	}
}

// TestRoomsAndForward: a room's routes are mounted and read and answer
// as the API's own (a bad body is a usage error, an error its kind's
// status); Forward wraps every route, the rooms' too.
func TestRoomsAndForward(t *testing.T) {
	t.Parallel()
	room := func(mux *http.ServeMux, decode func(*http.Request, any) error, respond func(http.ResponseWriter, any, error)) {
		mux.HandleFunc("POST /api/room", func(w http.ResponseWriter, r *http.Request) {
			var req struct{ Name string }
			if err := decode(r, &req); err != nil {
				respond(w, nil, err)
				return
			}
			if req.Name == "" {
				respond(w, nil, errors.New("no name"))
				return
			}
			respond(w, map[string]string{"hello": req.Name}, nil)
		})
	}
	forward := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Forwarded-By-Test", "1")
			next.ServeHTTP(w, r)
		})
	}
	srv := serve(t, &daemon{}, Config{Rooms: []Room{room}, Forward: forward})
	for _, tc := range []struct {
		body, want string
		code       int
	}{
		{`{"Name":"ann"}`, `{"hello":"ann"}`, http.StatusOK},
		{`{"Name":"ann"} x`, "bad request body", http.StatusBadRequest},
		{`{}`, `"kind":"failed"`, (&api.Error{Kind: api.KindFailed}).Status()},
	} {
		if code, body := call(t, http.MethodPost, srv.URL+"/api/room", tc.body); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("POST /api/room %s = %d %s, want %d with %s", tc.body, code, body, tc.code, tc.want)
		}
	}
	resp, err := http.Get(srv.URL + "/api/panes/w-1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Forwarded-By-Test") != "1" {
		t.Fatal("the API's routes were not passed through Forward")
	}
}

// TestTasksOfAPane: GET /api/tasks?pane= resolves the pane's title, lists
// its tasks in the API's form and gives them their answers.
func TestTasksOfAPane(t *testing.T) {
	t.Parallel()
	d := &daemon{tasks: []schema.Task{{ID: 1, From: "m-1", To: "w-1", Text: "a"}, {ID: 2, From: "m-1", To: "w-2", Text: "b"}}}
	ans := &answers{}
	srv := serve(t, d, Config{Answers: ans})
	code, body := call(t, http.MethodGet, srv.URL+"/api/tasks?pane=one", "")
	var got []api.TaskInfo
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != http.StatusOK {
		t.Fatalf("tasks = %d %s", code, body)
	}
	if len(got) != 1 || got[0].ID != 1 || got[0].ToNode != "n1" || len(got[0].Answers) != 1 || len(ans.panes) != 1 || ans.panes[0] != "w-1" {
		t.Fatalf("the tasks of pane one: %+v (answers asked for %v)", got, ans.panes)
	}
	if code, body := call(t, http.MethodGet, srv.URL+"/api/tasks?pane=nobody", ""); code != http.StatusNotFound {
		t.Fatalf("the tasks of a pane that is not: %d %s", code, body)
	}
}
