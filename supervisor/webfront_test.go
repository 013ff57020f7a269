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
// its sessions after a restart without --web; revoke ends the session; a
// move beyond loopback without TLS is refused; stop stops it for good.
func TestWebServedWithTheSupervisor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := Home{Root: filepath.Join(t.TempDir(), "home")}
	c, stop := serveUntil(t, home, Config{Web: Web{Addr: "127.0.0.1:0"}, WebPages: testPages})
	if c == nil {
		t.Fatalf("supervisor did not start: %v", stop())
	}
	st, err := c.WebStatus(ctx)
	if err != nil || !st.Running || !strings.HasPrefix(st.URL, "http://127.0.0.1:") {
		t.Fatalf("web status: %+v %v", st, err)
	}
	b := webLogin(t, c)
	webReaches(t, b, st.URL)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	c, stop = serveUntil(t, home, Config{WebPages: testPages}) // no --web: kept
	if c == nil {
		t.Fatalf("supervisor did not start again: %v", stop())
	}
	if st2, err := c.WebStatus(ctx); err != nil || !st2.Running || st2.URL != st.URL {
		t.Fatalf("after a restart: %+v %v (was %s)", st2, err, st.URL)
	}
	if code, _ := webGet(t, b, st.URL+"/"); code != http.StatusOK {
		t.Fatalf("the session after a restart: %d", code)
	}
	webRevokes(t, c, b, st.URL)
	if _, err := c.WebStart(ctx, api.WebStartRequest{Listen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "needs TLS") {
		t.Fatalf("0.0.0.0 without TLS: %v", err)
	}
	if st3, _ := c.WebStatus(ctx); st3.URL != st.URL {
		t.Fatalf("after a refused move: %+v", st3)
	}
	webStops(t, c, st.URL)
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

// webLogin logs a browser in with a link minted on the socket.
func webLogin(t *testing.T, c *api.Client) *http.Client {
	t.Helper()
	st, _ := c.WebStatus(context.Background())
	link, err := c.WebLink(context.Background(), api.WebLinkRequest{})
	if err != nil || !strings.HasPrefix(link.URL, st.URL+"/login?t=") {
		t.Fatalf("link: %+v %v", link, err)
	}
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar}
	if code, body := webGet(t, b, link.URL); code != http.StatusOK || !strings.Contains(body, "team") {
		t.Fatalf("login: %d %s", code, body)
	}
	return b
}

// webReaches: the browser reaches the API, not the socket's routes.
func webReaches(t *testing.T, b *http.Client, base string) {
	t.Helper()
	if code, body := webGet(t, b, base+"/api/status"); code != http.StatusOK || !strings.Contains(body, `"masters"`) {
		t.Fatalf("API through the page: %d %s", code, body)
	}
	for _, p := range []string{"/api/web/sessions", "/api/web"} {
		if code, _ := webGet(t, b, base+p); code != http.StatusNotFound {
			t.Fatalf("%s through the page: %d", p, code)
		}
	}
	_, body := webGet(t, b, base+"/")
	csrf := regexp.MustCompile(`content="([^"]+)"`).FindStringSubmatch(body)[1]
	req, _ := http.NewRequest(http.MethodPost, base+"/api/shutdown", nil)
	req.Header.Set(web.CSRFHeader, csrf)
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("shutdown through the page: %d", resp.StatusCode)
	}
}

// webRevokes: the one session listed on the socket is revoked there.
func webRevokes(t *testing.T, c *api.Client, b *http.Client, base string) {
	t.Helper()
	ctx := context.Background()
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
	if code, _ := webGet(t, b, base+"/"); code != http.StatusUnauthorized {
		t.Fatalf("a revoked session: %d", code)
	}
}

// webStops: after stop no link is minted and nothing answers.
func webStops(t *testing.T, c *api.Client, base string) {
	t.Helper()
	ctx := context.Background()
	if st, err := c.WebStop(ctx); err != nil || st.Running {
		t.Fatalf("stop: %+v %v", st, err)
	}
	if _, err := c.WebLink(ctx, api.WebLinkRequest{}); err == nil {
		t.Fatal("a link while the page is not served")
	}
	if resp, err := http.Get(base + "/"); err == nil {
		resp.Body.Close()
		t.Fatal("the page still answers after stop")
	}
}

// TestWebNotOnTheClusterAPI: the cluster API does not mint login links
// or list sessions; the socket does.
func TestWebNotOnTheClusterAPI(t *testing.T) {
	c, addr := clusterServer(t, Listen{Addr: "127.0.0.1:0", Token: testClusterToken})
	ctx := context.Background()
	remote := api.NewRemoteClient(addr, testClusterToken, nil)
	var apiErr *api.Error
	if _, err := remote.WebSessions(ctx); !errors.As(err, &apiErr) || apiErr.Kind != api.KindNotFound {
		t.Fatalf("sessions over the cluster API: %v", err)
	}
	if _, err := remote.WebLink(ctx, api.WebLinkRequest{}); !errors.As(err, &apiErr) || apiErr.Kind != api.KindNotFound {
		t.Fatalf("a link over the cluster API: %v", err)
	}
	if _, err := c.WebSessions(ctx); err != nil {
		t.Fatalf("sessions on the socket: %v", err)
	}
}
