package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestGuidanceAPI reads and replaces a cicy pane's AGENTS.md through
// GET/PUT /api/memory/templates/agent/<pane>.
func TestGuidanceAPI(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - reply: {text: ok}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CICY_SCRIPT", rules)
	c := startServer(t)
	ctx := context.Background()
	p, err := c.Create(ctx, api.CreateRequest{Title: "bot", Type: "cicy", Provider: "script"})
	if err != nil {
		t.Fatal(err)
	}
	hc := socketHTTP(t, c)
	url := "http://cicy/api/memory/templates/agent/" + p.ID
	get := func() api.GuidanceDoc {
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var d api.GuidanceDoc
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d %v", resp.StatusCode, err)
		}
		return d
	}
	d := get()
	if d.Filename != "AGENTS.md" || !d.Exists || !strings.Contains(d.Content, "# Role") {
		t.Fatalf("GET = %+v", d)
	}
	body, _ := json.Marshal(map[string]string{"content": "# Role\n\nYou are Ada, the tester.\n"})
	req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	if d := get(); d.Content != "# Role\n\nYou are Ada, the tester.\n" {
		t.Fatalf("after PUT: %q", d.Content)
	}
	resp, err = hc.Get("http://cicy/api/memory/templates/agent/w-99")
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown pane: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
}

// socketHTTP is a plain HTTP client on c's socket, for requests Client has
// no method for; like Client it never follows a redirect.
func socketHTTP(t *testing.T, c *api.Client) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", c.Home().Socket())
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
