package supervisor

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Where a CLI worker's task result and failure come from: the gateway's
// last answer of the task's turn, the agent's hook, its screen's
// transcript only when neither has one (docs/gateway.md).

// standInSilent is a program named claude that calls no hook and, for
// each line typed, draws Claude Code's busy screen at once (spinner line,
// the busy footer), works four seconds (the screen rules look
// a second after typed input), then draws its answer above the
// idle composer. The screen is drawn afresh each time, its transcript
// kept.
const standInSilent = "#!/bin/sh\nD=4\n" +
	"R=────────────────────────────────────────\nT=''\n" +
	"draw() { printf '\\033[2J\\033[H%s\\n%s\\n%s\\n❯ \\n%s\\n  %s ' \"$T\" \"$1\" \"$R\" \"$R\" \"$2\"; }\n" +
	"draw '' '? for shortcuts'\n" +
	"while IFS= read -r line; do\n" +
	"  T=\"$T\n❯ $line\"\n" +
	"  draw '✻ Working…' 'esc to interrupt'\n" +
	"  sleep $D\n" +
	"  T=\"$T\n● ANSWER-OK from the stand-in\"\n" +
	"  draw '' '? for shortcuts'\n" +
	"done\n"

// waitTask polls task id until it ends.
func waitTask(t testing.TB, s *Supervisor, id int64, d time.Duration) schema.Task {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		task, err := s.store.GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if api.Ended(task.Status) {
			return task
		}
		if time.Now().After(deadline) {
			sc, _ := s.Screen(task.To, 0)
			st, _ := s.Get(task.To)
			t.Fatalf("task %d still %s (%s) after %s; %s is %s (%s); its screen:\n%s", id, task.Status, task.Reason, d, task.To, st.State, st.Reason, sc.Screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHookSilentAgentTakesTask: an agent that never calls a hook and draws
// its busy screen at once — so the pane stays busy by the typed input —
// takes the task up by that screen, and ends it when its screen is idle
// again; the result is the transcript after the typed task, no chrome.
// A turn shorter than the screen rules' grace after typed input (0.3 s)
// is taken up and ended too: its busy look was seen. (Not run beside the
// package's parallel tests: a 0.3 s turn's busy look went unseen once
// under their load, and the task never ended.)
func TestHookSilentAgentTakesTask(t *testing.T) {
	for _, c := range []struct{ backend, turn string }{{"pty", "4"}, {"tmux", "4"}, {"pty", "0.3"}, {"tmux", "0.3"}} {
		backend := c.backend
		t.Run(backend+"-"+c.turn, func(t *testing.T) {
			if backend == "tmux" && !pane.TmuxAvailable() {
				t.Fatal("tmux 3.0 or newer is needed (the CI installs it)")
			}
			s, _ := newStandInSupervisor(t, nil, strings.Replace(standInSilent, "D=4", "D="+c.turn, 1))
			ctx := context.Background()
			p, err := s.Create(ctx, api.CreateRequest{Title: "silent", Type: "claude", Backend: backend})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
			waitPane(t, s, p.ID, "idle by the screen", func(st pane.Status) bool { return st.State == pane.Idle })
			task, err := s.Dispatch(ctx, "", p.ID, "say the answer")
			if err != nil {
				t.Fatal(err)
			}
			// Without a hook the confirmation waited 60 s, then failed.
			got := waitTask(t, s, task.ID, 30*time.Second)
			if got.Status != api.TaskDone || got.Source != schema.SourceScreen {
				t.Fatalf("task: %s from %q (%s) %s", got.Status, got.Source, got.Reason, got.Error)
			}
			if !strings.Contains(got.Result, "ANSWER-OK from the stand-in") {
				t.Errorf("result %q lacks the answer", got.Result)
			}
			for _, chrome := range []string{"? for shortcuts", "esc to interrupt", "────", "say the answer"} {
				if strings.Contains(got.Result, chrome) {
					t.Errorf("result %q holds %q, not the transcript after the task", got.Result, chrome)
				}
			}
		})
	}
}

// scripted is an upstream answering each request with the next of its
// answers (status and body), the last one again once they run out.
type scripted struct {
	mu      sync.Mutex
	answers []cannedAnswer
	n       int
	hold    time.Duration // each answer waits this long
}

type cannedAnswer struct {
	status int
	body   string
}

func (u *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	a := u.answers[min(u.n, len(u.answers)-1)]
	u.n++
	hold := u.hold
	u.mu.Unlock()
	time.Sleep(hold)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// count is how many requests it answered.
func (u *scripted) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

func (u *scripted) then(a ...cannedAnswer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.answers, u.n = a, 0
}

func textAnswer(text string) cannedAnswer {
	return cannedAnswer{200, `{"id":"m","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"` + text + `"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":3}}`}
}

var rateLimited = cannedAnswer{429, `{"type":"error","error":{"type":"rate_limit_error","message":"quota exhausted for key sk-ant-REAL-secret"}}`}

// truthRig is a supervisor whose gateway forwards to a scripted upstream,
// with one stand-in claude pane that plays its part by the test's hand:
// the test sends its hooks and its model requests with its token.
type truthRig struct {
	t     testing.TB
	s     *Supervisor
	up    *scripted
	id    string
	token string
}

func newTruthRig(t testing.TB) *truthRig {
	t.Helper()
	up := &scripted{answers: []cannedAnswer{textAnswer("unused")}}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "sk-ant-REAL-secret"}
	s, _ := newSignalsSupervisor(t, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	})
	p, err := s.Create(context.Background(), api.CreateRequest{Title: "c", Type: "claude", Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	info, err := s.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var tok []byte
	for deadline := time.Now().Add(10 * time.Second); len(tok) == 0; time.Sleep(20 * time.Millisecond) {
		tok, _ = os.ReadFile(filepath.Join(info.Workspace, "token"))
		if time.Now().After(deadline) {
			t.Fatal("the stand-in never kept its token")
		}
	}
	return &truthRig{t: t, s: s, up: up, id: p.ID, token: string(tok)}
}

func (r *truthRig) hook(event, payload string) {
	r.t.Helper()
	if _, err := r.s.Hook(context.Background(), r.id, api.HookRequest{Agent: "claude", Event: event, Payload: []byte(payload)}); err != nil {
		r.t.Fatal(err)
	}
}

// request makes one main-loop model request as the agent does.
func (r *truthRig) request() int {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.s.GatewayURL()+"/v1/messages",
		strings.NewReader(`{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("x-api-key", r.token)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// task dispatches text and waits until it is delivered.
func (r *truthRig) task(text string) int64 {
	r.t.Helper()
	task, err := r.s.Dispatch(context.Background(), "", r.id, text)
	if err != nil {
		r.t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, _ := r.s.store.GetTask(context.Background(), task.ID)
		if got.Status != api.TaskQueued {
			break
		}
		if time.Now().After(deadline) {
			e, _ := r.s.get(r.id)
			sc, _ := e.kind().Screen()
			r.t.Fatalf("task %d never delivered (%s): %+v\n%s", task.ID, got.Reason, e.status(), sc)
		}
	}
	// The agent has it once the stand-in answered the typed line.
	waitPane(r.t, r.s, r.id, "the typed task read", func(pane.Status) bool {
		e, _ := r.s.get(r.id)
		sc, _ := e.kind().Screen()
		return strings.Contains(sc, fmt.Sprintf("did task %d: %s", task.ID, text))
	})
	return task.ID
}

// needs is the pane's needs-you entry of kind, if any.
func (r *truthRig) needs(kind string) (topology.Attention, bool) {
	st, err := r.s.Status(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, n := range st.NeedsYou {
		if n.ID == r.id && n.Kind == kind {
			return n, true
		}
	}
	return topology.Attention{}, false
}

// awaitNeeds is needs(kind) once it is there (want) or gone (!want), or
// after 10 s: the gateway records a request's outcome as its answer ends,
// which the client may have read a moment before.
func (r *truthRig) awaitNeeds(kind string, want bool) (topology.Attention, bool) {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, ok := r.needs(kind)
		if ok == want || time.Now().After(deadline) {
			return n, ok
		}
	}
}

// TestCLIResultFromTheWire: the gateway's last answer of the turn is the
// task's result, over the hook's message; without a request the hook's;
// a turn whose last request failed upstream fails the task with the
// upstream's status and message, the key scrubbed; two failures in a row
// make the pane need you (upstream) until a request succeeds.
func TestCLIResultFromTheWire(t *testing.T) {
	r := newTruthRig(t)

	// The gateway's answer wins over the hook's message.
	id := r.task("write the report")
	r.hook("UserPromptSubmit", `{}`)
	r.up.then(textAnswer("tool first"), textAnswer("Report written to out.md"))
	r.request()
	r.request()
	r.hook("Stop", `{"last_assistant_message":"the hook's copy"}`)
	got := waitTask(t, r.s, id, 20*time.Second)
	if got.Status != api.TaskDone || got.Result != "Report written to out.md" || got.Source != schema.SourceGateway {
		t.Fatalf("task: %s %q from %q %s", got.Status, got.Result, got.Source, got.Error)
	}

	// No model request in the turn: the hook's message.
	id = r.task("answer from memory")
	r.hook("UserPromptSubmit", `{}`)
	r.hook("Stop", `{"last_assistant_message":"from the hook"}`)
	if got = waitTask(t, r.s, id, 20*time.Second); got.Status != api.TaskDone || got.Result != "from the hook" || got.Source != schema.SourceHook {
		t.Fatalf("task: %s %q from %q", got.Status, got.Result, got.Source)
	}

	// The turn's last request failed upstream, the agent ended its turn
	// plainly (as Codex does): failed, with the upstream's word.
	id = r.task("do it again")
	r.hook("UserPromptSubmit", `{}`)
	// The upstream echoes the key and the pane's token, as some proxies do.
	echo := cannedAnswer{429, `{"type":"error","error":{"type":"rate_limit_error","message":"quota exhausted for key sk-ant-REAL-secret (sent ` + r.token + `)"}}`}
	r.up.then(textAnswer("working"), echo)
	r.request()
	if code := r.request(); code != 429 {
		t.Fatalf("the failing request answered %d", code)
	}
	if _, ok := r.needs(topology.NeedUpstream); ok {
		t.Fatal("one failure after a success already needs you")
	}
	r.hook("Stop", `{"last_assistant_message":"looks fine to me"}`)
	got = waitTask(t, r.s, id, 20*time.Second)
	if got.Status != api.TaskFailed || got.Source != schema.SourceGateway || !strings.Contains(got.Error, "429") ||
		!strings.Contains(got.Error, "rate_limit_error: quota exhausted") || strings.Contains(got.Error, "sk-ant-REAL-secret") ||
		strings.Contains(got.Error, r.token) {
		t.Fatalf("task: %s from %q: %q", got.Status, got.Source, got.Error)
	}

	// A second failure in a row: the pane needs you, kind upstream, with
	// the error; a success clears it.
	r.request()
	n, ok := r.awaitNeeds(topology.NeedUpstream, true)
	if !ok || !strings.Contains(n.Reason, "2 model requests in a row failed") || !strings.Contains(n.Reason, "429") || strings.Contains(n.Reason, "sk-ant-REAL") {
		t.Fatalf("needs you: %+v, %v", n, ok)
	}
	r.up.then(textAnswer("back"))
	r.request()
	if n, ok := r.awaitNeeds(topology.NeedUpstream, false); ok {
		t.Fatalf("a success did not clear it: %+v", n)
	}
}

// TestTokenScopedToItsAPI: a Claude Code pane's token is good for the
// Anthropic routes only: sent to an OpenAI route it is refused, and the
// OpenAI key is never used for it.
func TestTokenScopedToItsAPI(t *testing.T) {
	r := newTruthRig(t)
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		req, _ := http.NewRequest(http.MethodPost, r.s.GatewayURL()+path, strings.NewReader(`{"model":"gpt-5","input":"go","messages":[{"role":"user","content":"go"}]}`))
		req.Header.Set("Authorization", "Bearer "+r.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "is not for "+path) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
	if code := r.request(); code != http.StatusOK {
		t.Fatalf("its own API: %d", code)
	}
	if n := r.up.count(); n != 1 {
		t.Fatalf("the upstream got %d requests, want only the Anthropic one", n)
	}
}
