package supervisor

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/web"
)

// testPages stands in for the page: / shows the CSRF token.
func testPages(_ http.Handler, csrf func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<meta name="cicy-csrf" content="`+csrf(r)+`">team`)
	})
}

func webGet(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWebServedWithTheSupervisor: serve --web serves the page; a link
// minted on the socket logs a browser in; the browser reaches the API but
// not the socket's own routes; the page comes back on the same port with
// its sessions after a restart without --web; revoke ends the session.
func TestWebServedWithTheSupervisor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := Home{Root: filepath.Join(t.TempDir(), "home")}
	cfg := Config{Web: Web{Addr: "127.0.0.1:0"}, WebPages: testPages}
	c, stop := serveUntil(t, home, cfg)
	if c == nil {
		t.Fatalf("supervisor did not start: %v", stop())
	}
	st, err := c.WebStatus(ctx)
	if err != nil || !st.Running || !strings.HasPrefix(st.URL, "http://127.0.0.1:") {
		t.Fatalf("web status: %+v %v", st, err)
	}
	link, err := c.WebLink(ctx, api.WebLinkRequest{})
	if err != nil || !strings.HasPrefix(link.URL, st.URL+"/login?t=") {
		t.Fatalf("link: %+v %v", link, err)
	}
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar}
	if code, body := webGet(t, b, link.URL); code != http.StatusOK || !strings.Contains(body, "team") {
		t.Fatalf("login: %d %s", code, body)
	}
	if code, body := webGet(t, b, st.URL+"/api/status"); code != http.StatusOK || !strings.Contains(body, `"masters"`) {
		t.Fatalf("API through the page: %d %s", code, body)
	}
	for _, p := range []string{"/api/web/sessions", "/api/web"} {
		if code, _ := webGet(t, b, st.URL+p); code != http.StatusNotFound {
			t.Fatalf("%s through the page: %d", p, code)
		}
	}
	_, body := webGet(t, b, st.URL+"/")
	csrf := regexp.MustCompile(`content="([^"]+)"`).FindStringSubmatch(body)[1]
	req, _ := http.NewRequest(http.MethodPost, st.URL+"/api/shutdown", nil)
	req.Header.Set(web.CSRFHeader, csrf)
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("shutdown through the page: %d", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	c, stop = serveUntil(t, home, Config{WebPages: testPages}) // no --web: kept
	if c == nil {
		t.Fatalf("supervisor did not start again: %v", stop())
	}
	defer stop()
	st2, err := c.WebStatus(ctx)
	if err != nil || !st2.Running || st2.URL != st.URL {
		t.Fatalf("after a restart: %+v %v (was %s)", st2, err, st.URL)
	}
	if code, _ := webGet(t, b, st.URL+"/"); code != http.StatusOK {
		t.Fatalf("the session after a restart: %d", code)
	}
	ss, err := c.WebSessions(ctx)
	if err != nil || len(ss) != 1 || ss[0].ID == "" {
		t.Fatalf("sessions: %+v %v", ss, err)
	}
	var apiErr *api.Error
	if _, err := c.WebRevoke(ctx, "nope"); !errors.As(err, &apiErr) || apiErr.Kind != api.KindNotFound {
		t.Fatalf("revoke of an unknown session: %v", err)
	}
	if r, err := c.WebRevoke(ctx, ss[0].ID); err != nil || r.Revoked != 1 {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	if code, _ := webGet(t, b, st.URL+"/"); code != http.StatusUnauthorized {
		t.Fatalf("a revoked session: %d", code)
	}
	// Beyond loopback without TLS: refused, the page stays where it was.
	if _, err := c.WebStart(ctx, api.WebStartRequest{Listen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "needs TLS") {
		t.Fatalf("0.0.0.0 without TLS: %v", err)
	}
	if st3, _ := c.WebStatus(ctx); st3.URL != st.URL {
		t.Fatalf("after a refused move: %+v", st3)
	}
	// Stopped: not served, and not at the next start either.
	if st3, err := c.WebStop(ctx); err != nil || st3.Running {
		t.Fatalf("stop: %+v %v", st3, err)
	}
	if _, err := c.WebLink(ctx, api.WebLinkRequest{}); err == nil {
		t.Fatal("a link while the page is not served")
	}
	if _, err := http.Get(st.URL + "/"); err == nil {
		t.Fatal("the page still answers after stop")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	c, stop = serveUntil(t, home, Config{WebPages: testPages})
	if c == nil {
		t.Fatalf("supervisor did not start a third time: %v", stop())
	}
	if st4, err := c.WebStatus(ctx); err != nil || st4.Running {
		t.Fatalf("served after a stop and a restart: %+v %v", st4, err)
	}
}
