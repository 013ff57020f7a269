package web

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// stubPages stands in for the page in these tests: / shows the CSRF
// token as the real templates do.
func stubPages(api http.Handler, csrf func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><meta name="cicy-csrf" content="`+csrf(r)+`"><p>team</p>`)
	})
}

// recAPI records what reaches the API.
type recAPI struct {
	mu    sync.Mutex
	calls []string
	hdr   http.Header
}

func (a *recAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.calls = append(a.calls, r.Method+" "+r.URL.Path)
	a.hdr = r.Header.Clone()
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

func (a *recAPI) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

type fixture struct {
	t    *testing.T
	home string
	api  *recAPI
	srv  *Server
	ts   *httptest.Server
	log  *test.Hook
	now  *clock
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newFixture(t *testing.T, home string) *fixture {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	logger, hook := test.NewNullLogger()
	f := &fixture{t: t, home: home, api: &recAPI{}, log: hook, now: &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	srv, err := New(Config{API: f.api, Pages: stubPages, Home: home, Log: logrus.NewEntry(logger), Now: f.now.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(f.ts.Close)
	return f
}

// browser is a client with a cookie jar that does not follow redirects.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (f *fixture) get(c *http.Client, path string) (*http.Response, string) {
	f.t.Helper()
	return f.do(c, http.MethodGet, path, nil)
}

func (f *fixture) do(c *http.Client, method, path string, hdr map[string]string) (*http.Response, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, strings.NewReader("{}"))
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// login logs a new browser in and returns it with its CSRF token.
func (f *fixture) login() (*http.Client, string) {
	f.t.Helper()
	c := browser(f.t)
	resp, body := f.get(c, "/login?t="+f.srv.NewLink(0))
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	resp, body = f.get(c, "/")
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("the page after login: %d %s", resp.StatusCode, body)
	}
	m := regexp.MustCompile(`name="cicy-csrf" content="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		f.t.Fatalf("no CSRF token in the page: %s", body)
	}
	return c, m[1]
}

func TestWebLinkOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	tok := f.srv.NewLink(0)
	c := browser(t)
	resp, body := f.get(c, "/login?t="+tok)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Refresh"), "url=/") {
		t.Fatalf("first use: %d %q %s", resp.StatusCode, resp.Header.Get("Refresh"), body)
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, "cicy_session") {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || cookie.Secure {
		t.Fatalf("session cookie: %+v", cookie)
	}
	if resp, _ := f.get(c, "/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("page with the cookie: %d", resp.StatusCode)
	}
	other := browser(t)
	resp, body = f.get(other, "/login?t="+tok)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "already used") || len(resp.Cookies()) != 0 {
		t.Fatalf("second use: %d %v %s", resp.StatusCode, resp.Cookies(), body)
	}
	resp, body = f.get(other, "/login?t=forged")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not known") {
		t.Fatalf("forged link: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.get(other, "/"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("refused browser got the page: %d", resp.StatusCode)
	}
	if n := len(f.srv.Sessions().List()); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
}

func TestWebLinkExpired(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	tok := f.srv.NewLink(time.Minute)
	f.now.add(time.Minute + time.Second)
	c := browser(t)
	resp, body := f.get(c, "/login?t="+tok)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "expired") || len(resp.Cookies()) != 0 {
		t.Fatalf("expired link: %d %s", resp.StatusCode, body)
	}
}

func TestWebNoCookie(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	c := browser(t)
	for _, p := range []string{"/", "/tasks", "/static/app.js", "/api/status", "/api/panes"} {
		resp, body := f.get(c, p)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "cicy-agent web --url") {
			t.Errorf("%s without a cookie: %d %s", p, resp.StatusCode, body)
		}
	}
	resp, _ := f.do(c, http.MethodPost, "/api/panes/w-1/send", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST without a cookie: %d", resp.StatusCode)
	}
	if got := f.api.seen(); len(got) != 0 {
		t.Fatalf("the API was reached: %v", got)
	}
}

func TestWebCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	c, csrf := f.login()
	resp, _ := f.do(c, http.MethodPost, "/api/panes/w-1/send", nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST without a CSRF token: %d", resp.StatusCode)
	}
	resp, _ = f.do(c, http.MethodPost, "/api/panes/w-1/send", map[string]string{CSRFHeader: csrf + "x"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST with a wrong CSRF token: %d", resp.StatusCode)
	}
	if got := f.api.seen(); len(got) != 0 {
		t.Fatalf("the API was reached: %v", got)
	}
	resp, _ = f.do(c, http.MethodPost, "/api/panes/w-1/send", map[string]string{CSRFHeader: csrf, "X-Cicy-Forwarded-By": "x", SessionHeader: "forged"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST with the token: %d", resp.StatusCode)
	}
	if got := f.api.seen(); len(got) != 1 || got[0] != "POST /api/panes/w-1/send" {
		t.Fatalf("API calls: %v", got)
	}
	if f.api.hdr.Get("X-Cicy-Forwarded-By") != "" || f.api.hdr.Get(CSRFHeader) != "" {
		t.Fatalf("the browser's X-Cicy headers reached the API: %v", f.api.hdr)
	}
	resp, _ = f.do(c, http.MethodGet, "/api/status", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET without the token: %d", resp.StatusCode)
	}
	// The action is logged with its session's id, not its secret; the API
	// is told that id, not the one the browser sent.
	id := f.srv.Sessions().List()[0].ID
	if got := f.api.hdr.Get(SessionHeader); got != id {
		t.Fatalf("the API was told session %q, want %q", got, id)
	}
	found := false
	for _, e := range f.log.AllEntries() {
		if e.Message == "Web action" && e.Data["session"] == id && e.Data["method"] == "POST" && e.Data["path"] == "/api/panes/w-1/send" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no log line of the action with session %s", id)
	}
}

func TestWebOrigin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	c, csrf := f.login()
	for _, h := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Origin": "https://" + strings.TrimPrefix(f.ts.URL, "http://")}, // same host, other scheme
		{"Referer": "http://evil.example/page"},
	} {
		h[CSRFHeader] = csrf
		resp, _ := f.do(c, http.MethodPost, "/api/panes/w-1/send", h)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with %v: %d", h, resp.StatusCode)
		}
	}
	if got := f.api.seen(); len(got) != 0 {
		t.Fatalf("the API was reached: %v", got)
	}
	resp, _ := f.do(c, http.MethodPost, "/api/panes/w-1/send", map[string]string{CSRFHeader: csrf, "Origin": f.ts.URL})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST from the page's own origin: %d", resp.StatusCode)
	}
}

func TestWebCookieFromAnotherHome(t *testing.T) {
	t.Parallel()
	a, b := newFixture(t, ""), newFixture(t, "")
	ca, _ := a.login()
	u, _ := url.Parse(a.ts.URL)
	cookies := ca.Jar.Cookies(u)
	if len(cookies) != 1 {
		t.Fatalf("cookies: %v", cookies)
	}
	// The same secret, under home b's cookie name, sent to home b.
	req, _ := http.NewRequest(http.MethodGet, b.ts.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: b.srv.cookie, Value: cookies[0].Value})
	req.AddCookie(cookies[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another home's cookie: %d", resp.StatusCode)
	}
	if a.srv.cookie == b.srv.cookie {
		t.Fatalf("two homes share the cookie name %s", a.srv.cookie)
	}
}

func TestWebRevoke(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	c1, _ := f.login()
	c2, _ := f.login()
	list := f.srv.Sessions().List()
	if len(list) != 2 {
		t.Fatalf("sessions: %+v", list)
	}
	if n, err := f.srv.Sessions().Revoke(list[0].ID); err != nil || n != 1 {
		t.Fatalf("revoke: %d %v", n, err)
	}
	codes := func() (int, int) {
		r1, _ := f.get(c1, "/")
		r2, _ := f.get(c2, "/")
		return r1.StatusCode, r2.StatusCode
	}
	// Which browser had list[0] is not known here: one of them is out.
	s1, s2 := codes()
	if (s1 == 401) == (s2 == 401) {
		t.Fatalf("after revoking one: %d %d", s1, s2)
	}
	if _, err := f.srv.Sessions().Revoke("nope"); !errors.Is(err, ErrNoSession) {
		t.Fatalf("revoke of an unknown id: %v", err)
	}
	if n, err := f.srv.Sessions().Revoke("all"); err != nil || n != 1 {
		t.Fatalf("revoke all: %d %v", n, err)
	}
	if s1, s2 := codes(); s1 != 401 || s2 != 401 {
		t.Fatalf("after revoking all: %d %d", s1, s2)
	}
}

func TestWebSessionsSurviveRestart(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	f := newFixture(t, home)
	c, csrf := f.login()
	path := filepath.Join(home, "web", "sessions.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("sessions file mode %04o", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	u, _ := url.Parse(f.ts.URL)
	secret := c.Jar.Cookies(u)[0].Value
	if bytes.Contains(b, []byte(secret)) {
		t.Fatal("the sessions file holds the cookie's secret")
	}
	var kept []Session
	if err := json.Unmarshal(b, &kept); err != nil || len(kept) != 1 || kept[0].Hash == "" {
		t.Fatalf("sessions file: %v %s", err, b)
	}
	f.ts.Close()

	g := newFixture(t, home) // the supervisor again
	req, _ := http.NewRequest(http.MethodPost, g.ts.URL+"/api/panes/w-1/send", nil)
	req.AddCookie(&http.Cookie{Name: g.srv.cookie, Value: secret})
	req.Header.Set(CSRFHeader, csrf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after a restart: %d", resp.StatusCode)
	}
}

func TestWebExcludedRoutes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	c, csrf := f.login()
	for _, p := range []struct{ method, path string }{
		{"POST", "/api/shutdown"},
		{"GET", "/api/panes/w-1/attach"},
		{"POST", "/api/panes/w-1/hook"},
		{"POST", "/api/web/links"},
		{"GET", "/api/web/sessions"},
		{"DELETE", "/api/web/sessions/all"},
		{"GET", "/api/events?local=1"},
		{"POST", "/api/panes/w-1/../../shutdown"},
		{"POST", "/api/panes/w-1%2Fhook"},
	} {
		req, _ := http.NewRequest(p.method, f.ts.URL+p.path, nil)
		req.URL.Opaque = "" // keep the path as written
		if strings.Contains(p.path, "..") || strings.Contains(p.path, "%2F") {
			req.URL, _ = url.Parse(f.ts.URL)
			req.URL.Opaque = "//" + req.URL.Host + p.path
		}
		req.Header.Set(CSRFHeader, csrf)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", p.method, p.path, resp.StatusCode)
		}
	}
	if got := f.api.seen(); len(got) != 0 {
		t.Fatalf("the API was reached: %v", got)
	}
}

func TestWebHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	c, _ := f.login()
	for _, p := range []string{"/", "/api/status", "/login?t=x"} {
		resp, _ := f.get(c, p)
		for k, v := range map[string]string{
			"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
			"Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
		} {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", p, k, got, v)
			}
		}
	}
	resp, _ := f.get(browser(t), "/")
	if resp.Header.Get("Content-Security-Policy") != CSP {
		t.Errorf("the 401 page has no CSP")
	}
}

func TestWebListenNeedsTLS(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	_, err := Open(home, Listen{Addr: "0.0.0.0:0"})
	if !errors.Is(err, ErrNeedsTLS) {
		t.Fatalf("beyond loopback without TLS: %v", err)
	}
	ln, err := Open(home, Listen{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !strings.HasPrefix(ln.URL, "http://127.0.0.1:") || ln.Fingerprint != "" {
		t.Fatalf("loopback: %s %q", ln.URL, ln.Fingerprint)
	}
}

func TestWebOwnCertOnce(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ln, err := Open(home, Listen{Addr: "127.0.0.1:0", TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	first := ln.Fingerprint
	ln.Close()
	certFile, keyFile := OwnCertFiles(home)
	for _, p := range []string{certFile, keyFile} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, err, st)
		}
	}
	ln, err = Open(home, Listen{Addr: "127.0.0.1:0", TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.Fingerprint != first || !strings.HasPrefix(ln.URL, "https://127.0.0.1:") {
		t.Fatalf("second start: %s %s, first %s", ln.URL, ln.Fingerprint, first)
	}
	// The certificate served is the one whose fingerprint is printed, and
	// the cookie is Secure over TLS.
	f := newFixture(t, home)
	srv := &http.Server{Handler: f.srv.Handler()}
	go srv.Serve(ln)
	defer srv.Close()
	c := browser(t)
	var seen string
	c.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, VerifyConnection: func(cs tls.ConnectionState) error {
		seen = Fingerprint(cs.PeerCertificates[0].Raw)
		return nil
	}}}
	resp, err := c.Get(ln.URL + "/login?t=" + f.srv.NewLink(0))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if seen != first {
		t.Fatalf("served certificate %s, printed %s", seen, first)
	}
	if ck := resp.Cookies(); len(ck) != 1 || !ck[0].Secure {
		t.Fatalf("cookie over TLS: %+v", ck)
	}
}

// streamAPI holds every event stream open until its client goes.
type streamAPI struct{}

func (streamAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestWebStreamsBounded: live views are bounded per browser and in all
// (503 beyond, saying why); one closed makes room.
func TestWebStreamsBounded(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv, err := New(Config{API: streamAPI{}, Pages: stubPages, Home: home, MaxStreams: 3, MaxSessionStreams: 2})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	login := func() *http.Client {
		c := browser(t)
		resp, err := c.Get(ts.URL + "/login?t=" + srv.NewLink(0))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("login: %v %v", resp, err)
		}
		resp.Body.Close()
		return c
	}
	open := func(c *http.Client, path string) (int, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return resp.StatusCode, func() { cancel(); resp.Body.Close() }
	}
	a, b := login(), login()
	codeA1, closeA1 := open(a, "/api/events")
	codeA2, closeA2 := open(a, "/api/panes/w-1/preview")
	defer closeA2()
	codeA3, closeA3 := open(a, "/api/events")
	closeA3()
	codeB1, closeB1 := open(b, "/api/events")
	defer closeB1()
	codeB2, closeB2 := open(b, "/api/events")
	closeB2()
	if codeA1 != 200 || codeA2 != 200 || codeB1 != 200 {
		t.Fatalf("streams within the bounds: %d %d %d", codeA1, codeA2, codeB1)
	}
	if codeA3 != http.StatusServiceUnavailable || codeB2 != http.StatusServiceUnavailable {
		t.Fatalf("a third stream of one browser: %d, a fourth in all: %d; want 503 each", codeA3, codeB2)
	}
	closeA1()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, done := open(b, "/api/events")
		done()
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stream closed made no room: %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
