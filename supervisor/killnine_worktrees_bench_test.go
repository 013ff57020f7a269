package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// BenchmarkKillNineWorktrees is BenchmarkKillNine with the workers in
// git worktrees of one repository of 10,000 files (create --worktree),
// 600 tasks and 20 kills. Each task changes its worktree: a shell task
// writes k<i>.txt (echo k<i> | tee k<i>.txt); a cicy task's model calls
// the shell tool, which appends the task's id to a file outside the
// worktree (one line per run of the call) and writes t<task id>.txt.
// Besides what BenchmarkKillNine counts, it counts the tasks that ended
// done without their change in a commit of their own on the worker's
// branch (no recorded head, the file not in the tree at the recorded
// head, or added by a commit of another task: the work went into the
// next task's commit), and the tool calls run more than once (a task id
// twice in the file). It fails on any. It reports too the cicy tasks
// whose tool call came back without the command's output (interrupted
// by a kill and not run again: the task is not counted as done without
// its commit when the call never ran).
func BenchmarkKillNineWorktrees(b *testing.B) { eachDB(b, benchKillNineWorktrees) }

func benchKillNineWorktrees(b *testing.B, cfg Config) {
	for i := 0; i < b.N; i++ {
		r := runKillNine(b, killNineSize{tasks: 600, kills: 20, gap: 60 * time.Millisecond, db: cfg.DB, repoFiles: benchRepoFiles})
		reportKillNine(b, r)
		b.ReportMetric(float64(r.noCommit), "done-without-commit")
	}
}

// TestKillNineWorktrees is BenchmarkKillNineWorktrees small: 60 tasks,
// 3 kills, a repository of 2,000 files (big enough that a kill
// often finds git at work in a worktree).
func TestKillNineWorktrees(t *testing.T) {
	runKillNine(t, killNineSize{tasks: 60, kills: 3, gap: 60 * time.Millisecond, repoFiles: 2000})
}

// worktreeKillRules are killRules with two rules before them for the
// cicy workers' "edit" tasks: the task's turn calls the shell tool,
// which writes the task's file in the worktree, then records its run in
// counter (so a call that ran has its file; one cut before it recorded
// its run leaves at most its file, which the task's commit takes); its
// output ends the turn with "done <id>". A tool result without that
// output falls to killRules' (an interrupted call: "interrupted: …").
func worktreeKillRules(counter string) string {
	return fmt.Sprintf(`rules:
  - match: {tool_output: '(?m)^wrote (\d+)$'}
    reply: {text: 'done {{o1}}'}
  - match: {last_user: 'task (\d+): edit '}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'echo {{1}} > t{{1}}.txt && echo {{1}} >> "%s" && echo wrote {{1}}'}
`, counter) + strings.TrimPrefix(killRules, "rules:\n")
}

// interruptedEdit: a cicy worker's edit task whose tool call came back
// without the command's output.
func interruptedEdit(t api.TaskInfo) bool {
	return strings.HasPrefix(t.Text, "edit ") && t.Status == api.TaskDone &&
		(t.Result == "ok" || strings.HasPrefix(t.Result, "interrupted: "))
}

// workFile is the file task t writes in its worktree.
func workFile(t api.TaskInfo) string {
	if strings.HasPrefix(t.Text, "edit ") {
		return fmt.Sprintf("t%d.txt", t.ID)
	}
	f := strings.Fields(t.Text)
	return f[len(f)-1]
}

// checkWork counts the tasks done without their change in a commit of
// their own on their worker's branch (runs: each task's tool call runs).
func (k *killTeam) checkWork(dispatched map[string]int64, tasks map[int64]api.TaskInfo, runs map[int64]int, r *killNineResult) {
	added := map[string]map[string]int64{} // branch → file → the task of the commit that added it
	shown := map[string]int{}
	show := func(kind, format string, args ...any) { // the first 15 of each kind
		if shown[kind]++; shown[kind] <= 15 {
			k.tb.Logf(format, args...)
		}
	}
	for text, id := range dispatched {
		t := tasks[id]
		if interruptedEdit(t) {
			if runs[id] == 0 {
				continue // the call never ran: nothing to commit
			}
		}
		if t.Status != api.TaskDone {
			continue
		}
		if why := k.missingWork(t, workFile(t), added); why != "" {
			r.noCommit++
			show("commit", "task %d (%s, %q) done without its commit: %s", id, t.To, text, why)
		}
	}
	if r.noCommit > 0 {
		k.logCommitErrors()
	}
}

// logCommitErrors shows how many task commits the supervisors logged as
// failed, and the first of them: the evidence of a task done without
// its commit.
func (k *killTeam) logCommitErrors() {
	b, err := os.ReadFile(k.home.Log())
	if err != nil {
		k.tb.Log(err)
		return
	}
	var failed []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "Could not commit the task's work") {
			failed = append(failed, line)
		}
	}
	k.tb.Logf("the supervisors logged %d task commits as failed", len(failed))
	if len(failed) > 0 {
		k.tb.Log(failed[0])
	}
}

// missingWork says what is wrong with done task t's commit of file, ""
// when it is on the branch, added by a commit of t's own, and in the
// tree at t's recorded head.
func (k *killTeam) missingWork(t api.TaskInfo, file string, added map[string]map[string]int64) string {
	w := t.Work
	if w == nil || w.Head == "" {
		return "no commit recorded"
	}
	if added[w.Branch] == nil {
		added[w.Branch] = k.addedBy(w.Branch)
	}
	switch by, ok := added[w.Branch][file]; {
	case !ok:
		return fmt.Sprintf("%s is in no commit on %s", file, w.Branch)
	case by != t.ID:
		return fmt.Sprintf("%s came in the commit of task %d", file, by)
	}
	if gitIn(k.tb, k.repo, "ls-tree", "--name-only", w.Head, "--", file) == "" {
		return fmt.Sprintf("%s is not in the tree at its recorded head %.10s", file, w.Head)
	}
	return ""
}

// addedBy maps each task file added on branch to the Cicy-Task of the
// commit that added it (0: a commit without one).
func (k *killTeam) addedBy(branch string) map[string]int64 {
	out := gitIn(k.tb, k.repo, "log", "--diff-filter=A", "--name-only",
		"--format=@%(trailers:key=Cicy-Task,valueonly,separator=%x2C)", branch, "--", "k*.txt", "t*.txt")
	files := map[string]int64{}
	var task int64
	for _, l := range strings.Split(out, "\n") {
		switch l = strings.TrimSpace(l); {
		case strings.HasPrefix(l, "@"):
			task, _ = strconv.ParseInt(strings.TrimPrefix(l, "@"), 10, 64)
		case l != "":
			files[l] = task
		}
	}
	return files
}

// toolRuns counts the runs of the cicy workers' tool calls by task id.
func (k *killTeam) counterRuns() map[int64]int {
	b, err := os.ReadFile(k.counter)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		k.tb.Fatal(err)
	}
	runs := map[int64]int{}
	for _, l := range strings.Fields(string(b)) {
		id, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			k.tb.Fatalf("%s holds %q", k.counter, l)
		}
		runs[id]++
	}
	return runs
}
