package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
)

// BenchmarkKillNine: exactly once under kill -9. A supervisor in a process
// of its own (the home's SQLite) runs a team: a cicy master on the
// scripted model, three cicy workers, two shell workers on PTYs (they die
// with the supervisor) and two on tmux (they outlive it). 900 tasks are
// dispatched from this process, one every ~60 ms, while the supervisor is
// killed with SIGKILL 15 times at random moments and started again each
// time (the PTY workers it lost are restarted). At the end every task must
// have ended once — done, or failed with a reason — and its master must
// have been told once: its 🔔 line in the master's history (current.json,
// its journal and archives), no line missing, none twice. Reports the
// kills, the lost and duplicated notifications (the benchmark fails on
// any), the wall time, and the percentiles of created → ended and created
// → told.
func BenchmarkKillNine(b *testing.B) { eachDB(b, benchKillNine) }

func benchKillNine(b *testing.B, cfg Config) {
	for i := 0; i < b.N; i++ {
		r := runKillNine(b, killNineSize{tasks: 900, kills: 15, gap: 60 * time.Millisecond, db: cfg.DB})
		reportKillNine(b, r)
	}
}

// reportKillNine reports a run's counts and times.
func reportKillNine(b *testing.B, r killNineResult) {
	b.ReportMetric(float64(r.tasks), "tasks")
	b.ReportMetric(float64(r.kills), "kills")
	b.ReportMetric(float64(r.failed), "failed")
	b.ReportMetric(float64(r.lost), "lost")
	b.ReportMetric(float64(r.duplicated), "duplicated")
	b.ReportMetric(r.wall.Seconds(), "wall-s")
	b.ReportMetric(float64(r.ranTwice), "tools-run-twice")
	b.ReportMetric(float64(r.interrupted), "tools-interrupted")
	reportPercentiles(b, "ended", r.ended)
	reportPercentiles(b, "told", r.told)
}

// TestKillNine is BenchmarkKillNine small: 60 tasks, 3 kills.
func TestKillNine(t *testing.T) {
	runKillNine(t, killNineSize{tasks: 60, kills: 3, gap: 60 * time.Millisecond})
}

// killRules are benchRules but for the master, whose turn on its 🔔
// lines runs a shell tool for 50 ms, as a real master's turn takes time:
// the lines that come meanwhile wait in its queue, and a kill often finds
// it mid-turn with lines queued; short enough that it is often idle when
// a line comes, which then starts a turn at once.
//
// A cicy worker's task runs one shell call, which appends the task's id to
// tools.log in the worker's workspace and takes 100 ms, so kills find
// calls running: the run counts the calls that ran twice (a call started
// before a kill must not run again after it). A call a kill interrupted
// gets a result saying so, and the worker answers "interrupted: …".
const killRules = `rules:
  - match: {aux: memory}
    reply: {text: '{"memories":[]}'}
  - match: {tool_result: true, tool_output: 'ran (\d+)'}
    reply: {text: 'done {{o1}}'}
  - match: {tool_result: true, tool_output: 'interrupted by a restart'}
    reply: {text: 'interrupted: {{tool_result}}'}
  - match: {tool_result: true}
    reply: {text: ok}
  - match: {last_user: '🔔'}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'sleep 0.05'}
  - match: {last_user: 'task (\d+): '}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'echo {{1}} >> tools.log && sleep 0.1 && echo ran {{1}}'}
  - match: {aux: '*'}
    reply: {text: ok}
`

// killNineSize is one run's size: tasks dispatched gap apart, kills.
type killNineSize struct {
	tasks, kills int
	gap          time.Duration
	db           string // the PostgreSQL URL of the state; "": the home's SQLite
	// repoFiles, when > 0, runs the workers in worktrees of a repository
	// of that many files, their tasks each changing a file of their own
	// (BenchmarkKillNineWorktrees).
	repoFiles int
}

// killNineResult is what a run found.
type killNineResult struct {
	tasks, kills, failed, lost, duplicated int
	// ranTwice: the tool calls of cicy tasks that ran more than once;
	// interrupted: the tasks whose call a kill interrupted (its result
	// said so); noCommit (with worktrees): the tasks done without their
	// change in a commit of their own.
	ranTwice, interrupted, noCommit int
	reasons                         map[string]int // the failed tasks' errors
	wrong                           []int64        // the tasks told other than once
	wall                            time.Duration
	ended, told                     []time.Duration // from created
}

// killWorker is a worker of the team and how its tasks read.
type killWorker struct {
	id, kind string // kind: cicy, pty or tmux
	worktree bool   // it runs in a worktree: each task changes a file
}

// task is the text of the worker's i-th task, unique in the run. In a
// worktree a shell task writes k<i>.txt and a cicy task has its model
// write t<task id>.txt (worktreeKillRules).
func (w killWorker) task(i int) string {
	switch {
	case w.kind == "cicy" && w.worktree:
		return fmt.Sprintf("edit k%d", i)
	case w.kind == "cicy":
		return fmt.Sprintf("job k%d", i)
	case w.worktree:
		return fmt.Sprintf("echo k%d | tee k%d.txt", i, i)
	}
	return fmt.Sprintf("echo k%d", i)
}

// killTeam is the supervisor process of a run (replaced at each kill) and
// its team.
type killTeam struct {
	tb      testing.TB
	home    Home
	db      string
	master  string
	workers []killWorker
	repo    string // with worktrees: the repository
	counter string // with worktrees: the file each tool call appends its task id to

	quit chan struct{} // closed when the run ends: the dispatcher stops

	mu sync.Mutex
	n  *procNode
}

// pause sleeps d; false when the run ended meanwhile.
func (k *killTeam) pause(d time.Duration) bool {
	select {
	case <-k.quit:
		return false
	case <-time.After(d):
		return true
	}
}

// spawn starts the supervisor's process.
func (k *killTeam) spawn() *procNode {
	if k.db == "" {
		return spawnServe(k.tb, "", k.home)
	}
	return spawnServe(k.tb, "", k.home, "CICY_DB="+k.db)
}

func (k *killTeam) client() *api.Client {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n.c
}

// runKillNine is one run; it fails tb on any task lost, stuck, ended twice
// or told other than once.
func runKillNine(tb testing.TB, size killNineSize) killNineResult {
	tb.Helper()
	tb.Setenv("HOME", tb.TempDir())
	k := &killTeam{tb: tb, home: Home{Root: filepath.Join(tb.TempDir(), "home")}, db: size.db, quit: make(chan struct{})}
	script := killRules
	if size.repoFiles > 0 {
		k.repo = bigRepo(tb, size.repoFiles)
		k.counter = filepath.Join(tb.TempDir(), "tool-runs")
		script = worktreeKillRules(k.counter)
	}
	rules := filepath.Join(tb.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(script), 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Setenv("CICY_SCRIPT", rules) // the supervisor process inherits both
	k.n = k.spawn()
	tb.Cleanup(func() {
		k.mu.Lock()
		k.n.kill9()
		k.mu.Unlock()
		_ = pane.NewTmuxServer(k.home.Root, quietLog()).KillServer()
	})
	k.createTeam()
	seed := time.Now().UnixNano()
	tb.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	start := time.Now()
	ids := make(chan map[string]int64, 1)
	go func() { ids <- k.dispatchAll(size, rand.New(rand.NewPCG(uint64(seed), 1))) }()
	var dispatched map[string]int64
	tb.Cleanup(func() { // a run cut short stops its dispatcher
		close(k.quit)
		if dispatched == nil {
			<-ids
		}
	})
	for i := 0; i < size.kills; i++ {
		time.Sleep(time.Duration(300+rng.IntN(2200)) * time.Millisecond)
		k.killAndRestart()
	}
	dispatched = <-ids
	if tb.Failed() {
		tb.FailNow()
	}
	tasks := k.waitAllEnded(dispatched)
	wall := time.Since(start)
	workspace := k.waitMasterIdle()
	runs := k.toolRuns()
	k.stop() // the master's history as its last turn left it
	r := k.check(dispatched, tasks, workspace)
	for id, n := range runs {
		if n > 1 {
			r.ranTwice++
			r.wrong = append(r.wrong, id)
			tb.Errorf("task %d: its tool call ran %d times", id, n)
		}
	}
	r.kills, r.wall = size.kills, wall
	tb.Logf("%d tasks (%d failed), %d kills: %d notifications lost, %d duplicated, %d tools run twice, %d interrupted, %.1f s",
		r.tasks, r.failed, r.kills, r.lost, r.duplicated, r.ranTwice, r.interrupted, wall.Seconds())
	for why, n := range r.reasons {
		tb.Logf("%4d failed: %s", n, why)
	}
	if k.repo != "" {
		k.checkWork(dispatched, tasks, runs, &r)
		tb.Logf("worktrees: %d tasks done without their commit", r.noCommit)
	}
	if r.lost > 0 || r.duplicated > 0 || r.ranTwice > 0 {
		k.logAbout(r.wrong)
		tb.Fatalf("%d notifications lost, %d duplicated, %d tools run twice", r.lost, r.duplicated, r.ranTwice)
	}
	if r.noCommit > 0 {
		tb.Fatalf("%d tasks done without their commit", r.noCommit)
	}
	return r
}

// toolRuns counts the runs of each cicy task's tool call: the lines of
// tools.log in the cicy workers' workspaces, by task id.
func (k *killTeam) toolRuns() map[int64]int {
	if k.counter != "" {
		return k.counterRuns()
	}
	runs := map[int64]int{}
	for _, w := range k.workers {
		if w.kind != "cicy" {
			continue
		}
		p, err := k.client().Get(context.Background(), w.id)
		if err != nil {
			k.tb.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(p.Workspace, "tools.log"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			k.tb.Fatal(err)
		}
		for _, line := range strings.Fields(string(b)) {
			id, err := strconv.ParseInt(line, 10, 64)
			if err != nil {
				k.tb.Fatalf("%s's tools.log holds %q", w.id, line)
			}
			runs[id]++
		}
	}
	return runs
}

// createTeam makes the master and its workers and waits until all are
// idle.
func (k *killTeam) createTeam() {
	c, ctx := k.client(), context.Background()
	m, err := c.Create(ctx, api.CreateRequest{Title: "lead", Type: "cicy", Role: "master", Provider: "script", Workspace: k.repo})
	if err != nil {
		k.tb.Fatal(err)
	}
	k.master = m.ID
	bash := []string{"bash", "--norc", "--noprofile"}
	wt := k.repo != ""
	for i, kind := range []string{"cicy", "pty", "tmux", "cicy", "pty", "tmux", "cicy"} {
		req := api.CreateRequest{Title: fmt.Sprintf("%s%d", kind, i), Type: "cicy", Provider: "script", Role: "worker", Master: k.master, Worktree: wt}
		if kind != "cicy" {
			req = api.CreateRequest{Title: req.Title, Type: "shell", Backend: kind, Command: bash, Role: "worker", Master: k.master, Worktree: wt}
		}
		w, err := c.Create(ctx, req)
		if err != nil {
			k.tb.Fatalf("create %s: %v", req.Title, err)
		}
		k.workers = append(k.workers, killWorker{id: w.ID, kind: kind, worktree: wt})
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ps, err := c.List(ctx)
		if err != nil {
			k.tb.Fatal(err)
		}
		if !slices.ContainsFunc(ps, func(p api.PaneInfo) bool { return p.State != "idle" }) {
			return
		}
		if time.Now().After(deadline) {
			k.tb.Fatalf("the team never idle: %+v", ps)
		}
	}
}

// dispatchAll dispatches the run's tasks round the workers, about gap
// apart, whatever the supervisor's outages, and returns each task's id by
// its text.
func (k *killTeam) dispatchAll(size killNineSize, rng *rand.Rand) map[string]int64 {
	ids := map[string]int64{}
	for i := 0; i < size.tasks; i++ {
		w := k.workers[i%len(k.workers)]
		id, err := k.dispatchOnce(w, w.task(i))
		if err != nil {
			select {
			case <-k.quit: // the run ended first
			default:
				k.tb.Errorf("task %d: %v", i, err)
			}
			return ids
		}
		ids[w.task(i)] = id
		if !k.pause(time.Duration(rng.Int64N(int64(2 * size.gap)))) {
			break
		}
	}
	return ids
}

// dispatchOnce dispatches text to w exactly once: a dispatch whose answer
// a kill cut off may have created the task, so before another try the
// worker's tasks are searched for it.
func (k *killTeam) dispatchOnce(w killWorker, text string) (int64, error) {
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for tried := false; time.Now().Before(deadline); tried = true {
		c := k.client()
		if tried {
			ts, err := c.Tasks(ctx, w.id)
			if err != nil {
				if !k.pause(50 * time.Millisecond) {
					break
				}
				continue
			}
			if i := slices.IndexFunc(ts, func(t api.TaskInfo) bool { return t.To == w.id && t.Text == text }); i >= 0 {
				return ts[i].ID, nil
			}
		}
		t, err := c.Dispatch(ctx, api.DispatchRequest{From: k.master, To: w.id, Text: text})
		if err == nil {
			return t.ID, nil
		}
		if !k.pause(50 * time.Millisecond) {
			break
		}
	}
	return 0, fmt.Errorf("could not dispatch %q to %s", text, w.id)
}

// killAndRestart kills the supervisor's process group with SIGKILL, starts
// it again, and restarts the PTY workers that died with it once their
// tasks were settled.
func (k *killTeam) killAndRestart() {
	k.mu.Lock()
	k.n.kill9()
	k.n = k.spawn()
	k.mu.Unlock()
	for _, w := range k.workers {
		if w.kind == "pty" {
			k.restartPTY(w.id)
		}
	}
}

// restartPTY starts a PTY worker again once the new supervisor settled
// the task it had (recovery fails it: its process ended with the
// supervisor); until then a new shell could be taken for the old one.
func (k *killTeam) restartPTY(id string) {
	c, ctx := k.client(), context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			k.tb.Fatalf("PTY worker %s: its delivered task was never settled after the restart", id)
		}
		ts, err := c.Tasks(ctx, id)
		if err != nil || slices.ContainsFunc(ts, func(t api.TaskInfo) bool { return t.To == id && t.Status == api.TaskDelivered }) {
			continue
		}
		p, err := c.Get(ctx, id)
		if err != nil {
			k.tb.Fatal(err)
		}
		if p.State != "exited" {
			return
		}
		if err := c.Restart(ctx, id); err != nil {
			k.tb.Fatalf("restart %s: %v", id, err)
		}
		return
	}
}

// waitAllEnded polls until every dispatched task ended and its master was
// told, and returns them.
func (k *killTeam) waitAllEnded(dispatched map[string]int64) map[int64]api.TaskInfo {
	want := map[int64]bool{}
	for _, id := range dispatched {
		want[id] = true
	}
	var open []api.TaskInfo
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		all, err := k.client().Tasks(context.Background(), "")
		if err != nil {
			k.tb.Fatal(err)
		}
		got := map[int64]api.TaskInfo{}
		open = open[:0]
		for _, t := range all {
			switch {
			case !want[t.ID]:
			case t.Ended() && t.NotifiedAt != nil:
				got[t.ID] = t
			default:
				open = append(open, t)
			}
		}
		if len(got) == len(want) {
			return got
		}
	}
	k.tb.Fatalf("%d tasks stuck 5 minutes after the last kill (not ended, or the master not told), e.g. %+v", len(open), open[:min(len(open), 5)])
	return nil
}

// waitMasterIdle waits until the master took every line it was given (it
// is idle, and a cicy pane idles only with nothing queued), and returns
// its workspace.
func (k *killTeam) waitMasterIdle() string {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if p, err := k.client().Get(context.Background(), k.master); err == nil && p.State == "idle" {
			return p.Workspace
		}
		if time.Now().After(deadline) {
			k.tb.Fatal("the master never idle after the last notification")
		}
	}
}

// stop ends the supervisor (SIGTERM) and waits for it.
func (k *killTeam) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	_ = k.n.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = k.n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = syscall.Kill(-k.n.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		k.tb.Fatal("the supervisor did not stop in a minute after SIGTERM")
	}
}

// check counts the run's findings: a text dispatched with no task, a task
// with no reason for its failure, an end logged twice, a notification
// missing from or repeated in the master's history.
func (k *killTeam) check(dispatched map[string]int64, tasks map[int64]api.TaskInfo, workspace string) killNineResult {
	r := killNineResult{tasks: len(tasks), reasons: map[string]int{}}
	ends := k.loggedEnds()
	bells := bellCounts(k.tb, workspace)
	for text, id := range dispatched {
		t := tasks[id]
		switch {
		case t.Text != text:
			k.tb.Errorf("task %d holds %q, dispatched as %q", id, t.Text, text)
		case t.Status == api.TaskFailed && t.Error == "":
			k.tb.Errorf("task %d failed with no reason: %+v", id, t)
		case t.Status != api.TaskDone && t.Status != api.TaskFailed:
			k.tb.Errorf("task %d ended %s", id, t.Status)
		case t.Status == api.TaskDone && !killResultOK(t) && !interruptedEdit(t):
			k.tb.Errorf("task %d (%q) done with another's result: %q (%s, from %s)", id, text, t.Result, t.Reason, t.Source)
		}
		if strings.HasPrefix(t.Result, "interrupted: ") {
			r.interrupted++
		}
		if t.Status == api.TaskFailed {
			r.failed++
			r.reasons[t.Error]++
		}
		if ends[id] > 1 {
			k.tb.Errorf("task %d: its end was recorded %d times", id, ends[id])
		}
		if bells[id] != 1 {
			r.wrong = append(r.wrong, id)
		}
		switch n := bells[id]; {
		case n == 0:
			r.lost++
			k.tb.Errorf("task %d (%s, %s): its master was never told", id, t.To, t.Status)
		case n > 1:
			r.duplicated++
			k.tb.Errorf("task %d (%s, %s): its master was told %d times", id, t.To, t.Status, n)
		}
		if t.FinishedAt != nil && t.NotifiedAt != nil {
			r.ended = append(r.ended, t.FinishedAt.Sub(t.CreatedAt))
			r.told = append(r.told, t.NotifiedAt.Sub(t.CreatedAt))
		}
	}
	return r
}

// logAbout shows the supervisors' log lines about tasks ids (the first
// 50): the evidence of a notification lost or repeated.
func (k *killTeam) logAbout(ids []int64) {
	b, err := os.ReadFile(k.home.Log())
	if err != nil {
		k.tb.Log(err)
		return
	}
	shown := 0
	for _, line := range strings.Split(string(b), "\n") {
		for _, id := range ids {
			if shown < 50 && (strings.HasSuffix(line, fmt.Sprintf(" task=%d", id)) || strings.Contains(line, fmt.Sprintf(" task=%d ", id))) {
				k.tb.Log(line)
				shown++
			}
		}
	}
}

// killResultOK: a cicy worker answers "done <task id>" (or, when a kill
// interrupted its tool call, says so), a shell worker prints the task's
// token (echo k12 → k12, echo k12 | tee k12.txt → k12).
func killResultOK(t api.TaskInfo) bool {
	if cmd, ok := strings.CutPrefix(t.Text, "echo "); ok {
		return strings.Contains(t.Result, strings.Fields(cmd)[0])
	}
	return t.Result == fmt.Sprintf("done %d", t.ID) ||
		strings.HasPrefix(t.Result, "interrupted: ") && strings.Contains(t.Result, "interrupted by a restart")
}

// endLine is the supervisor's log line of a task's end ("Task done: …",
// fields sorted: status before task).
var endLine = regexp.MustCompile(`msg="Task (?:done|failed|cancelled): .* task=(\d+)`)

// loggedEnds counts the ends the supervisors logged, by task: each is a
// conditional update that took (a kill may cut the line of one off, never
// add a second).
func (k *killTeam) loggedEnds() map[int64]int {
	f, err := os.Open(k.home.Log())
	if err != nil {
		k.tb.Fatal(err)
	}
	defer f.Close()
	ends := map[int64]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := endLine.FindStringSubmatch(sc.Text()); m != nil {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			ends[id]++
		}
	}
	if err := sc.Err(); err != nil {
		k.tb.Fatal(err)
	}
	return ends
}

// bellLine is a notification line: "🔔 [w-2] task 7 → done: …".
var bellLine = regexp.MustCompile(`^🔔 \[[^\]]+\] task (\d+) → `)

// bellCounts counts the 🔔 lines of each task in the user messages of a
// cicy pane's durable history: current.json and what its journal adds
// (as a restore reads them), and the archives of /compact and /clear
// (none in a run with neither). A history file kept aside as unreadable
// is an error.
func bellCounts(tb testing.TB, workspace string) map[int64]int {
	tb.Helper()
	dir := cicy.HistoryDir(workspace)
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	counts := map[int64]int{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.Contains(name, ".corrupt-"):
			tb.Errorf("the master's history holds %s: a file a restart could not read", name)
		case strings.HasPrefix(name, "current.") && strings.HasSuffix(name, ".json"):
			var cur cicy.Current
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || json.Unmarshal(b, &cur) != nil {
				tb.Fatalf("read %s: %v", name, err)
			}
			msgs := cur.Messages
			if name == "current.json" {
				msgs = withJournal(tb, filepath.Join(dir, "current.journal"), msgs)
			}
			for _, m := range msgs {
				countBells(m, counts)
			}
		}
	}
	return counts
}

// withJournal adds the journal's messages that continue msgs, as a
// restore does (a line whose id does not follow on is one current.json
// already holds).
func withJournal(tb testing.TB, path string, msgs []cicy.HistMessage) []cicy.HistMessage {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var m cicy.HistMessage
		if json.Unmarshal([]byte(line), &m) != nil {
			break
		}
		if m.ID == len(msgs)+1 {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

func countBells(m cicy.HistMessage, counts map[int64]int) {
	if m.Role != "user" {
		return
	}
	for _, bl := range m.Content {
		for _, line := range strings.Split(bl.Text, "\n") {
			if g := bellLine.FindStringSubmatch(line); g != nil {
				id, _ := strconv.ParseInt(g[1], 10, 64)
				counts[id]++
			}
		}
	}
}

// onceRules: a task runs one shell call that appends the task's id to
// tools.log and then takes 5 s; its result, or the word that a restart
// interrupted it, is answered.
const onceRules = `rules:
  - match: {tool_result: true, tool_output: 'interrupted by a restart'}
    reply: {text: 'interrupted: {{tool_result}}'}
  - match: {tool_result: true}
    reply: {text: 'finished'}
  - match: {last_user: 'task (\d+): '}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'echo {{1}} >> tools.log && sleep 5'}
  - match: {aux: '*'}
    reply: {text: ok}
`

// TestKillNineToolRunsOnce: the supervisor is killed (SIGKILL) while a
// cicy worker's task runs its tool call. After the restart the call is
// not run again (tools.log holds the task's id once): the worker's turn
// goes on, the model told the call was interrupted by a restart, and the
// task ends once, done with that turn's answer. It was delivered again
// and ran the call a second time.
func TestKillNineToolRunsOnce(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(onceRules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CICY_SCRIPT", rules)
	home := Home{Root: filepath.Join(t.TempDir(), "home")}
	n := spawnServe(t, "", home)
	t.Cleanup(func() { n.kill9() })
	ctx := context.Background()
	w, err := n.c.Create(ctx, api.CreateRequest{Title: "eng", Type: "cicy", Provider: "script", Role: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	task, err := n.c.Dispatch(ctx, api.DispatchRequest{To: w.ID, Text: "write a line"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := n.c.Get(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(p.Workspace, "tools.log")
	pollFor(t, "the tool call to start", func() bool { b, _ := os.ReadFile(log); return len(b) > 0 })
	n.kill9()
	n = spawnServe(t, "", home)

	var got api.TaskInfo
	pollFor(t, "the task to end", func() bool {
		ts, err := n.c.Tasks(ctx, w.ID)
		if err != nil {
			return false
		}
		for _, x := range ts {
			if x.ID == task.ID {
				got = x
			}
		}
		return got.Ended()
	})
	if b, _ := os.ReadFile(log); string(b) != fmt.Sprintf("%d\n", task.ID) {
		t.Errorf("tools.log = %q: the tool call ran %d times", b, strings.Count(string(b), "\n"))
	}
	if got.Status != api.TaskDone || !strings.HasPrefix(got.Result, "interrupted: error: this call was interrupted by a restart") || got.Attempts > 1 {
		t.Errorf("the task ended %s (attempts %d): %q %q; want done once, with the answer to the interrupted call", got.Status, got.Attempts, got.Result, got.Error)
	}
}
