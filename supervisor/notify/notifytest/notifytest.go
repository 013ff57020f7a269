// Package notifytest has fake sinks for tests, each an HTTP server on
// 127.0.0.1 in the test process: a webhook, an ntfy server, a Slack
// incoming webhook (all three a Recorder) and the Telegram Bot API
// (sendMessage, getUpdates with real long polling, answerCallbackQuery).
// Only tests import it.
package notifytest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request a fake received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the request's body into a map, failing the test if it is
// not a JSON object.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body is not a JSON object: %v: %q", err, r.Body)
	}
	return m
}

// Recorder is a fake webhook, ntfy server or Slack incoming webhook: it
// records each request and answers 200 with its kind's body, or what
// Fail and Hang tell it.
type Recorder struct {
	URL string // where to send: the webhook, the ntfy topic, the Slack hook

	srv    *httptest.Server
	answer func(Request) string
	closed chan struct{}

	mu         sync.Mutex
	reqs       []Request
	changed    chan struct{}
	failN      int
	failStatus int
	hang       time.Duration
}

// NewWebhook is a fake webhook at URL (…/hook), answering "ok".
func NewWebhook(t testing.TB) *Recorder {
	return newRecorder(t, "/hook", func(Request) string { return "ok" })
}

// NewNtfy is a fake ntfy server; URL is a topic on it (…/cicy-alerts).
// It answers as ntfy does, the published message as JSON.
func NewNtfy(t testing.TB) *Recorder {
	return newRecorder(t, "/cicy-alerts", func(r Request) string {
		b, _ := json.Marshal(map[string]any{"id": "fakeid", "time": time.Now().Unix(), "event": "message",
			"topic": strings.TrimPrefix(r.Path, "/"), "title": r.Header.Get("Title"), "message": string(r.Body)})
		return string(b)
	})
}

// NewSlack is a fake Slack incoming webhook (URL is …/services/T…/B…/X…,
// the secret an incoming webhook's URL is), answering "ok".
func NewSlack(t testing.TB) *Recorder {
	return newRecorder(t, "/services/T0FAKE/B0FAKE/xoxfakeSlackHookSecret42", func(Request) string { return "ok" })
}

func newRecorder(t testing.TB, path string, answer func(Request) string) *Recorder {
	r := &Recorder{answer: answer, closed: make(chan struct{}), changed: make(chan struct{})}
	r.srv = newServer(t, http.HandlerFunc(r.serve), r.closed)
	r.URL = r.srv.URL + path
	return r
}

// newServer starts the handler on 127.0.0.1 and closes it at the test's
// end, releasing hanging handlers first.
func newServer(t testing.TB, h http.Handler, closed chan struct{}) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(func() {
		close(closed)
		srv.Close()
	})
	return srv
}

// Fail makes the next n requests answer status (with a short body).
func (r *Recorder) Fail(n, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failN, r.failStatus = n, status
}

// Hang makes each request wait d (or until its client gives up) before
// it is answered; 0 answers at once again.
func (r *Recorder) Hang(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hang = d
}

func (r *Recorder) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	rec := Request{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body}
	r.mu.Lock()
	r.reqs = append(r.reqs, rec)
	close(r.changed)
	r.changed = make(chan struct{})
	hang, status := r.hang, 0
	if r.failN > 0 {
		r.failN--
		status = r.failStatus
	}
	r.mu.Unlock()
	if hang > 0 {
		select {
		case <-time.After(hang):
		case <-req.Context().Done():
			return
		case <-r.closed:
			return
		}
	}
	if status != 0 {
		http.Error(w, "fake failure "+http.StatusText(status), status)
		return
	}
	_, _ = io.WriteString(w, r.answer(rec))
}

// Requests are the requests received so far, in order.
func (r *Recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Wait returns the requests once there are at least n, failing the test
// if they do not come within timeout.
func (r *Recorder) Wait(t testing.TB, n int, timeout time.Duration) []Request {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		reqs, changed := append([]Request(nil), r.reqs...), r.changed
		r.mu.Unlock()
		if len(reqs) >= n {
			return reqs
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%d requests within %s, want %d", len(reqs), timeout, n)
		}
	}
}

// VerifySignature says whether header ("sha256=<hex>") is the
// HMAC-SHA256 of body under secret, as a webhook's receiver checks it.
func VerifySignature(body []byte, secret, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}
