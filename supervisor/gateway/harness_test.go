package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/fakellm"
	"github.com/sirupsen/logrus"
)

const (
	paneToken = "cicy-pane-token-0123456789abcdef"
	paneID    = "w-7"
	anthKey   = "sk-ant-REAL-KEY-never-in-a-pane"
	openaiKey = "sk-REAL-OPENAI-never-in-a-pane"
	geminiKey = "AIza-REAL-GEMINI-never-in-a-pane"
)

// panes maps tokens to pane ids.
type panes map[string]string

func (p panes) Pane(tok string) (string, bool) { id, ok := p[tok]; return id, ok }

// Speaks: every pane of the harness speaks every API (the supervisor's
// panes are scoped: see its TestTokenScopedToItsAPI).
func (p panes) Speaks(string, API) bool { return true }

// recorder keeps the recorded calls.
type recorder struct {
	mu    sync.Mutex
	calls []Call
}

func (r *recorder) Record(_ context.Context, c Call) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	return nil
}

func (r *recorder) all() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// wait polls until n calls are recorded and returns the n-th.
func (r *recorder) wait(t *testing.T, n int) Call {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cs := r.all(); len(cs) >= n {
			return cs[n-1]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("call %d never recorded; have %+v", n, r.all())
	return Call{}
}

// activity counts main-loop starts and ends, and keeps the answers.
type activity struct {
	started, ended atomic.Int32
	mu             sync.Mutex
	answers        []Answer
}

func (a *activity) RequestStarted(pane string) { a.started.Add(1) }
func (a *activity) RequestEnded(pane string, ans Answer) {
	a.mu.Lock()
	a.answers = append(a.answers, ans)
	a.mu.Unlock()
	a.ended.Add(1)
}

// last is the newest answer told.
func (a *activity) last() (Answer, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.answers) == 0 {
		return Answer{}, false
	}
	return a.answers[len(a.answers)-1], true
}

// budget refuses the panes it holds a sentence for, and keeps what it
// was asked to reserve and was told was refused.
type budget struct {
	mu      sync.Mutex
	why     map[string]string
	refused []string
	asked   []Ask
}

func (b *budget) Refused(pane, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refused = append(b.refused, pane+": "+why)
}

func (b *budget) told() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.refused...)
}

func (b *budget) Reserve(pane string, ask Ask) (func(), string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, ask)
	return func() {}, b.why[pane]
}

// asks are the reservations asked for, oldest first.
func (b *budget) asks() []Ask {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Ask(nil), b.asked...)
}

func (b *budget) refuse(pane, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.why == nil {
		b.why = map[string]string{}
	}
	b.why[pane] = why
}

// tap is a recording reverse proxy in front of fakellm: it keeps the
// bytes of every answer the upstream sent, and counts the upstream
// requests still open.
type tap struct {
	fake   *fakellm.Server
	url    string
	mu     sync.Mutex
	bodies []*syncBuf
	open   atomic.Int32
	errs   syncBuf // what its proxy logged
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

type teeBody struct {
	io.ReadCloser
	w io.Writer
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	_, _ = t.w.Write(p[:n])
	return n, err
}

func startTap(t *testing.T) *tap {
	t.Helper()
	fake, err := fakellm.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	u, _ := url.Parse(fake.URL)
	tp := &tap{fake: fake}
	rp := httputil.NewSingleHostReverseProxy(u)
	// A transport of its own: no connection kept from another test's
	// fake (a port can come again) is ever reused.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	rp.Transport = tr
	rp.ErrorLog = log.New(&tp.errs, "", 0)
	rp.ModifyResponse = func(resp *http.Response) error {
		b := &syncBuf{}
		tp.mu.Lock()
		tp.bodies = append(tp.bodies, b)
		tp.mu.Unlock()
		resp.Body = teeBody{resp.Body, b}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp.open.Add(1)
		defer tp.open.Add(-1)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	tp.url = "http://" + ln.Addr().String()
	return tp
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// body is the n-th (1-based) answer body the upstream sent.
func (tp *tap) body(t *testing.T, n int) []byte {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.bodies) < n {
		t.Fatalf("upstream sent %d answers, want %d", len(tp.bodies), n)
	}
	return tp.bodies[n-1].Bytes()
}

// rig is a gateway in front of a tap.
type rig struct {
	gw   *Gateway
	tap  *tap
	rec  *recorder
	act  *activity
	bud  *budget
	logs *syncBuf
}

func startRig(t *testing.T, creds map[string]string) *rig {
	t.Helper()
	tp := startTap(t)
	return startRigTo(t, tp, Upstreams{Anthropic: tp.url, OpenAI: tp.url + "/v1", Gemini: tp.url}, creds)
}

func startRigTo(t *testing.T, tp *tap, up Upstreams, creds map[string]string) *rig {
	t.Helper()
	return startRigCfg(t, tp, up, creds, nil)
}

// startRigCfg is startRigTo with the gateway's config changed by tweak.
func startRigCfg(t testing.TB, tp *tap, up Upstreams, creds map[string]string, tweak func(*Config)) *rig {
	t.Helper()
	if creds == nil {
		creds = map[string]string{"ANTHROPIC_API_KEY": anthKey, "OPENAI_API_KEY": openaiKey, "GEMINI_API_KEY": geminiKey}
	}
	logs := &syncBuf{}
	l := logrus.New()
	l.SetOutput(logs)
	l.SetLevel(logrus.DebugLevel)
	rg := &rig{tap: tp, rec: &recorder{}, act: &activity{}, bud: &budget{}, logs: logs}
	cfg := Config{
		Upstreams:  up,
		Credential: func(name string) string { return creds[name] },
		Panes:      panes{paneToken: paneID},
		Usage:      rg.rec,
		Activity:   rg.act,
		Budget:     rg.bud,
		Log:        logrus.NewEntry(l),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // runs after the gateway is closed
		for _, secret := range []string{paneToken, anthKey, openaiKey, geminiKey} {
			if strings.Contains(logs.b.String(), secret) {
				t.Errorf("a log line holds a secret:\n%s", logs.b.String())
			}
		}
	})
	serveUntilCleanup(t, gw)
	rg.gw = gw
	return rg
}

var client = &http.Client{Timeout: 20 * time.Second}

// post sends body to the gateway path with header and returns the
// response and its whole body.
func (rg *rig) post(t *testing.T, path string, header http.Header, body any) (*http.Response, []byte) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, rg.gw.URL()+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return resp, got
}

// serveUntilCleanup serves gw until the test ends, then closes it and
// checks that both Close and Serve ended cleanly.
func serveUntilCleanup(t testing.TB, gw *Gateway) {
	t.Helper()
	served := make(chan error, 1)
	go func() { served <- gw.Serve() }()
	t.Cleanup(func() {
		if err := gw.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}
