package front

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// testPages stands in for the page: it says "team".
func testPages(http.Handler, func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "team") })
}

// rig is a front on a home and a real SQLite store of its own.
type rig struct {
	home  string
	store *schema.Store
	api   http.Handler
}

func newRig(t *testing.T) *rig {
	t.Helper()
	home := t.TempDir()
	st, err := schema.Open(context.Background(), filepath.Join(home, "db", "cicy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &rig{home: home, store: st}
}

func (r *rig) front(t *testing.T, pages PagesFunc) *Front {
	t.Helper()
	f := New(Config{Home: r.home, Store: r.store, Key: "web", Pages: pages, Log: logrus.NewEntry(logrus.New())})
	f.SetAPI(r.api)
	t.Cleanup(f.Close)
	return f
}

func (r *rig) kept(t *testing.T) string {
	t.Helper()
	v, _, err := r.store.Setting(context.Background(), "web")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFrontRefusesUntilReady: no page in the build, or no API yet, is
// refused with what to do; nothing is kept.
func TestFrontRefusesUntilReady(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	var apiErr *api.Error
	if _, err := r.front(t, nil).Start(ctx, Web{}); !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "no web page") {
		t.Fatalf("no pages: %v", err)
	}
	if _, err := r.front(t, testPages).Start(ctx, Web{}); !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "still starting") {
		t.Fatalf("no API yet: %v", err)
	}
	if v := r.kept(t); v != "" {
		t.Fatalf("kept after refusals: %q", v)
	}
}

// TestFrontKeptAcrossStarts: a page served on 127.0.0.1:0 is kept with
// the port chosen; the next front boots it there, its session still
// valid; Stop forgets it, so the one after serves nothing.
func TestFrontKeptAcrossStarts(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.api = http.NotFoundHandler()
	ctx := context.Background()
	f := r.front(t, testPages)
	if err := f.Boot(ctx, Web{Addr: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	st := f.Status()
	var kept Web
	if err := json.Unmarshal([]byte(r.kept(t)), &kept); err != nil || !st.Running || !strings.HasSuffix(st.URL, kept.Addr) || strings.HasSuffix(kept.Addr, ":0") {
		t.Fatalf("status %+v, kept %+v %v", st, kept, err)
	}
	link, err := f.Link(0)
	if err != nil || !strings.HasPrefix(link.URL, st.URL+"/login?t=") {
		t.Fatalf("link: %+v %v", link, err)
	}
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar}
	if code := get(t, b, link.URL); code != http.StatusOK {
		t.Fatalf("login: %d", code)
	}
	f.Close()

	g := r.front(t, testPages)
	if ss, err := g.Sessions(); err != nil || len(ss) != 1 {
		t.Fatalf("sessions kept while not served: %+v %v", ss, err)
	}
	if err := g.Boot(ctx, Web{}); err != nil {
		t.Fatal(err)
	}
	if st2 := g.Status(); st2.URL != st.URL {
		t.Fatalf("booted at %s, was %s", st2.URL, st.URL)
	}
	if code := get(t, b, st.URL+"/"); code != http.StatusOK {
		t.Fatalf("the session after a new start: %d", code)
	}
	if st3, err := g.Stop(ctx); err != nil || st3.Running || r.kept(t) != "" {
		t.Fatalf("stop: %+v %v, kept %q", st3, err, r.kept(t))
	}
	g.Close()

	h := r.front(t, testPages)
	if err := h.Boot(ctx, Web{}); err != nil || h.Status().Running {
		t.Fatalf("served after a stop: %+v %v", h.Status(), err)
	}
}

func get(t *testing.T, c *http.Client, u string) int {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSocketOnly: /api/web and below are refused (404), the rest passes.
func TestSocketOnly(t *testing.T) {
	t.Parallel()
	h := SocketOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }),
		func(w http.ResponseWriter, err error) {
			var e *api.Error
			if errors.As(err, &e) {
				w.WriteHeader(e.Status())
			}
		})
	for path, want := range map[string]int{"/api/web": 404, "/api/web/sessions": 404, "/api/webx": 418, "/api/status": 418} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != want {
			t.Errorf("%s: %d, want %d", path, w.Code, want)
		}
	}
}
