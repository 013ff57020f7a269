package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// checkTable compares a table with want, trailing spaces aside.
func checkTable(t *testing.T, what, got, want string) {
	t.Helper()
	trim := func(s string) string {
		ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range ls {
			ls[i] = strings.TrimRight(l, " ")
		}
		return strings.Join(ls, "\n")
	}
	if g, w := trim(got), trim(want); g != w {
		t.Errorf("%s:\n%s\nwant:\n%s", what, g, w)
	}
}

// nodePanes is a master on node a and two panes on node second.
func nodePanes(second string) []api.PaneInfo {
	lead := "w-1"
	return []api.PaneInfo{
		{ID: "w-1", Title: "lead", Type: "cicy", Role: "master", State: "idle", Node: "a", CacheHit: -1, Workspace: "/ws/1"},
		{ID: "w-2", Title: "alice", Type: "shell", Role: "worker", Master: &lead, State: "unreachable", Reason: "node b does not answer: timeout", Node: second, CacheHit: -1, Workspace: "/ws/2"},
		{ID: "w-3", Title: "notes", Type: "shell", Role: "notes", State: "idle", Node: second, CacheHit: -1, Workspace: "/ws/3"},
	}
}

// TestLsNodeColumn: ls has a NODE column only when the panes run on more
// than one node.
func TestLsNodeColumn(t *testing.T) {
	var one, two bytes.Buffer
	if err := printPanes(&one, nodePanes("a")); err != nil {
		t.Fatal(err)
	}
	checkTable(t, "ls on one node", one.String(), `
ID   TITLE  TYPE   ROLE    STATE        REASON                           TOKENS  CACHE  WORKSPACE
w-1  lead   cicy   master  idle                                          -       -      /ws/1
w-2  alice  shell  worker  unreachable  node b does not answer: timeout  -       -      /ws/2
w-3  notes  shell  notes   idle                                          -       -      /ws/3
`[1:])
	if err := printPanes(&two, nodePanes("b")); err != nil {
		t.Fatal(err)
	}
	checkTable(t, "ls on two nodes", two.String(), `
ID   NODE  TITLE  TYPE   ROLE    STATE        REASON                           TOKENS  CACHE  WORKSPACE
w-1  a     lead   cicy   master  idle                                          -       -      /ws/1
w-2  b     alice  shell  worker  unreachable  node b does not answer: timeout  -       -      /ws/2
w-3  b     notes  shell  notes   idle                                          -       -      /ws/3
`[1:])
}

// TestStatusNodes: status names each pane's node only when the team runs
// on more than one node.
func TestStatusNodes(t *testing.T) {
	var one, two bytes.Buffer
	printStatus(&one, api.TeamStatus(nodePanes("a"), nil, api.TaskSummary{}, api.HomeInfo{}, time.Now()))
	checkTable(t, "status on one node", one.String(), `
master w-1  lead   cicy   idle                                          tasks 0/0 done
  w-2       alice  shell  unreachable  node b does not answer: timeout  task -
untracked (role is a label; not in completion tracking):
  w-3  notes  role "notes"
needs you:
  w-2  unreachable  node b does not answer: timeout
`[1:])
	printStatus(&two, api.TeamStatus(nodePanes("b"), nil, api.TaskSummary{}, api.HomeInfo{}, time.Now()))
	checkTable(t, "status on two nodes", two.String(), `
master w-1  lead   cicy   node a  idle                                          tasks 0/0 done
  w-2       alice  shell  node b  unreachable  node b does not answer: timeout  task -
untracked (role is a label; not in completion tracking):
  w-3  notes  node b  role "notes"
needs you:
  w-2  node b  unreachable  node b does not answer: timeout
`[1:])
}

// TestTasksNodeColumn: tasks names the worker's node only when the tasks'
// senders and workers run on more than one node.
func TestTasksNodeColumn(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	tasks := func(from, to string) []api.TaskInfo {
		return []api.TaskInfo{
			{ID: 1, From: "w-1", To: "w-2", Text: "count", Status: api.TaskDone, Result: "3", CreatedAt: now.Add(-time.Minute), FromNode: from, ToNode: to},
			{ID: 2, From: "user", To: "w-1", Text: "plan", Status: api.TaskQueued, CreatedAt: now.Add(-time.Second), ToNode: from},
		}
	}
	var one, two bytes.Buffer
	if err := printTasks(&one, tasks("a", "a"), now); err != nil {
		t.Fatal(err)
	}
	checkTable(t, "tasks on one node", one.String(), `
ID  FROM  TO   STATUS  AGE   TEXT   RESULT
1   w-1   w-2  done    1m0s  count  3
2   user  w-1  queued  1s    plan
`[1:])
	if err := printTasks(&two, tasks("a", "b"), now); err != nil {
		t.Fatal(err)
	}
	checkTable(t, "tasks on two nodes", two.String(), `
ID  FROM  TO   NODE  STATUS  AGE   TEXT   RESULT
1   w-1   w-2  b     done    1m0s  count  3
2   user  w-1  a     queued  1s    plan
`[1:])
}

// TestNodesTable: nodes shows each node's state, address, panes and last
// heartbeat, the answering node marked, the reason of one not up.
func TestNodesTable(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	err := printNodes(&b, []api.NodeInfo{
		{Name: "a", Self: true, State: api.NodeUp, Addr: "10.0.0.2:7070", Panes: 2, HeartbeatAt: now.Add(-3 * time.Second)},
		{Name: "b", State: api.NodeLapsed, Reason: "lease lapsed 40s ago", Panes: 1, HeartbeatAt: now.Add(-70 * time.Second)},
		{Name: "solo", Self: true, State: api.NodeUp},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := "NODE   STATE   ADDR           PANES  HEARTBEAT  REASON\n" +
		"a*     up      10.0.0.2:7070  2      3s ago     \n" +
		"b      lapsed  -              1      1m10s ago  lease lapsed 40s ago\n" +
		"solo*  up      -              0      -          \n"
	if b.String() != want {
		t.Fatalf("nodes table:\n%s\nwant:\n%s", b.String(), want)
	}
}
