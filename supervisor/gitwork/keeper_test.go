package gitwork

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// fakeCore is a registry of panes and a list of tasks in memory: what the
// keeper asks of the supervisor.
type fakeCore struct {
	mu      sync.Mutex
	panes   map[string]*Pane
	tasks   map[int64]schema.Task
	sent    []string // SendBack's texts
	sentErr error
}

func newFakeCore() *fakeCore {
	return &fakeCore{panes: map[string]*Pane{}, tasks: map[int64]schema.Task{}}
}

func (c *fakeCore) Pane(ref string) (Pane, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.panes[ref]
	if !ok {
		return Pane{}, false
	}
	return *p, true
}

func (c *fakeCore) All() []Pane {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Pane
	for _, p := range c.panes {
		out = append(out, *p)
	}
	return out
}

func (c *fakeCore) Workspace(ref string) (string, bool) {
	p, ok := c.Pane(ref)
	return p.Config.Workspace, ok
}

func (c *fakeCore) ID(ref string) (string, error) {
	if _, ok := c.Pane(ref); !ok {
		return "", api.PaneNotFound(ref)
	}
	return ref, nil
}

func (c *fakeCore) Elsewhere(context.Context, string) (string, bool) { return "", false }

func (c *fakeCore) Task(_ context.Context, id int64) (schema.Task, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[id]
	if !ok {
		return t, &api.Error{Kind: api.KindNotFound, Message: "no task"}
	}
	return t, nil
}

func (c *fakeCore) SendBack(_ context.Context, _, pane, text string) (api.TaskInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sentErr != nil {
		return api.TaskInfo{}, c.sentErr
	}
	c.sent = append(c.sent, text)
	return api.TaskInfo{ID: 99, To: pane}, nil
}

func (c *fakeCore) LastWork(_ context.Context, pane string) (api.Work, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var last schema.Task
	for _, t := range c.tasks {
		if t.To == pane && t.Head != "" && t.ID > last.ID {
			last = t
		}
	}
	return last.Work, last.ID != 0, nil
}

func (c *fakeCore) ListTasks(_ context.Context, pane string) ([]schema.Task, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []schema.Task
	for _, t := range c.tasks {
		if pane == "" || t.To == pane {
			out = append(out, t)
		}
	}
	return out, nil
}

// add registers pane id, running in ws with the config pw.
func (c *fakeCore) add(t *testing.T, id, ws string, pw *PaneWorktree) {
	t.Helper()
	cfg := "{}"
	if pw != nil {
		b, err := json.Marshal(paneConfig{Worktree: pw})
		if err != nil {
			t.Fatal(err)
		}
		cfg = string(b)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.panes[id] = &Pane{Config: schema.Pane{ID: id, Type: "shell", Workspace: ws, Config: cfg}, Seen: &Seen{}}
}

func (c *fakeCore) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.panes, id)
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@x"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newKeeper is a keeper of a home in a temp folder with a repository of
// one commit; Close runs at the test's end.
func newKeeper(t *testing.T) (*Keeper, *fakeCore, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	repo := filepath.Join(t.TempDir(), "project")
	gitIn(t, "", "init", "-q", "-b", "main", repo)
	write(t, filepath.Join(repo, "a.txt"), "one\n")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "first")
	c := newFakeCore()
	log := logrus.New()
	log.SetOutput(os.Stderr)
	k := New(Config{Root: root, Workspaces: filepath.Join(root, "workspaces"), Spares: filepath.Join(root, "spares"),
		Log: logrus.NewEntry(log), Panes: c, Tasks: c, Store: c})
	k.spares.Settle = 0
	t.Cleanup(k.Close)
	return k, c, repo
}

// TestKeeperRefusesNoRepository: create --worktree in a folder outside
// any repository is refused with what to do.
func TestKeeperRefusesNoRepository(t *testing.T) {
	t.Parallel()
	k, _, _ := newKeeper(t)
	if _, err := k.ForCreate(context.Background(), api.CreateRequest{Workspace: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "is not in a git repository") {
		t.Fatalf("a folder outside a repository: %v", err)
	}
}

// addWorker makes pane id's worktree of repo, as create --worktree does,
// registers the pane, and returns its folder and its config.
func addWorker(t *testing.T, k *Keeper, c *fakeCore, repo, id string) (string, *PaneWorktree) {
	t.Helper()
	pw, err := k.ForCreate(context.Background(), api.CreateRequest{Workspace: repo})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := k.Tag()
	if err != nil || pw.Tag != tag || !validTag(tag) {
		t.Fatalf("tag %q (%v), the config's %q", tag, err, pw.Tag)
	}
	ws := k.workspace(id)
	if _, err := k.Add(id, ws, pw); err != nil {
		t.Fatal(err)
	}
	c.add(t, id, ws, pw)
	if got, want := gitIn(t, ws, "rev-parse", "--abbrev-ref", "HEAD"), "cicy/"+tag+"/"+id; got != want {
		t.Fatalf("the worktree is on %q; want %s", got, want)
	}
	return ws, pw
}

// finishTask ends task 1 of pane w-1 as the outbox does and records it.
func finishTask(t *testing.T, k *Keeper, c *fakeCore, pw *PaneWorktree, ws string) {
	t.Helper()
	task := schema.Task{ID: 1, To: "w-1", Text: "add b\nmore", Status: api.TaskDelivered}
	f, err := k.Finish(task)
	if err != nil {
		t.Fatal(err)
	}
	if f.Work.Base != pw.Base || f.Work.Commits != 1 || f.Work.Files != 1 || f.Work.Added != 2 {
		t.Fatalf("the task's work (the .cicy folder is not in it): %+v", f.Work)
	}
	if msg := gitIn(t, ws, "log", "-1", "--format=%s"); msg != "task 1: add b" {
		t.Fatalf("the commit says %q", msg)
	}
	task.Work, task.Status = f.Work, api.TaskDone
	c.mu.Lock()
	c.tasks[1] = task
	c.mu.Unlock()
}

// TestKeeperWorkerLifecycle: a worker's worktree made on its own branch
// (the .cicy folder ignored), a task's work committed and recorded, shown
// by Info, Diff and List, kept at a kill while unmerged, merged into the
// repository's checkout, then removed at a kill with its branch.
func TestKeeperWorkerLifecycle(t *testing.T) {
	t.Parallel()
	k, c, repo := newKeeper(t)
	ctx := context.Background()
	ws, pw := addWorker(t, k, c, repo, "w-1")
	write(t, filepath.Join(ws, ".cicy", "history"), "ours\n")
	write(t, filepath.Join(ws, "b.txt"), "two\nthree\n")
	finishTask(t, k, c, pw, ws)

	p, _ := c.Pane("w-1")
	if info := k.Info(p.Config, p.Seen); info == nil || info.Ahead != 1 || !info.Clean || info.Merged || info.Files != 1 {
		t.Fatalf("what ls shows: %+v", info)
	}
	if d, err := k.Diff(ctx, "1", false); err != nil || !strings.Contains(d.Diff, "+three") || d.Work.Files != 1 {
		t.Fatalf("diff of the task: %+v %v", d, err)
	}
	if l := k.List(ctx, false); len(l) != 1 || l[0].Pane != "w-1" || l[0].Gone {
		t.Fatalf("the worktrees: %+v", l)
	}
	if kept := k.Release(p.Config); !strings.Contains(kept, "is not merged into main") {
		t.Fatalf("an unmerged worktree at a kill: %q", kept)
	}
	if m, err := k.Merge(ctx, api.MergeRequest{Target: "w-1"}); err != nil || m.Into != "main" || m.Work.Files != 1 {
		t.Fatalf("merge: %+v %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "b.txt")); err != nil {
		t.Fatal("the merge did not reach the repository's checkout")
	}
	c.remove("w-1")
	if kept := k.Release(p.Config); kept != "" {
		t.Fatalf("a merged, clean worktree was kept: %q", kept)
	}
	if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the worktree's folder is still there: %v", err)
	}
	if b := gitIn(t, repo, "branch", "--list", "cicy/*"); b != "" {
		t.Fatalf("the branch is still there: %q", b)
	}
}

// TestKeeperSendBack: a merge that conflicts changes nothing; with
// SendBack its text goes to the worker as a task, and a worker that runs
// shell tasks is refused.
func TestKeeperSendBack(t *testing.T) {
	t.Parallel()
	k, c, repo := newKeeper(t)
	ctx := context.Background()
	ws, _ := addWorker(t, k, c, repo, "w-2")
	write(t, filepath.Join(ws, "a.txt"), "worker\n")
	gitIn(t, ws, "commit", "-q", "-am", "worker's")
	write(t, filepath.Join(repo, "a.txt"), "master\n")
	gitIn(t, repo, "commit", "-q", "-am", "master's")
	before := gitIn(t, repo, "rev-parse", "HEAD")

	if _, err := k.Merge(ctx, api.MergeRequest{Target: "w-2", SendBack: true}); err == nil || !strings.Contains(err.Error(), "runs its tasks as shell commands") {
		t.Fatalf("a shell worker's conflict sent back: %v", err)
	}
	c.mu.Lock()
	c.panes["w-2"].Config.Type = "cicy"
	c.mu.Unlock()
	m, err := k.Merge(ctx, api.MergeRequest{Target: "w-2", SendBack: true, Caller: "w-0"})
	if err != nil || len(m.Conflicts) != 1 || m.SentBack == nil || m.SentBack.ID != 99 {
		t.Fatalf("merge with send back: %+v %v", m, err)
	}
	if len(c.sent) != 1 || !strings.HasPrefix(c.sent[0], "rebase cicy/") {
		t.Fatalf("sent back: %q", c.sent)
	}
	if got := gitIn(t, repo, "rev-parse", "HEAD"); got != before {
		t.Fatal("a conflict changed the repository's checkout")
	}
	c.sentErr = errors.New("the outbox is closed")
	if _, err := k.Merge(ctx, api.MergeRequest{Target: "w-2", SendBack: true}); err == nil || !strings.Contains(err.Error(), "sending it back failed: the outbox is closed") {
		t.Fatalf("a send back that failed: %v", err)
	}
}
