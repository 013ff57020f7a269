package newpane

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/supervisor/gitwork"
)

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// folders is where a pane w-1's folders go in a home at root.
func folders(root string) Folders {
	return Folders{Home: root, ID: "w-1", PaneDir: filepath.Join(root, "panes", "w-1"), Workspace: filepath.Join(root, "workspaces", "w-1"),
		Guidance: func(ws string) string { return filepath.Join(ws, "AGENTS.md") }, Log: quietLog()}
}

// TestPrepareMakesAndUndoes: a new pane's default workspace is made, with
// its guidance file when it has a template; undo removes what was made.
// A workspace the user names is made where they said, and undo removes
// only the folders it made.
func TestPrepareMakesAndUndoes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := cicy.SeedTemplates(root); err != nil {
		t.Fatal(err)
	}
	tmpl, err := cicy.LoadTemplate(root, "engineer")
	if err != nil {
		t.Fatal(err)
	}
	f := folders(root)
	ws, notes, undo, err := Prepare(f, api.CreateRequest{Type: "codex", Role: "worker"}, tmpl)
	if err != nil || len(notes) != 0 || ws != f.Workspace {
		t.Fatalf("Prepare: %q %q %v", ws, notes, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatalf("no guidance file: %v", err)
	}
	undo()
	if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("undo left the workspace: %v", err)
	}

	named := filepath.Join(root, "mine", "deep", "ws")
	ws, _, undo, err = Prepare(f, api.CreateRequest{Type: "shell", Workspace: named}, nil)
	if err != nil || ws != named {
		t.Fatalf("named workspace: %q %v", ws, err)
	}
	undo()
	if _, err := os.Stat(filepath.Join(root, "mine")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("undo left the folders it made: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("undo removed the home: %v", err)
	}
}

// TestPrepareSetsAsideForeignFolders: a default workspace left by an
// earlier pane of the same id is not adopted: it is set aside with a
// note, and put back when the new pane's folders are undone.
func TestPrepareSetsAsideForeignFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	f := folders(root)
	left := filepath.Join(f.Workspace, "left.txt")
	if err := os.MkdirAll(f.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, []byte("an earlier pane's"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, notes, undo, err := Prepare(f, api.CreateRequest{Type: "shell"}, nil)
	if err != nil || len(notes) != 1 {
		t.Fatalf("Prepare: %q %v", notes, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "left.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the new pane adopted the earlier one's files: %v", err)
	}
	undo()
	if b, err := os.ReadFile(left); err != nil || string(b) != "an earlier pane's" {
		t.Fatalf("undo did not put the earlier folder back: %q %v", b, err)
	}
}

// TestPrepareRefusals: a workspace that is a file, or a worktree that
// cannot be made, refuses the pane and leaves nothing to undo.
func TestPrepareRefusals(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	f := folders(root)
	file := filepath.Join(root, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, undo, err := Prepare(f, api.CreateRequest{Type: "shell", Workspace: file}, nil)
	var e *api.Error
	if !errors.As(err, &e) || e.Kind != api.KindUsage || undo != nil {
		t.Fatalf("a file as the workspace: %v (undo %v)", err, undo != nil)
	}
	if strings.Contains(e.Message, "a-file: ") {
		t.Errorf("the path is said twice: %s", e.Message)
	}
	f.Worktree = func(string) (func(), error) { return nil, errors.New("no git") }
	if _, _, undo, err := Prepare(f, api.CreateRequest{Type: "shell"}, nil); err == nil || undo != nil {
		t.Fatalf("a worktree that fails: %v (undo %v)", err, undo != nil)
	}
}

// TestCheckNames: the role template must exist in the home, the master
// must exist and be a master.
func TestCheckNames(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := cicy.SeedTemplates(root); err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{"w-1": "master", "w-2": "worker"}
	roleOf := func(id string) (string, bool) { r, ok := roles[id]; return r, ok }
	if tmpl, err := CheckNames(root, api.CreateRequest{RoleTemplate: "engineer", Master: "w-1"}, roleOf); err != nil || tmpl == nil || tmpl.Slug != "engineer" {
		t.Fatalf("valid names: %v %v", tmpl, err)
	}
	if tmpl, err := CheckNames(root, api.CreateRequest{}, roleOf); err != nil || tmpl != nil {
		t.Fatalf("no names: %v %v", tmpl, err)
	}
	for name, req := range map[string]api.CreateRequest{
		"no such template": {RoleTemplate: "nobody-here"},
		"no such master":   {Master: "w-9"},
		"not a master":     {Master: "w-2"},
	} {
		var e *api.Error
		if _, err := CheckNames(root, req, roleOf); !errors.As(err, &e) || e.Kind != api.KindUsage {
			t.Errorf("%s: %v, want a usage error", name, err)
		}
	}
}

// TestRowAndMissingEnv: the row keeps the request, its config only what
// it has; each --env name the supervisor lacks gets a warning.
func TestRowAndMissingEnv(t *testing.T) {
	t.Parallel()
	r := Row(api.CreateRequest{Title: "t", Type: "shell", Command: []string{"bash"}}, nil)
	if r.Config != "{}" || r.Command != `["bash"]` || r.Master.Valid || r.BudgetUSD.Valid {
		t.Fatalf("plain row: %+v", r)
	}
	pw := &gitwork.PaneWorktree{}
	r = Row(api.CreateRequest{Title: "t", Type: "shell", Team: "a", Env: []string{"FOO"}, Master: "w-1", BudgetUSD: 2, Restart: "always"}, pw)
	c := ParseConfig(r.Config)
	if c.Team != "a" || !slices.Equal(c.Env, []string{"FOO"}) || c.Worktree == nil || c.Restart != "always" || r.Master.String != "w-1" || r.BudgetUSD.Float64 != 2 {
		t.Fatalf("row: %+v, config %+v", r, c)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.Config), &raw); err != nil || raw["allow_all"] != nil {
		t.Fatalf("config %s: %v", r.Config, err)
	}
	getenv := func(k string) string { return map[string]string{"HAVE": "1"}[k] }
	w := MissingEnv([]string{"HAVE", "LACK"}, getenv)
	if len(w) != 1 || !strings.Contains(w[0], "LACK") {
		t.Fatalf("warnings: %q", w)
	}
}
