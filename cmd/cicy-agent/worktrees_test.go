package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestTasksChangeColumn: tasks' CHANGE column is each task's stat
// (api.Work.Stat, as tasks show, the 🔔 line and the web page print it),
// "-" for a task that left none.
func TestTasksChangeColumn(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := now.Add(-time.Minute)
	tasks := []api.TaskInfo{
		{ID: 1, From: "w-1", To: "w-2", Text: "fix", Status: api.TaskDone, CreatedAt: at,
			Work: &api.Work{Branch: "cicy/w-2", Base: "a", Head: "b", Commits: 1, Files: 3, Added: 42, Deleted: 7}},
		{ID: 2, From: "w-1", To: "w-2", Text: "look", Status: api.TaskDone, CreatedAt: at, Work: &api.Work{Branch: "cicy/w-2", Base: "b", Head: "b"}},
		{ID: 3, From: "w-1", To: "w-3", Text: "ask", Status: api.TaskQueued, CreatedAt: at},
	}
	var out bytes.Buffer
	if err := printTasks(&out, tasks, now); err != nil {
		t.Fatal(err)
	}
	checkTable(t, "tasks", out.String(), `
ID  FROM  TO   STATUS  AGE   CHANGE                      TEXT  RESULT
1   w-1   w-2  done    1m0s  3 files +42 −7 on cicy/w-2  fix
2   w-1   w-2  done    1m0s  no change on cicy/w-2       look
3   w-1   w-3  queued  1m0s  -                           ask
`[1:])
	if got, want := workText(tasks[0].Work), "3 files +42 −7 on cicy/w-2 (1 commits, a..b)"; got != want {
		t.Errorf("tasks show's work = %q, want %q", got, want)
	}
	if got, want := workText(tasks[1].Work), "no change on cicy/w-2"; got != want {
		t.Errorf("tasks show's work, no change = %q, want %q", got, want)
	}
}
