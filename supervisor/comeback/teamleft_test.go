package comeback

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	_ "github.com/cicy-ai/cicy-agent/supervisor/cliagent" // the CLI agents' pane types
)

// TestTakeLeft: what a team's killed agent left is taken once, by the
// next agent of the same team, title and type, which is given its
// workspace when it names none; others get nothing.
func TestTakeLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := schema.Open(ctx, filepath.Join(dir, "cicy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ws := filepath.Join(dir, "workspaces", "w-1")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	l := Left{ID: "w-1", Type: "claude", Session: "s-1", Workspace: ws, At: time.Now()}
	if err := Leave(ctx, store, "red", "coder", l); err != nil {
		t.Fatal(err)
	}
	for _, req := range []api.CreateRequest{
		{Team: "red", Title: "coder", Type: "codex"},                  // another type
		{Team: "blue", Title: "coder", Type: "claude"},                // another team
		{Team: "red", Title: "tester", Type: "claude"},                // another title
		{Team: "red", Title: "coder", Type: "claude", Worktree: true}, // a worktree of its own
		{Title: "coder", Type: "claude"},                              // no team
	} {
		if got := Take(ctx, store, &req); got != nil {
			t.Fatalf("%+v took %+v", req, got)
		}
	}
	req := api.CreateRequest{Team: "red", Title: "coder", Type: "claude"}
	got := Take(ctx, store, &req)
	if got == nil || got.Session != "s-1" || got.ID != "w-1" || req.Workspace != ws {
		t.Fatalf("took %+v, workspace %q", got, req.Workspace)
	}
	again := api.CreateRequest{Team: "red", Title: "coder", Type: "claude"}
	if got := Take(ctx, store, &again); got != nil {
		t.Fatalf("taken twice: %+v", got)
	}
}

// TestLeftMove: the left pane's folder's items move into the new one's;
// what is there already stays; a missing folder is nothing to move.
func TestLeftMove(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	from, to := filepath.Join(dir, "w-1"), filepath.Join(dir, "w-2")
	l := &Left{ID: "w-1"}
	if err := l.Move(from, to); err != nil {
		t.Fatalf("missing: %v", err)
	}
	for name, body := range map[string]string{"config/a": "old", "keep": "old"} {
		p := filepath.Join(from, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, "keep"), []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Move(from, to); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(to, "config", "a")); err != nil || string(b) != "old" {
		t.Fatalf("config/a: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(to, "keep")); string(b) != "new" {
		t.Fatalf("keep was replaced: %q", b)
	}
}
