package supervisor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// gitRepo is a repository with one commit on main, as a user has it.
func gitRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	gitIn(t, "", "init", "-q", "-b", "main", dir)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@x"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// worktreeTeam is a shell master in repo and n shell workers, each in a
// worktree of it.
func worktreeTeam(t testing.TB, s *Supervisor, repo string, n int) (master string, workers []string) {
	t.Helper()
	ctx := context.Background()
	m, err := s.Create(ctx, api.CreateRequest{Title: "lead", Type: "shell", Role: "master", Backend: "pty",
		Workspace: repo, Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), m.ID) })
	for i := 0; i < n; i++ {
		w, err := s.Create(ctx, api.CreateRequest{Title: "dev", Type: "shell", Master: m.ID, Worktree: true, Backend: "pty",
			Command: []string{"bash", "--norc", "--noprofile"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Kill(context.Background(), w.ID) })
		waitPane(t, s, w.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
		workers = append(workers, w.ID)
	}
	return m.ID, workers
}

// TestWorktreeTasks: a worker in its own worktree; each task that ends
// done leaves one commit whose range and stat the task records; the
// repository's own checkout is untouched until the master merges.
func TestWorktreeTasks(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	repo := gitRepo(t)
	master, ws := worktreeTeam(t, s, repo, 1)
	w := &wtRig{t: t, s: s, repo: repo, master: master, id: ws[0]}
	w.paneInWorktree()
	got, own := w.tasks()
	w.diffs(got)
	w.teamTools(got, own)
}

// wtRig is TestWorktreeTasks's team: a master in repo, worker id.
type wtRig struct {
	t                *testing.T
	s                *Supervisor
	repo, master, id string
}

// work is a task's recorded work with its status, for comparing.
type work struct {
	Status string
	api.Work
}

func (w *wtRig) expect(what string, got schema.Task, want work) {
	w.t.Helper()
	if g := (work{got.Status, got.Work}); g != want {
		w.t.Fatalf("%s: %+v, want %+v", what, g, want)
	}
}

// branch is the worker's branch: cicy/<the home's tag>/<id>.
func (w *wtRig) branch() string {
	w.t.Helper()
	tag, err := w.s.trees.Tag()
	if err != nil || tag == "" {
		w.t.Fatalf("the home's tag: %q %v", tag, err)
	}
	return "cicy/" + tag + "/" + w.id
}

func (w *wtRig) paneInWorktree() {
	w.t.Helper()
	info, err := w.s.Get(w.id)
	if err != nil {
		w.t.Fatal(err)
	}
	wi := info.Worktree
	if wi == nil || wi.Branch != w.branch() || wi.Target != "main" || !strings.HasPrefix(info.Workspace, w.s.cfg.Home.Root) {
		w.t.Fatalf("pane %+v worktree %+v", info, wi)
	}
	if got := gitIn(w.t, info.Workspace, "branch", "--show-current"); got != w.branch() {
		w.t.Fatalf("the pane's workspace is on %q", got)
	}
}

// tasks runs the worker's tasks: a change, none, the worker's own
// commits, a rewritten history.
func (w *wtRig) tasks() (first, last schema.Task) {
	w.t.Helper()
	branch := w.branch()
	first = runShellTask(w.t, w.s, w.id, "printf 'two\\nthree\\n' >> a.txt; echo new > b.txt")
	base := gitIn(w.t, w.repo, "rev-parse", "main")
	w.expect("a change", first, work{api.TaskDone, api.Work{Branch: branch, Base: base, Head: first.Head, Commits: 1, Files: 2, Added: 3}})
	if subj := gitIn(w.t, w.repo, "log", "-1", "--format=%an %s", first.Head); subj != w.id+" task "+itoa(first.ID)+": printf 'two\\nthree\\n' >> a.txt; echo new > b.txt" {
		w.t.Errorf("commit %q", subj)
	}
	if st := gitIn(w.t, w.repo, "status", "--porcelain"); st != "" {
		w.t.Fatalf("the repository's checkout changed: %q", st)
	}
	// The next task starts where the last ended; one that changes nothing
	// records no commit.
	quiet := runShellTask(w.t, w.s, w.id, "true")
	w.expect("no change", quiet, work{api.TaskDone, api.Work{Branch: branch, Base: first.Head, Head: first.Head}})
	// A worker that commits itself keeps its commits.
	own := runShellTask(w.t, w.s, w.id, "echo c > c.txt && git add c.txt && git -c user.name=me -c user.email=me@x commit -qm mine && echo d > d.txt")
	w.expect("own commits", own, work{api.TaskDone, api.Work{Branch: branch, Base: first.Head, Head: own.Head, Commits: 2, Files: 2, Added: 2}})
	// A worker that rewrites its history: the next task's range starts at
	// a commit its branch no longer has, and is still measured.
	// (Its base is no longer in the branch: the range is the branch's own
	// work since it forks from main.)
	last = runShellTask(w.t, w.s, w.id, "echo e > e.txt && git add -A && git -c user.name=me -c user.email=me@x commit -q --amend -m rewritten")
	w.expect("rewritten", last, work{api.TaskDone, api.Work{Branch: branch, Base: base, Head: last.Head, Commits: 3, Files: 5, Added: 6}})
	return first, last
}

func (w *wtRig) diffs(first schema.Task) {
	w.t.Helper()
	d, err := w.s.Diff(context.Background(), itoa(first.ID), false)
	if err != nil || !strings.Contains(d.Diff, "+new") || d.Work.Files != 2 {
		w.t.Fatalf("diff of the task: %+v %v", d, err)
	}
	d, err = w.s.Diff(context.Background(), w.id, true)
	if err != nil || d.Work.Files != 5 || d.Work.Commits != 3 || !strings.Contains(d.Diff, "5 files changed") {
		w.t.Fatalf("diff of the worker: %+v %v", d, err)
	}
	info, _ := w.s.Get(w.id)
	if wi := info.Worktree; wi.Ahead != 3 || wi.Files != 5 || wi.Merged {
		w.t.Fatalf("ls: %+v", wi)
	}
}

// teamTools: the master's diff and merge, only for its own workers.
func (w *wtRig) teamTools(first, last schema.Task) {
	w.t.Helper()
	ctx := context.Background()
	res, err := w.s.TeamTool(ctx, w.master, "diff", json.RawMessage(`{"target": "`+itoa(first.ID)+`", "stat": true}`))
	if err != nil || res.IsError || !strings.HasPrefix(res.Text, "2 files +3 −0 on "+w.branch()+" in 1 commits (") || !strings.Contains(res.Text, "b.txt | 1 +") {
		w.t.Fatalf("the diff tool: %+v %v", res, err)
	}
	other, err := w.s.Create(ctx, api.CreateRequest{Title: "other", Type: "shell", Role: "master", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = w.s.Kill(context.Background(), other.ID) })
	if res, _ := w.s.TeamTool(ctx, other.ID, "merge", json.RawMessage(`{"target": "`+w.id+`"}`)); res.Text != "error: "+w.id+" is not your worker; call workers to see yours" {
		w.t.Fatalf("another master's merge: %+v", res)
	}
	res, err = w.s.TeamTool(ctx, w.master, "merge", json.RawMessage(`{"target": "`+w.id+`"}`))
	if err != nil || res.Text != "merged "+w.branch()+" into main (fast-forward to "+last.Head[:10]+")" {
		w.t.Fatalf("the merge tool: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.repo, "b.txt")); string(b) != "new\n" {
		w.t.Fatal("the merge did not reach the master's checkout")
	}
	if info, _ := w.s.Get(w.id); !info.Worktree.Merged || info.Worktree.Ahead != 0 {
		w.t.Fatalf("after merge: %+v", info.Worktree)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// standInResolver is a Claude Code stand-in that works in its git
// worktree: its first task writes "second" into a.txt; a task that says
// rebase rebases its branch on main and resolves the conflict by keeping
// both lines, as an agent would.
const standInResolver = "#!/bin/sh\n" +
	"R=────────────────────────────────────────\n" +
	"draw() { printf '\\033[2J\\033[H%s\\n%s\\n❯ \\n%s\\n  %s ' \"$1\" \"$R\" \"$R\" \"$2\"; }\n" +
	"G='git -c user.name=agent -c user.email=agent@x'\n" +
	"draw '' '? for shortcuts'\n" +
	"while IFS= read -r line; do\n" +
	"  draw '✻ Working…' 'esc to interrupt'\n" +
	"  case \"$line\" in\n" +
	"  *rebase*) $G rebase main >/dev/null 2>&1 || { printf 'first and second\\n' > a.txt; $G add a.txt; GIT_EDITOR=true $G rebase --continue >/dev/null 2>&1; } ;;\n" +
	"  *) echo second > a.txt ;;\n" +
	"  esac\n" +
	"  sleep 1\n" +
	"  draw '● done' '? for shortcuts'\n" +
	"done\n"

// TestWorktreeConflictSentBack: two workers change one line; the second
// merge conflicts, leaves the master's checkout as it was, and with
// send-back becomes a task for its worker (a CLI agent), who rebases and
// resolves; then it merges. A shell worker's conflict is not sent back
// (it would run the words as a command).
func TestWorktreeConflictSentBack(t *testing.T) {
	t.Parallel()
	s, _ := newStandInSupervisor(t, os.Getenv, standInResolver)
	repo := gitRepo(t)
	master, ws := worktreeTeam(t, s, repo, 1)
	ctx := context.Background()
	agent := resolverAgent(t, s, master)

	one := runShellTask(t, s, ws[0], "echo first > a.txt")
	two, err := s.Dispatch(ctx, "", agent.ID, "change a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := waitTask(t, s, two.ID, 30*time.Second); got.Status != api.TaskDone || got.Files != 1 {
		t.Fatalf("the agent's task: %s %+v", got.Status, got.Work)
	}
	if _, err := s.Merge(ctx, api.MergeRequest{Target: itoa(one.ID)}); err != nil {
		t.Fatal(err)
	}
	before := gitIn(t, repo, "rev-parse", "HEAD")
	m, err := s.Merge(ctx, api.MergeRequest{Target: itoa(two.ID)})
	if err != nil || !slices.Equal(m.Conflicts, []string{"a.txt"}) || m.SentBack != nil {
		t.Fatalf("conflict: %+v %v", m, err)
	}
	if gitIn(t, repo, "rev-parse", "HEAD") != before || gitIn(t, repo, "status", "--porcelain") != "" {
		t.Fatal("a conflict changed the master's checkout")
	}
	m, err = s.Merge(ctx, api.MergeRequest{Target: agent.ID, SendBack: true, Caller: master})
	if err != nil || m.SentBack == nil || m.SentBack.To != agent.ID || m.SentBack.From != master ||
		!strings.HasPrefix(m.SentBack.Text, "rebase "+m.Branch+" on main and resolve: a.txt") {
		t.Fatalf("send-back: %+v %v", m.SentBack, err)
	}
	checkRebased(t, s, repo, m.SentBack.ID)
	if m, err = s.Merge(ctx, api.MergeRequest{Target: agent.ID}); err != nil || len(m.Conflicts) > 0 {
		t.Fatalf("merge after the fix: %+v %v", m, err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "first and second\n" {
		t.Fatalf("a.txt = %q", b)
	}
	shellConflictStays(t, s, ws[0])
}

// shellConflictStays: a shell worker's conflict is not sent back.
func shellConflictStays(t *testing.T, s *Supervisor, shell string) {
	t.Helper()
	runShellTask(t, s, shell, "echo third > a.txt")
	if _, err := s.Merge(context.Background(), api.MergeRequest{Target: shell, SendBack: true}); err == nil || !strings.Contains(err.Error(), "runs its tasks as shell commands") {
		t.Fatalf("send-back to a shell: %v", err)
	}
}

// checkRebased: the task sent back ends done, and its record is the
// branch's own work on main, not main's commits it was rebased onto.
func checkRebased(t *testing.T, s *Supervisor, repo string, id int64) {
	t.Helper()
	rebased := waitTask(t, s, id, 30*time.Second)
	if rebased.Status != api.TaskDone {
		t.Fatalf("the task sent back: %s %s", rebased.Status, rebased.Error)
	}
	if main := gitIn(t, repo, "rev-parse", "main"); rebased.Base != main || rebased.Commits != 1 || rebased.Files != 1 {
		t.Fatalf("the rebase's work: %+v, want 1 commit, 1 file from main (%s)", rebased.Work, main)
	}
}

// resolverAgent is a standInResolver worker of master in a worktree,
// idle; its guidance is in its config folder, not its worktree.
func resolverAgent(t *testing.T, s *Supervisor, master string) api.CreateResponse {
	t.Helper()
	agent, err := s.Create(context.Background(), api.CreateRequest{Title: "cc", Type: "claude", Master: master, Worktree: true, Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), agent.ID) })
	waitPane(t, s, agent.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	info, _ := s.Get(agent.ID)
	if _, err := os.Stat(filepath.Join(s.cfg.Home.paneDir(agent.ID), "claude", "CLAUDE.md")); err != nil {
		t.Fatalf("the guidance is not in the agent's config folder: %v", err)
	}
	if st := gitIn(t, info.Workspace, "status", "--porcelain"); st != "" {
		t.Fatalf("the worktree holds files of ours: %q", st)
	}
	return agent
}

// TestWorktreeRefusals: each refused create or merge is a sentence, and
// changes nothing.
func TestWorktreeRefusals(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	ctx := context.Background()
	create := func(ws string) error {
		_, err := s.Create(ctx, api.CreateRequest{Title: "x", Type: "shell", Worktree: true, Workspace: ws, Backend: "pty",
			Command: []string{"bash", "--norc", "--noprofile"}})
		return err
	}
	detached := gitRepo(t)
	gitIn(t, detached, "checkout", "-q", "--detach")
	bare := filepath.Join(t.TempDir(), "b.git")
	gitIn(t, "", "init", "-q", "--bare", bare)
	taken := gitRepo(t)
	tag, err := s.trees.Tag()
	if err != nil {
		t.Fatal(err)
	}
	gitIn(t, taken, "branch", "cicy/"+tag+"/w-1")
	for _, c := range []struct{ ws, want string }{
		{t.TempDir(), "is not in a git repository"},
		{bare, "is a bare repository"},
		{detached, "has a detached HEAD"},
		{taken, "the branch cicy/" + tag + "/w-1 exists"},
	} {
		if err := create(c.ws); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.ws, err, c.want)
		}
	}
	if _, err := s.Create(ctx, api.CreateRequest{Title: "x", Type: "shell", Worktree: true, Command: []string{"bash"}}); err == nil ||
		!strings.Contains(err.Error(), "--worktree needs the repository") {
		t.Errorf("no repository named: %v", err)
	}
	if l := gitIn(t, taken, "worktree", "list"); strings.Count(l, "\n") != 0 {
		t.Errorf("a refused create left a worktree: %s", l)
	}
	// A dirty master checkout is refused, and kept as it was.
	repo := gitRepo(t)
	_, ws := worktreeTeam(t, s, repo, 1)
	runShellTask(t, s, ws[0], "echo w > w.txt")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Merge(ctx, api.MergeRequest{Target: ws[0]}); err == nil || !strings.Contains(err.Error(), "has uncommitted changes; commit or stash them") {
		t.Fatalf("dirty: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "mine\n" {
		t.Fatal("the user's change was lost")
	}
	if _, err := s.Merge(ctx, api.MergeRequest{Target: "9999"}); err == nil {
		t.Error("merging a task that does not exist")
	}
}

// TestWorktreeKill: a killed worker's worktree goes only when clean and
// merged; otherwise it stays, is listed, can be merged, and pruned then.
func TestWorktreeKill(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	repo := gitRepo(t)
	_, ws := worktreeTeam(t, s, repo, 2)
	ctx := context.Background()
	runShellTask(t, s, ws[0], "echo x > x.txt")
	info, _ := s.Get(ws[0])
	res, err := s.KillPane(ctx, ws[0])
	if err != nil || !strings.Contains(res.Kept, "is not merged into main") {
		t.Fatalf("kill: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(info.Workspace, "x.txt")); err != nil {
		t.Fatal("the unmerged work is gone")
	}
	// The second worker did nothing: its worktree goes with it.
	info2, _ := s.Get(ws[1])
	if res, err := s.KillPane(ctx, ws[1]); err != nil || res.Kept != "" {
		t.Fatalf("kill a clean one: %+v %v", res, err)
	}
	if _, err := os.Stat(info2.Workspace); !os.IsNotExist(err) {
		t.Fatal("a clean, merged worktree was kept")
	}
	l := s.Worktrees(ctx, false)
	if len(l) != 1 || l[0].Pane != ws[0] || !l[0].Gone || l[0].Merged || l[0].Ahead != 1 {
		t.Fatalf("worktrees: %+v", l)
	}
	if l = s.Worktrees(ctx, true); len(l) != 1 {
		t.Fatalf("prune removed unmerged work: %+v", l)
	}
	if _, err := s.Merge(ctx, api.MergeRequest{Target: ws[0]}); err != nil {
		t.Fatal(err)
	}
	if l = s.Worktrees(ctx, true); len(l) != 0 {
		t.Fatalf("after merge and prune: %+v", l)
	}
	if b := gitIn(t, repo, "branch", "--list", "cicy/*"); b != "" {
		t.Fatalf("branches left: %q", b)
	}
}

// TestWorktreeDeletedByHand: a worker whose worktree folder was deleted
// gets it back from its branch when it starts again.
func TestWorktreeDeletedByHand(t *testing.T) {
	t.Parallel()
	s, _ := newTestSupervisor(t, nil)
	repo := gitRepo(t)
	_, ws := worktreeTeam(t, s, repo, 1)
	runShellTask(t, s, ws[0], "echo kept > k.txt")
	info, _ := s.Get(ws[0])
	ctx := context.Background()
	if err := os.RemoveAll(info.Workspace); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx, ws[0]); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(info.Workspace, "k.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("after restart: %q %v", b, err)
	}
}
