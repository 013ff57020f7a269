package supervisor

import (
	"context"
	"fmt"
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
	"github.com/cicy-ai/cicy-agent/supervisor/worktree"
)

const (
	benchTeamWorkers = 20
	benchTeamTasks   = 5 // per worker
)

// teamTask is one task of the 20-worker benchmark and what it should
// leave: a commit of its own, none (it changes nothing), or a line in
// shared.txt that conflicts with the other workers' lines.
type teamTask struct {
	id       int64
	worker   string
	changes  bool
	conflict bool
	line     string // the line it appends to shared.txt (conflict only)
}

// teamTaskText is task j of worker i in round r: most edit a file of
// their worker's own folder and add one; one in ten workers' fourth task
// changes nothing; every fourth worker's last task appends its line to
// shared.txt, which the others of them append to too.
func teamTaskText(r, i, j int) (string, teamTask) {
	tt := teamTask{changes: true}
	switch {
	case j == 3 && i%10 == 0:
		tt.changes = false
		return "ls > /dev/null", tt
	case j == 4 && i%4 == 0:
		tt.conflict, tt.line = true, fmt.Sprintf("round %d worker %d", r, i)
		return fmt.Sprintf("echo '%s' >> shared.txt", tt.line), tt
	}
	dir := fmt.Sprintf("pkg%03d", 50+i)
	return fmt.Sprintf("mkdir -p %s r%d && printf 'r%d t%d\\n' >> %s/file%03d.go && echo w%d-t%d > r%d/w%d-t%d.txt",
		dir, r, r, j, dir, j, i, j, r, i, j), tt
}

// BenchmarkWorktreeTwentyWorkers: 20 bash workers (pty), each in its own
// worktree of one 10,000-file repository (worktree) or in a plain folder
// of its own (plain: the same tasks without worktrees, for the
// overhead), get 5 tasks each, all dispatched at once (100 tasks). Wall
// time runs from the first dispatch to the last task done;
// delivered-to-done is each task's delivered_at to its finished_at (the
// command typed, run, its end seen, the commit and the record — behind
// the other workers' in the outbox's one goroutine).
// With worktrees the master then merges every task in order; a conflict
// is resolved by merging the task's commit with git's union driver for
// shared.txt (a shell worker's conflict cannot be sent back). The
// benchmark fails unless every changing task made exactly one commit
// (Cicy-Task trailer), every commit is on main, shared.txt holds every
// conflicting line, and each worker's tasks chain base to head.
func BenchmarkWorktreeTwentyWorkers(b *testing.B) {
	for _, mode := range []string{"worktree", "plain"} {
		b.Run(mode, func(b *testing.B) {
			s, _ := newTestSupervisor(b, nil)
			var repo string
			var workers []string
			if mode == "worktree" {
				repo = bigRepo(b, benchRepoFiles)
				_, workers = worktreeTeam(b, s, repo, benchTeamWorkers)
			} else {
				workers = plainTeam(b, s, benchTeamWorkers)
			}
			for r := 0; b.Loop(); r++ {
				tasks, wall, lat := runTeamRound(b, s, workers, r)
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.ReportMetric(ms(wall)/float64(len(tasks)), "wall-per-task-ms")
				reportPercentiles(b, "delivered-to-done", lat)
				if repo != "" {
					mergeTeamRound(b, s, repo, tasks)
				}
			}
		})
	}
}

// plainTeam is n bash workers, each in a folder of its own.
func plainTeam(tb testing.TB, s *Supervisor, n int) []string {
	tb.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		w, err := s.Create(context.Background(), api.CreateRequest{Title: "dev", Type: "shell", Backend: "pty",
			Command: []string{"bash", "--norc", "--noprofile"}})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Kill(context.Background(), w.ID) })
		waitPane(tb, s, w.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
		ids = append(ids, w.ID)
	}
	return ids
}

// runTeamRound dispatches every worker its tasks at once and waits for
// all of them: the tasks in dispatch order, the wall time, and each
// task's delivered-to-done time.
func runTeamRound(b *testing.B, s *Supervisor, workers []string, r int) ([]teamTask, time.Duration, []time.Duration) {
	b.Helper()
	ctx := context.Background()
	var tasks []teamTask
	start := time.Now()
	for j := 0; j < benchTeamTasks; j++ {
		for i, w := range workers {
			text, tt := teamTaskText(r, i, j)
			t, err := s.Dispatch(ctx, "", w, text)
			if err != nil {
				b.Fatal(err)
			}
			tt.id, tt.worker = t.ID, w
			tasks = append(tasks, tt)
		}
	}
	var last time.Time
	var lat []time.Duration
	for _, tt := range tasks {
		got := waitTask(b, s, tt.id, 10*time.Minute)
		if got.Status != api.TaskDone {
			b.Fatalf("task %d: %s %s", tt.id, got.Status, got.Error)
		}
		done := schema.ParseTime(got.FinishedAt.String)
		last = later(last, done)
		lat = append(lat, done.Sub(schema.ParseTime(got.DeliveredAt.String)))
	}
	return tasks, last.Sub(start), lat
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// mergeTeamRound merges every task in order, as a master would, resolves
// the conflicts, and checks that nothing was lost or committed twice.
func mergeTeamRound(b *testing.B, s *Supervisor, repo string, tasks []teamTask) {
	b.Helper()
	ctx := context.Background()
	attrs := filepath.Join(b.TempDir(), "attributes")
	if err := os.WriteFile(attrs, []byte("shared.txt merge=union\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var conflicts int
	var lat []time.Duration
	for _, tt := range tasks {
		t0 := time.Now()
		m, err := s.Merge(ctx, api.MergeRequest{Target: itoa(tt.id)})
		if err != nil {
			b.Fatalf("merge of task %d: %v", tt.id, err)
		}
		if len(m.Conflicts) > 0 {
			conflicts++
			if !tt.conflict || !slices.Equal(m.Conflicts, []string{"shared.txt"}) {
				b.Fatalf("task %d conflicts in %v", tt.id, m.Conflicts)
			}
			gitIn(b, repo, "-c", "core.attributesFile="+attrs, "merge", "-q", "--no-ff", "-m", "merge task "+itoa(tt.id)+" (shared.txt: both)", m.Work.Head)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(time.Since(start).Seconds(), "merge-all-s")
	reportPercentiles(b, "merge", lat)
	b.ReportMetric(float64(conflicts), "conflicts")
	checkTeamRound(b, s, repo, tasks)
}

// checkTeamRound fails the benchmark unless every task's change is on
// main exactly once.
func checkTeamRound(b *testing.B, s *Supervisor, repo string, tasks []teamTask) {
	b.Helper()
	trailers := map[int64]int{}
	for _, l := range strings.Fields(gitIn(b, repo, "log", "--all", "--format=%(trailers:key=Cicy-Task,valueonly)")) {
		n, _ := strconv.ParseInt(l, 10, 64)
		trailers[n]++
	}
	onMain := map[string]bool{}
	for _, h := range strings.Fields(gitIn(b, repo, "rev-list", "main")) {
		onMain[h] = true
	}
	shared := gitIn(b, repo, "show", "main:shared.txt")
	heads := map[string]string{} // worker → the head its last task recorded
	for _, tt := range tasks {
		got, err := s.store.GetTask(context.Background(), tt.id)
		if err != nil {
			b.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[tt.changes]; trailers[tt.id] != want || got.Commits != want {
			b.Errorf("task %d: %d commits with its trailer, %d recorded, want %d", tt.id, trailers[tt.id], got.Commits, want)
		}
		if !onMain[got.Head] {
			b.Errorf("task %d: its head %s is not on main", tt.id, got.Head)
		}
		if prev, ok := heads[tt.worker]; ok && got.Base != prev {
			b.Errorf("task %d starts at %s, its worker's last task ended at %s", tt.id, got.Base, prev)
		}
		heads[tt.worker] = got.Head
		if tt.conflict && !strings.Contains(shared, tt.line) {
			b.Errorf("task %d: %q is not in main's shared.txt", tt.id, tt.line)
		}
	}
}

// BenchmarkWorktreeTwentyEnds: 20 bash workers (pty) each get one task
// that waits for one gate file, then changes what a task typically
// changes (three files edited, one new); the gate is opened and all 20
// end at once. recorded-s is the gate's opening → the last task's
// finished_at (each task's end seen, its commit made, its record
// written). worktree: each worker in its own worktree of a 10,000-file
// repository; plain: in a folder of its own, no commit (the cost of
// seeing 20 ends and recording them); git-alone-s: the same 20 changes
// committed by 20 concurrent CommitTask calls and nothing else — git's
// own time, the floor of the worktree case.
func BenchmarkWorktreeTwentyEnds(b *testing.B) {
	for _, mode := range []string{"worktree", "plain"} {
		b.Run(mode, func(b *testing.B) {
			s, _ := newTestSupervisor(b, nil)
			var workers []string
			if mode == "worktree" {
				repo := bigRepo(b, benchRepoFiles)
				_, workers = worktreeTeam(b, s, repo, benchTeamWorkers)
			} else {
				workers = plainTeam(b, s, benchTeamWorkers)
			}
			gates := b.TempDir()
			var rec, alone []time.Duration
			for r := 0; b.Loop(); r++ {
				rec = append(rec, twentyEnds(b, s, workers, filepath.Join(gates, "gate-"+strconv.Itoa(r)), r))
				if mode == "worktree" {
					alone = append(alone, gitAlone(b, s, workers, r))
				}
			}
			reportPercentiles(b, "recorded", rec)
			if len(alone) > 0 {
				reportPercentiles(b, "git-alone", alone)
			}
		})
	}
}

// twentyEndsEdit is the change of worker i's task in round r (in the
// worker's folder; mkdir for a plain folder).
func twentyEndsEdit(i, r int) string {
	d := fmt.Sprintf("pkg%03d", i)
	return fmt.Sprintf("mkdir -p %s new && printf 'r%d\\n' >> %s/file001.go && printf 'r%d\\n' >> %s/file002.go && printf 'r%d\\n' >> %s/file003.go && echo r%d > new/w%d-r%d.txt",
		d, r, d, r, d, r, d, r, i, r)
}

// twentyEnds dispatches each worker a task held at gate, opens it once
// all are running, and returns the time until the last is recorded done.
func twentyEnds(b *testing.B, s *Supervisor, workers []string, gate string, r int) time.Duration {
	b.Helper()
	ctx := context.Background()
	var ids []int64
	for i, w := range workers {
		// Each marks gate.<i> as it enters its loop.
		t, err := s.Dispatch(ctx, "", w, fmt.Sprintf(": > %s.%d; while [ ! -e %s ]; do sleep 0.01; done; %s", gate, i, gate, twentyEndsEdit(i, r)))
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, t.ID)
	}
	for _, id := range ids {
		deadline := time.Now().Add(5 * time.Minute)
		for {
			t, err := s.store.GetTask(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if t.Status == api.TaskDelivered {
				break
			}
			if time.Now().After(deadline) || api.Ended(t.Status) {
				b.Fatalf("task %d is %s, not delivered", id, t.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(b, "every shell in its loop", func() bool { // not timed
		for i := range workers {
			if _, err := os.Stat(fmt.Sprintf("%s.%d", gate, i)); err != nil {
				return false
			}
		}
		return true
	})
	start := time.Now()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	var last time.Time
	for _, id := range ids {
		got := waitTask(b, s, id, 10*time.Minute)
		if got.Status != api.TaskDone {
			b.Fatalf("task %d: %s %s", id, got.Status, got.Error)
		}
		last = later(last, schema.ParseTime(got.FinishedAt.String))
	}
	return last.Sub(start)
}

// gitAlone makes the workers' changes of round r again by hand and
// commits them with 20 concurrent CommitTask calls: git's own time. The
// commits are undone after (not timed).
func gitAlone(b *testing.B, s *Supervisor, workers []string, r int) time.Duration {
	b.Helper()
	ctx := context.Background()
	var paths []string
	for i, w := range workers {
		info, err := s.Get(w)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("bash", "-c", twentyEndsEdit(i, 1000+r))
		cmd.Dir = info.Workspace
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		paths = append(paths, info.Workspace)
	}
	heads := make([]string, len(paths))
	for i, p := range paths {
		heads[i] = gitHead(p)
	}
	var git worktree.Git // as the keeper's: git on PATH, a minute's lock wait
	start := time.Now()
	errs := make(chan error, len(paths))
	for i, p := range paths {
		go func() {
			_, _, err := git.CommitTask(ctx, p, func() string { return heads[i] }, "by hand", "bench", nil)
			errs <- err
		}()
	}
	for range paths {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	for _, p := range paths { // undone: the next task starts where the last recorded one ended
		if out, err := exec.Command("git", "-C", p, "reset", "-q", "--hard", "HEAD~1").CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	return took
}

// gitHead is the commit HEAD of the checkout at dir is at.
func gitHead(dir string) string {
	out, _ := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	return strings.TrimSpace(string(out))
}
