package newpane

import (
	"errors"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

func TestParsePaneID(t *testing.T) {
	for in, want := range map[string]string{"w-1": "w-1", "w-42:main.0": "w-42", "w-7:main": "w-7"} {
		if got, err := api.ParsePaneID(in); err != nil || got != want {
			t.Errorf("ParsePaneID(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"w-abc", "w-0", "w-", "1", "w-1:other.0", "w-01", " w-1", "w-1\n"} {
		_, err := api.ParsePaneID(in)
		var e *api.Error
		if !errors.As(err, &e) || e.Kind != api.KindUsage {
			t.Errorf("ParsePaneID(%q) = %v, want a usage error", in, err)
		}
	}
}

func TestNormalizeDefaultsAndWarnings(t *testing.T) {
	req := api.CreateRequest{Title: "  t  ", Type: "shell", Command: []string{"bash"}}
	w, err := Normalize(&req)
	if err != nil || len(w) != 0 {
		t.Fatalf("normalize: %v %v", w, err)
	}
	wantBackend := "pty"
	if pane.TmuxAvailable() {
		wantBackend = "tmux" // the default when tmux is there
	}
	if req.Title != "t" || req.Role != "worker" || req.Backend != wantBackend || req.RoleTemplate != "" {
		t.Fatalf("defaults: %+v", req)
	}
	req = api.CreateRequest{Title: "t", Type: "shell", Role: "reviewer", Command: []string{"bash"}}
	if w, err := Normalize(&req); err != nil || len(w) != 1 {
		t.Fatalf("free-text role: %v %v", w, err)
	}
	for name, bad := range map[string]api.CreateRequest{
		"empty title":     {Title: " ", Type: "shell", Command: []string{"bash"}},
		"newline title":   {Title: "a\nb", Type: "shell", Command: []string{"bash"}},
		"bad utf8":        {Title: "a\xffb", Type: "shell", Command: []string{"bash"}},
		"long role":       {Title: "t", Type: "shell", Role: string(make([]byte, 65)), Command: []string{"bash"}},
		"template escape": {Title: "t", Type: "shell", RoleTemplate: "../x", Command: []string{"bash"}},
		"relative ws":     {Title: "t", Type: "shell", Workspace: "rel/dir", Command: []string{"bash"}},
		"nul in argv":     {Title: "t", Type: "shell", Command: []string{"bash", "a\x00b"}},
	} {
		r := bad
		if _, err := Normalize(&r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
