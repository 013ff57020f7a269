package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// ownPanes is this node's panes, for a Cluster alone: the ids it holds.
type ownPanes map[string]bool

func (o ownPanes) Has(id string) bool { return o[id] }

func (o ownPanes) Describe(row schema.Pane, st pane.Status) api.PaneInfo {
	return api.PaneInfo{ID: row.ID, Title: row.Title, State: string(st.State), Reason: st.Reason}
}

// noted records what the cluster published and told the outbox.
type noted struct{}

func (noted) PaneChanged(string)  {}
func (noted) StateChanged(string) {}
func (noted) Kick()               {}
func (noted) Noted(int64, bool)   {}

// soloCluster is node a's Cluster on a real SQLite store that also holds
// a row of node b's pane (returned), with own as node a's panes.
func soloCluster(t *testing.T, own ownPanes) (*Cluster, schema.Pane) {
	t.Helper()
	ctx := context.Background()
	store, err := schema.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	row, err := store.CreatePane(ctx, schema.Pane{Title: "far", Type: "shell", Role: "worker", Backend: "pty", Command: "[]", Config: "{}", Node: "b"},
		func(string) (string, error) { return t.TempDir(), nil })
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Node: "a", Version: "test", Listen: Listen{Token: "a-cluster-secret-0123456789"}, Store: store,
		Panes: own, Events: noted{}, Tasks: noted{}, Log: quiet()})
	t.Cleanup(c.Close)
	if err := c.Start(""); err != nil { // SQLite: one machine, nothing starts
		t.Fatal(err)
	}
	return c, row
}

// TestForwardRoutes: Forward hands this node's panes, unknown panes and
// hooks to the local handler; a request about another node's pane goes
// to that node, and says why when it cannot (node b never registered: the
// message names no node then, as it always has),
// is never forwarded twice, and an attach says where to run it.
func TestForwardRoutes(t *testing.T) {
	t.Parallel()
	c, far := soloCluster(t, ownPanes{"w-7": true})
	h := c.Forward(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot) // the local handler
	}))
	for _, tc := range []struct {
		method, path, body, from string
		code                     int
		says                     string
	}{
		{"GET", "/api/panes/w-7/preview", "", "", http.StatusTeapot, ""},
		{"GET", "/api/panes/w-99", "", "", http.StatusTeapot, ""},
		{"POST", "/api/panes/" + far.ID + "/hook", "{}", "", http.StatusTeapot, ""},
		{"GET", "/api/panes/" + far.ID, "", "", http.StatusConflict, "pane " + far.ID + " (on node b): node  cannot be reached: it has not registered"},
		{"PUT", "/api/budgets/" + far.ID, "{}", "", http.StatusConflict, "cannot be reached: it has not registered"},
		{"GET", "/api/panes/" + far.ID, "", "c", http.StatusConflict, "pane " + far.ID + " is on node b, not on node a (a request forwarded by node c)"},
		{"GET", "/api/panes/" + far.ID + "/attach", "", "", http.StatusConflict, "a terminal attaches on its own machine: cicy-agent attach " + far.ID},
		{"POST", "/api/panes", `{"node":"a"}`, "", http.StatusTeapot, ""},
		{"POST", "/api/panes", `{}`, "", http.StatusTeapot, ""},
		{"POST", "/api/panes", `{"node":"zz"}`, "", http.StatusBadRequest, "--node zz: no such node"},
		{"POST", "/api/panes", `{"node":"b"}`, "c", http.StatusConflict, "node a was asked by node c to create a pane on node b"},
	} {
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		if tc.from != "" {
			r.Header.Set(forwardedHeader, tc.from)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.code {
			t.Errorf("%s %s (from %q): status %d, want %d: %s", tc.method, tc.path, tc.from, rec.Code, tc.code, rec.Body)
			continue
		}
		if tc.says == "" {
			continue
		}
		var e api.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s %s (from %q): %s, want it to say %q", tc.method, tc.path, tc.from, rec.Body, tc.says)
		}
	}
}

// TestOtherNodesPanes: another node's pane this node has looked up is
// listed, found by id and by title, and shown unreachable (described by
// this node's Panes) while its node has not registered.
func TestOtherNodesPanes(t *testing.T) {
	t.Parallel()
	c, far := soloCluster(t, ownPanes{})
	if _, ok := c.Info(far.ID); ok {
		t.Fatalf("%s known before any lookup", far.ID)
	}
	row, ok := c.Lookup(context.Background(), far.ID)
	if !ok || row.Node != "b" {
		t.Fatalf("lookup %s: %+v, %v", far.ID, row, ok)
	}
	pi, ok := c.Info(far.ID)
	if !ok || pi.Node != "b" || pi.State != string(pane.Unreachable) || !strings.Contains(pi.Reason, "node b has not registered") {
		t.Fatalf("info %s: %+v, %v", far.ID, pi, ok)
	}
	if all := c.Panes(time.Now()); len(all) != 1 || all[0].ID != far.ID {
		t.Fatalf("panes: %+v", all)
	}
	if got := c.ByTitle("far"); len(got) != 1 || got[0].ID != far.ID {
		t.Fatalf("by title: %+v", got)
	}
	if got := c.NodeOf(far.ID); got != "b" {
		t.Fatalf("node of %s: %q", far.ID, got)
	}
	nodes, err := c.Nodes(context.Background(), 3)
	if err != nil || len(nodes) != 1 || !nodes[0].Self || nodes[0].Name != "a" || nodes[0].Panes != 3 {
		t.Fatalf("nodes on SQLite: %+v, %v", nodes, err)
	}
}

// TestDropLate: a request read after the deadline it carries is refused
// before anything acts on it; one in time goes on with its deadline for
// TooLate; a deadline that is not a time is refused as such.
func TestDropLate(t *testing.T) {
	t.Parallel()
	var late []error
	h := DropLate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		late = append(late, TooLate(r.Context()))
		w.WriteHeader(http.StatusNoContent)
	}), quiet())
	for _, tc := range []struct {
		deadline string
		code     int
	}{
		{"", http.StatusNoContent},
		{time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano), http.StatusNoContent},
		{time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano), http.StatusConflict},
		{"soon", http.StatusBadRequest},
	} {
		r := httptest.NewRequest(http.MethodPost, "/api/panes/w-1/send", strings.NewReader("{}"))
		if tc.deadline != "" {
			r.Header.Set(api.DeadlineHeader, tc.deadline)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.code {
			t.Errorf("deadline %q: status %d, want %d: %s", tc.deadline, rec.Code, tc.code, rec.Body)
		}
	}
	if len(late) != 2 || late[0] != nil || late[1] != nil {
		t.Fatalf("TooLate in time: %v", late)
	}
	past := context.WithValue(context.Background(), beginByKey{}, time.Now().Add(-time.Second))
	if err := TooLate(past); err == nil || !strings.Contains(err.Error(), "nothing was done") {
		t.Fatalf("TooLate after the deadline: %v", err)
	}
	if err := TooLate(context.Background()); err != nil {
		t.Fatalf("TooLate with no deadline: %v", err)
	}
}

func quiet() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}
