package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/topology"
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

// A CLI master's guidance file names the team tools as its agent shows
// them, keeps the shell commands, and says where cicy-agent is; a
// worker's has no team section.
func TestCLIMasterGuidance(t *testing.T) {
	tmpl := &cicy.Template{Role: "# Role\n\nYou are {{AGENT_ID}}."}
	for _, c := range []struct{ typ, file, tool string }{
		{"claude", "CLAUDE.md", "`mcp__cicy__dispatch`"},
		{"codex", "AGENTS.md", "`mcp__cicy.dispatch`"},
		{"opencode", "AGENTS.md", "`cicy_dispatch`"},
	} {
		for _, role := range []string{topology.RoleMaster, topology.RoleWorker} {
			ws := t.TempDir()
			if err := writeGuidance(t.TempDir(), filepath.Join(ws, c.file), ws, "w-1", api.CreateRequest{Type: c.typ, Role: role}, tmpl); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(ws, c.file))
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			if role == topology.RoleWorker {
				if strings.Contains(got, "# Team") {
					t.Errorf("%s worker: %s has a team section:\n%s", c.typ, c.file, got)
				}
				continue
			}
			for _, want := range []string{c.tool, strings.Replace(c.tool, "dispatch", "workers", 1), strings.Replace(c.tool, "dispatch", "task_status", 1),
				strings.Replace(c.tool, "dispatch", "wait", 1), "cicy-agent dispatch --to <pane>", "If your shell does not find cicy-agent"} {
				if !strings.Contains(got, want) {
					t.Errorf("%s master: %s lacks %s:\n%s", c.typ, c.file, want, got)
				}
			}
		}
	}
}

// A CLI master's MCP server is this program with "mcp", told who is
// calling; CICY_MCP_COMMAND replaces the command when it is a JSON array
// starting with an absolute path.
func TestTeamMCP(t *testing.T) {
	env := map[string]string{}
	s := &Supervisor{cfg: Config{Home: Home{Root: "/h"}, Getenv: func(k string) string { return env[k] }}}
	m, err := s.teamMCP("/bin/cicy-agent", "w-3")
	if err != nil || !slices.Equal(m.Argv, []string{"/bin/cicy-agent", "mcp"}) || m.Env["CICY_HOME"] != "/h" || m.Env["CICY_PANE_ID"] != "w-3" || len(m.Env) != 2 {
		t.Fatalf("default: %+v, %v", m, err)
	}
	env["CICY_MCP_COMMAND"] = `["/opt/standin", "serve"]`
	if m, err := s.teamMCP("/bin/cicy-agent", "w-3"); err != nil || !slices.Equal(m.Argv, []string{"/opt/standin", "serve"}) {
		t.Errorf("replaced: %+v, %v", m, err)
	}
	for _, bad := range []string{`standin`, `[]`, `["standin"]`} {
		env["CICY_MCP_COMMAND"] = bad
		if _, err := s.teamMCP("/bin/cicy-agent", "w-3"); err == nil || !strings.Contains(err.Error(), "CICY_MCP_COMMAND must be a JSON array") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
