package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// standInClaude is a program named claude that keeps the key it was given
// (its gateway token) in its workspace, draws Claude Code's idle composer
// (the ❯ prompt between two ─ rules, the idle footer under it) and draws
// it again after each line typed, and sends no hook: the test sends them,
// and makes its model requests.
const standInClaude = "#!/bin/sh\nprintf '%s' \"$ANTHROPIC_API_KEY\" > token.tmp && mv token.tmp token\n" +
	"R=────────────────────────────────────────\n" +
	"prompt() { printf '%s\\n❯ \\n%s\\n  ? for shortcuts ' \"$R\" \"$R\"; }\n" +
	"prompt\nwhile IFS= read -r line; do printf 'did %s\\n' \"$line\"; prompt; done\n"

// newSignalsSupervisor starts a supervisor of its own home with the
// stand-in claude on PATH.
func newSignalsSupervisor(t testing.TB, getenv func(string) string) (*Supervisor, http.Handler) {
	t.Helper()
	return newStandInSupervisor(t, getenv, standInClaude)
}

// newStandInSupervisor starts a supervisor of its own home with script
// on PATH as claude.
func newStandInSupervisor(t testing.TB, getenv func(string) string, script string) (*Supervisor, http.Handler) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	getenv = envOverlay(getenv)
	return newTestSupervisor(t, envOverlay(getenv, "PATH="+dir+string(os.PathListSeparator)+getenv("PATH")))
}

// newTestSupervisor starts a supervisor of its own home.
func newTestSupervisor(t testing.TB, getenv func(string) string) (*Supervisor, http.Handler) {
	t.Helper()
	h, store := openTestHome(t, filepath.Join(t.TempDir(), "home"))
	ctx := context.Background()
	cfg := Config{Home: h, Log: quietLog(), Getenv: getenv}
	s, err := New(ctx, cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		_ = s.tmux.KillServer()
	})
	return s, newAPI(s, cfg, func() {})
}

// openTestHome prepares the home at root and opens its SQLite store,
// closed when the test ends.
func openTestHome(t testing.TB, root string) (Home, *schema.Store) {
	t.Helper()
	h := Home{Root: root}
	if err := h.Prepare(); err != nil {
		t.Fatal(err)
	}
	store, err := schema.Open(context.Background(), h.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return h, store
}

// quietLog is a log that writes nowhere.
func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// lsJSON is what `ls --json` shows of pane id: the API's pane list,
// decoded from its JSON.
func lsJSON(t *testing.T, h http.Handler, id string) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/panes", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/panes: %d %s", rec.Code, rec.Body)
	}
	var panes []map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &panes); err != nil {
		t.Fatal(err)
	}
	for _, p := range panes {
		if p["id"] == id {
			return p
		}
	}
	t.Fatalf("no pane %s in %s", id, rec.Body)
	return nil
}

// waitPane polls pane id's status until cond holds.
func waitPane(t testing.TB, s *Supervisor, id, what string, cond func(pane.Status) bool) pane.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e, err := s.get(id)
		if err != nil {
			t.Fatal(err)
		}
		st := e.status()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGatewaySignal: the gateway's requests in flight, told to the
// supervisor as gateway.Activity, keep a CLI agent pane busy though its
// screen says idle; once they end the screen, or a hook that still
// stands, decides again; the disagreements staged are counted and shown
// by ls --json and explain.
func TestGatewaySignal(t *testing.T) {
	for _, backend := range []string{"pty", "tmux"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "tmux" && !pane.TmuxAvailable() {
				t.Fatal("tmux 3.0 or newer is needed (the CI installs it)")
			}
			testGatewaySignal(t, backend)
		})
	}
}

func testGatewaySignal(t *testing.T, backend string) {
	s, h := newSignalsSupervisor(t, nil)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "c", Type: "claude", Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	id := p.ID
	t.Cleanup(func() { _ = s.Kill(context.Background(), id) })
	waitPane(t, s, id, "idle by the screen", func(st pane.Status) bool { return st.State == pane.Idle && st.Cause == pane.CauseScreen })

	// A request in flight: busy, though the screen, drawn again, says idle.
	s.RequestStarted(id)
	waitPane(t, s, id, "busy by the gateway", func(st pane.Status) bool {
		return st.State == pane.Busy && st.Cause == pane.CauseGateway && st.Signals.InFlight == 1
	})
	if _, err := s.Send(ctx, id, api.SendRequest{Text: "draw again"}); err != nil {
		t.Fatal(err)
	}
	st := waitPane(t, s, id, "gateway vs screen counted", func(st pane.Status) bool { return st.Signals.GatewayVsScreen == 1 })
	if st.State != pane.Busy {
		t.Fatalf("the screen made a pane with a request in flight %s: %+v", st.State, st)
	}
	checkExplainInFlight(t, s, id)

	// The request ended: the screen decides, as the pane has no hook.
	s.RequestEnded(id, gateway.Answer{})
	waitPane(t, s, id, "idle by the screen", func(st pane.Status) bool {
		return st.State == pane.Idle && st.Cause == pane.CauseScreen && st.Signals.InFlight == 0
	})
	testGatewayAndHooks(t, s, id)

	got, _ := lsJSON(t, h, id)["signals"].(map[string]any)
	last, _ := got["last_screen"].(map[string]any)
	if got["last_gateway"] == nil || last["part"] != "footer" || last["rule"] != "claude-idle-footer" || last["at"] == nil {
		t.Errorf("ls --json: the last gateway signal and screen look: %v", got)
	}
	delete(got, "last_gateway")
	delete(got, "last_screen")
	b, _ := json.Marshal(got)
	want := `{"disagreements":{"gateway_vs_hook":1,"gateway_vs_screen":1,"hook_vs_screen":0},"in_flight":0}`
	if string(b) != want {
		t.Fatalf("ls --json signals: %s, want %s", b, want)
	}
}

// checkExplainInFlight: explain of pane id, one request in flight while its
// screen says idle, names the gateway and shows the screen's verdict
// overruled.
func checkExplainInFlight(t *testing.T, s *Supervisor, id string) {
	t.Helper()
	x, err := s.screens.Explain(id)
	if err != nil {
		t.Fatal(err)
	}
	if x.Signal.Kind != "gateway" || x.Pane.Signals == nil || x.Pane.Signals.InFlight != 1 || x.Pane.Signals.Disagreements.GatewayVsScreen != 1 {
		t.Fatalf("explain while in flight: %+v, signals %+v", x.Signal, x.Pane.Signals)
	}
	if x.Rules.State != "idle" || !strings.Contains(x.Rules.Overruled, "1 model request(s) of the agent are in flight at the gateway") {
		t.Fatalf("explain's screen rules while in flight: %+v", x.Rules)
	}
}

// testGatewayAndHooks: the gateway against the hooks of claude pane id,
// idle by its screen.
func testGatewayAndHooks(t *testing.T, s *Supervisor, id string) {
	ctx := context.Background()
	// A request while the last hook said idle (its turn ended): busy, and
	// counted as gateway vs hook once it lasts.
	hook := func(event string) {
		t.Helper()
		if _, err := s.Hook(ctx, id, api.HookRequest{Agent: "claude", Event: event, Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	hook("Stop")
	waitPane(t, s, id, "idle by the hook", func(st pane.Status) bool { return st.Cause == pane.CauseHook })
	s.RequestStarted(id)
	waitPane(t, s, id, "busy by the gateway", func(st pane.Status) bool { return st.State == pane.Busy && st.Cause == pane.CauseGateway })
	waitPane(t, s, id, "gateway vs hook counted", func(st pane.Status) bool { return st.Signals.GatewayVsHook == 1 })
	// A Stop while the request ends: idle by the hook once it ended.
	hook("Stop")
	if st := waitPane(t, s, id, "the hook applied", func(pane.Status) bool { return true }); st.State != pane.Busy {
		t.Fatalf("a Stop hook made a pane with a request in flight %s", st.State)
	}
	s.RequestEnded(id, gateway.Answer{})
	waitPane(t, s, id, "idle by the hook", func(st pane.Status) bool {
		return st.State == pane.Idle && st.Cause == pane.CauseHook && st.Reason == "hook:Stop" && st.Signals.InFlight == 0
	})
}

// TestGatewaySignalIgnored: requests of a pane that is gone, or not a CLI
// agent, change nothing; an ended request never takes a count below zero.
func TestGatewaySignalIgnored(t *testing.T) {
	s, h := newSignalsSupervisor(t, nil)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	s.RequestStarted(p.ID)
	s.RequestStarted("w-99")
	s.RequestEnded("w-99", gateway.Answer{})
	if st := waitPane(t, s, p.ID, "its state", func(pane.Status) bool { return true }); st.State != pane.Idle || st.Signals != (pane.Signals{}) {
		t.Fatalf("a shell pane took a request: %+v", st)
	}
	if _, ok := lsJSON(t, h, p.ID)["signals"]; ok {
		t.Fatal("ls --json shows signals for a shell pane")
	}
	c, err := s.Create(ctx, api.CreateRequest{Title: "c", Type: "claude", Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), c.ID) })
	s.RequestEnded(c.ID, gateway.Answer{})
	s.RequestStarted(c.ID)
	waitPane(t, s, c.ID, "one request in flight", func(st pane.Status) bool { return st.Signals.InFlight == 1 && st.State == pane.Busy })
}

// TestGatewaySignalEndToEnd: a model request a claude pane sends through
// the supervisor's gateway, with its own token, keeps the pane busy while
// the upstream holds it, though the screen says idle; once the upstream
// answers the screen decides again.
func TestGatewaySignalEndToEnd(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"ok"}],`+
			`"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1}}`)
	}))
	defer upstream.Close()
	env := map[string]string{"ANTHROPIC_BASE_URL": upstream.URL, "ANTHROPIC_API_KEY": "sk-ant-upstream-key"}
	s, h := newSignalsSupervisor(t, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	})
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "c", Type: "claude", Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle by the screen", func(st pane.Status) bool { return st.State == pane.Idle && st.Cause == pane.CauseScreen })
	info, err := s.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var token []byte
	waitPane(t, s, p.ID, "the stand-in's token", func(pane.Status) bool {
		token, err = os.ReadFile(filepath.Join(info.Workspace, "token"))
		return err == nil
	})

	answered := make(chan error, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, s.GatewayURL()+"/v1/messages",
			strings.NewReader(`{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}`))
		if err != nil {
			answered <- err
			return
		}
		req.Header.Set("x-api-key", string(token))
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("the gateway answered %s", resp.Status)
			}
		}
		answered <- err
	}()
	waitPane(t, s, p.ID, "busy by the gateway", func(st pane.Status) bool {
		return st.State == pane.Busy && st.Cause == pane.CauseGateway && st.Signals.InFlight == 1
	})
	if _, err := s.Send(ctx, p.ID, api.SendRequest{Text: "draw again"}); err != nil {
		t.Fatal(err)
	}
	st := waitPane(t, s, p.ID, "gateway vs screen counted", func(st pane.Status) bool { return st.Signals.GatewayVsScreen == 1 })
	if st.State != pane.Busy {
		t.Fatalf("the screen made a pane with a request in flight %s: %+v", st.State, st)
	}
	if got := lsJSON(t, h, p.ID)["signals"].(map[string]any)["in_flight"]; got != 1.0 {
		t.Fatalf("ls --json in_flight %v while the upstream holds the request", got)
	}
	close(release)
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	waitPane(t, s, p.ID, "idle by the screen", func(st pane.Status) bool {
		return st.State == pane.Idle && st.Cause == pane.CauseScreen && st.Signals.InFlight == 0
	})
}
