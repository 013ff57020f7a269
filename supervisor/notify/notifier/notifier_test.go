package notifier_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/notify"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifier"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifytest"
	"github.com/cicy-ai/cicy-agent/topology"
)

// team is a fake team: its panes, what needs you, and the answers it was
// given; it is also the event stream (Hub).
type team struct {
	mu       sync.Mutex
	panes    []api.PaneInfo
	needs    []topology.Attention
	answered []api.AnswerRequest
	wake     chan struct{}
	home     int
}

func newTeam() *team { return &team{wake: make(chan struct{}, 1)} }

func (f *team) List(context.Context) []api.PaneInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.PaneInfo(nil), f.panes...)
}

func (f *team) StatusOf(context.Context, []api.PaneInfo) (api.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return api.StatusResponse{NeedsYou: append([]topology.Attention(nil), f.needs...)}, nil
}

func (f *team) Screen(id string, _ int) (api.ScreenResponse, error) {
	return api.ScreenResponse{Screen: "screen of " + id}, nil
}

func (f *team) Answer(_ context.Context, id string, req api.AnswerRequest) (api.AnswerResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answered = append(f.answered, req)
	return api.AnswerResult{Pane: id, Action: req.Action, State: "busy"}, nil
}

func (f *team) PaneID(ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.panes {
		if p.ID == ref || p.Title == ref {
			return p.ID, nil
		}
	}
	return "", &api.Error{Kind: api.KindNotFound, Message: "no pane " + ref}
}

func (f *team) Watch() (<-chan struct{}, func(), func()) { return f.wake, func() {}, func() {} }

func (f *team) HomeChanged() {
	f.mu.Lock()
	f.home++
	f.mu.Unlock()
}

func (f *team) PaneChanged(string) {}

// set changes what needs you, and tells the watch.
func (f *team) set(needs ...topology.Attention) {
	f.mu.Lock()
	f.needs = needs
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// start makes a notifier on a real SQLite store in a temp home, its team
// f, and starts it.
func start(t *testing.T, f *team) (*notifier.Notifier, *schema.Store, string) {
	t.Helper()
	root := t.TempDir()
	ctx := context.Background()
	st, err := schema.Open(ctx, filepath.Join(root, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	log := logrus.New()
	log.SetOutput(io.Discard)
	n, err := notifier.New(ctx, notifier.Config{Node: "local", Root: root, Getenv: func(string) string { return "" },
		Scrub: func(s string) string { return s }, Log: logrus.NewEntry(log), Store: st, Team: f, Hub: f})
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	t.Cleanup(n.Close)
	return n, st, root
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const hookSecret = "whsec-0123456789abcdef"

// TestNeedsYouReachesASink: what the team says needs you reaches a sink
// once, signed, its secret kept 0600 in the home and never shown; the
// episode is open until the team no longer needs you.
func TestNeedsYouReachesASink(t *testing.T) {
	t.Parallel()
	f := newTeam()
	f.panes = []api.PaneInfo{{ID: "w-1", Title: "builder", Team: "demo"}}
	n, _, root := start(t, f)
	hook := notifytest.NewWebhook(t)
	ctx := context.Background()
	info, err := n.AddSink(ctx, api.NotifyAddRequest{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, Secret: hookSecret})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info.Secret, hookSecret) || !strings.HasPrefix(info.Secret, "stored ") {
		t.Errorf("the sink's secret is shown as %q", info.Secret)
	}
	if fi, err := os.Stat(filepath.Join(root, "notify", "hook.secret")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the secret's file: %v %v", fi, err)
	}
	f.set(topology.Attention{ID: "w-1", Kind: topology.NeedError, State: "error", Reason: "it broke"})
	req := hook.Wait(t, 1, 30*time.Second)[0]
	if !notifytest.VerifySignature(req.Body, hookSecret, req.Header.Get(notify.HeaderSignature)) {
		t.Errorf("the webhook's request is not signed with its secret: %v", req.Header)
	}
	var ev notify.Event
	if err := json.Unmarshal(req.Body, &ev); err != nil || ev.Pane != "w-1" || ev.Title != "builder" || ev.Kind != topology.NeedError || ev.Text != "it broke" {
		t.Errorf("event = %+v (%v)", ev, err)
	}
	if got := n.EpisodeOf("w-1"); got != ev.ID {
		t.Errorf("the open episode of w-1 is %q, want %q", got, ev.ID)
	}
	f.set()
	waitFor(t, "the episode's end", func() bool { return n.EpisodeOf("w-1") == "" })
	if got := len(hook.Requests()); got != 1 {
		t.Errorf("the webhook got %d requests, want 1", got)
	}
	sinks, err := n.Sinks(ctx)
	if err != nil || len(sinks) != 1 || sinks[0].Name != "hook" {
		t.Fatalf("sinks = %+v (%v)", sinks, err)
	}
}

// TestAnswerRecordedOnce: an answer is recorded with its notification;
// a second answer to it is refused with who answered first.
func TestAnswerRecordedOnce(t *testing.T) {
	t.Parallel()
	n, _, _ := start(t, newTeam())
	ctx := context.Background()
	if err := n.Unanswered(ctx, "w-1", "n1"); err != nil {
		t.Fatalf("before any answer: %v", err)
	}
	n.RecordAnswer(ctx, "w-1", "n1", api.AnswerRequest{Action: "approve", By: "boss", Via: "telegram"}, api.AnswerResult{Keys: []string{"Enter"}})
	var done *notifier.AnsweredError
	if err := n.Unanswered(ctx, "w-1", "n1"); !errors.As(err, &done) || !strings.Contains(done.Msg, "approve by boss from the telegram") {
		t.Errorf("a second answer: %v", err)
	}
	as := n.Answers(ctx, "w-1", 0)
	if len(as) != 1 || as[0].Event != "n1" || as[0].Detail != "Enter" {
		t.Errorf("answers = %+v", as)
	}
	if got := n.AnswerEvent("w-1", ""); got != "" {
		t.Errorf("the event of an answer with no episode open is %q", got)
	}
}

// TestMuteByTitle: a pane is muted by its title (the team names it), and
// nothing is told of it meanwhile.
func TestMuteByTitle(t *testing.T) {
	t.Parallel()
	f := newTeam()
	f.panes = []api.PaneInfo{{ID: "w-1", Title: "builder"}}
	n, _, _ := start(t, f)
	hook := notifytest.NewNtfy(t)
	ctx := context.Background()
	if _, err := n.AddSink(ctx, api.NotifyAddRequest{Name: "topic", Type: notify.TypeNtfy, URL: hook.URL}); err != nil {
		t.Fatal(err)
	}
	m, err := n.Mute(ctx, api.NotifyMuteRequest{Target: "builder"})
	if err != nil || m.Target != "w-1" {
		t.Fatalf("mute = %+v (%v)", m, err)
	}
	if _, err := n.Mute(ctx, api.NotifyMuteRequest{Target: "nobody"}); err == nil {
		t.Error("a mute of no pane was taken")
	}
	f.set(topology.Attention{ID: "w-1", Kind: topology.NeedError, State: "error", Reason: "muted"})
	waitFor(t, "the episode", func() bool { return n.EpisodeOf("w-1") != "" })
	time.Sleep(300 * time.Millisecond) // a message would be sent now
	if got := len(hook.Requests()); got != 0 {
		t.Errorf("a muted pane was told: %d requests", got)
	}
}

// TestRoutesWithoutNotifications: a home whose store keeps no
// notifications (a nil *Notifier) mounts the routes, which refuse with
// why; its reads are empty.
func TestRoutesWithoutNotifications(t *testing.T) {
	t.Parallel()
	var n *notifier.Notifier
	mux := http.NewServeMux()
	n.Routes(mux, func(*http.Request, any) error { return nil }, func(w http.ResponseWriter, v any, err error) {
		var e *api.Error
		if errors.As(err, &e) {
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(e.Message))
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	})
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/notify/sinks", nil))
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "not available") {
		t.Errorf("GET /api/notify/sinks = %d %q", rec.Code, rec.Body)
	}
	if n.States(context.Background()) != nil || n.Answers(context.Background(), "w-1", 0) != nil || n.EpisodeOf("w-1") != "" {
		t.Error("a home without notifications reads some")
	}
	n.RecordAnswer(context.Background(), "w-1", "", api.AnswerRequest{Action: "approve"}, api.AnswerResult{})
	n.Close()
}
