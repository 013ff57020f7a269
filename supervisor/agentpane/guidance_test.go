package agentpane

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/topology"
)

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
			if err := WriteGuidance(t.TempDir(), filepath.Join(ws, c.file), ws, "w-1", api.CreateRequest{Type: c.typ, Role: role}, tmpl); err != nil {
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
	getenv := func(k string) string { return env[k] }
	m, err := TeamMCP("/bin/cicy-agent", "w-3", "/h", nil, getenv)
	if err != nil || !slices.Equal(m.Argv, []string{"/bin/cicy-agent", "mcp"}) || m.Env["CICY_HOME"] != "/h" || m.Env["CICY_PANE_ID"] != "w-3" || len(m.Env) != 2 {
		t.Fatalf("default: %+v, %v", m, err)
	}
	env["CICY_MCP_COMMAND"] = `["/opt/standin", "serve"]`
	if m, err := TeamMCP("/bin/cicy-agent", "w-3", "/h", nil, getenv); err != nil || !slices.Equal(m.Argv, []string{"/opt/standin", "serve"}) {
		t.Errorf("replaced: %+v, %v", m, err)
	}
	for _, bad := range []string{`standin`, `[]`, `["standin"]`} {
		env["CICY_MCP_COMMAND"] = bad
		if _, err := TeamMCP("/bin/cicy-agent", "w-3", "/h", nil, getenv); err == nil || !strings.Contains(err.Error(), "CICY_MCP_COMMAND must be a JSON array") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
