package outbox

import (
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func task(id int64, from, to, status string) schema.Task {
	return schema.Task{ID: id, From: from, To: to, Text: "text", Status: status}
}

func queued(id int64, to string) schema.Task { return task(id, "w-1", to, api.TaskQueued) }

func delivered(id int64, to string, attempts int) schema.Task {
	t := task(id, "w-1", to, api.TaskDelivered)
	t.Attempts = attempts
	return t
}

// ended is a finished task from from; told says its notification is
// recorded.
func ended(id int64, from, status string, told bool) schema.Task {
	t := task(id, from, "w-2", status)
	if told {
		t.NotifiedAt = sql.NullString{String: schema.FormatTime(t0), Valid: true}
	}
	return t
}

var (
	idle    = View{Running: true, Idle: true, Receptive: true, Handoff: "typed into the idle worker"}
	working = View{Running: true}
	exited  = View{Reason: "exit status 1"}
)

func panes(kv ...any) map[string]View {
	m := map[string]View{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(View)
	}
	return m
}

type decideCase struct {
	name string
	s    Snapshot
	want []string
	next time.Time
}

func runDecide(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.s.Now.IsZero() {
				c.s.Now = t0
			}
			acts, next := Decide(c.s)
			got := make([]string, len(acts))
			for i, a := range acts {
				got[i] = a.String()
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("actions:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
			if !next.Equal(c.next) {
				t.Errorf("next = %v, want %v", next, c.next)
			}
		})
	}
}

func TestDecideDelivery(t *testing.T) {
	runDecide(t, []decideCase{
		{
			name: "each idle worker gets its oldest queued task, one at a time",
			s: Snapshot{
				Queued: []schema.Task{queued(1, "w-2"), queued(2, "w-3"), queued(3, "w-2"), queued(4, "w-3")},
				Panes:  panes("w-2", idle, "w-3", View{Running: true, Idle: true, Handoff: "sent to the idle worker as a message"}),
			},
			want: []string{
				`deliver 1 to w-2 reason="typed into the idle worker"`,
				`deliver 2 to w-3 reason="sent to the idle worker as a message"`,
			},
		},
		{
			name: "a worker with a task delivered gets no other",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Queued:    []schema.Task{queued(2, "w-2"), queued(3, "w-4")},
				Panes:     panes("w-2", idle, "w-4", idle),
				Flights:   map[int64]Progress{1: {}},
			},
			want: []string{`deliver 3 to w-4 reason="typed into the idle worker"`},
		},
		{
			name: "a busy worker's tasks wait, in order",
			s: Snapshot{
				Queued: []schema.Task{queued(1, "w-2"), queued(2, "w-2")},
				Panes:  panes("w-2", working),
			},
		},
		{
			name: "the next task waits for the step after its predecessor settles",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Queued:    []schema.Task{queued(2, "w-2")},
				Panes:     panes("w-2", idle),
				Flights:   map[int64]Progress{1: {Ended: true, Result: "ok", How: "the worker's turn ended with an answer"}},
			},
			want: []string{`move 1 delivered→done result="ok" reason="the worker's turn ended with an answer"`},
		},
		{
			name: "then it is delivered",
			s: Snapshot{
				Queued: []schema.Task{queued(2, "w-2"), queued(5, "w-2")},
				Panes:  panes("w-2", idle),
			},
			want: []string{`deliver 2 to w-2 reason="typed into the idle worker"`},
		},
		{
			name: "a stopped worker's queued task waits for it to run again",
			s: Snapshot{
				Queued: []schema.Task{queued(1, "w-2")},
				Panes:  panes("w-2", exited),
			},
		},
	})
}

func TestDecideCompletion(t *testing.T) {
	runDecide(t, []decideCase{
		{
			name: "done with the answer",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Panes:     panes("w-2", idle),
				Flights:   map[int64]Progress{1: {Ended: true, Result: "42", How: "the worker's output was quiet for the settle time"}},
			},
			want: []string{`move 1 delivered→done result="42" reason="the worker's output was quiet for the settle time"`},
		},
		{
			name: "failed with the error",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Panes:     panes("w-2", idle),
				Flights:   map[int64]Progress{1: {Ended: true, Failed: true, Error: "rate limited", How: "the worker's turn failed"}},
			},
			want: []string{`move 1 delivered→failed error="rate limited" reason="the worker's turn failed"`},
		},
		{
			name: "failed with no error text is still failed",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Panes:     panes("w-2", idle),
				Flights:   map[int64]Progress{1: {Ended: true, Failed: true, How: "the worker's turn failed"}},
			},
			want: []string{`move 1 delivered→failed reason="the worker's turn failed"`},
		},
		{
			name: "a delivery's own end comes before the worker's death",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Panes:     panes("w-2", exited),
				Flights:   map[int64]Progress{1: {Ended: true, Failed: true, Error: "the agent's process ended: exit status 1", How: "worker exited"}},
			},
			want: []string{`move 1 delivered→failed error="the agent's process ended: exit status 1" reason="worker exited"`},
		},
		{
			name: "in progress: the earliest time a delivery wants a look",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1), delivered(2, "w-3", 1), delivered(3, "w-4", 1)},
				Panes:     panes("w-2", working, "w-3", working, "w-4", working),
				Flights:   map[int64]Progress{1: {Next: t0.Add(3 * time.Second)}, 2: {Next: t0.Add(time.Second)}, 3: {}},
			},
			next: t0.Add(time.Second),
		},
		{
			name: "a look wanted in the past is wanted now",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Panes:     panes("w-2", working),
				Flights:   map[int64]Progress{1: {Next: t0.Add(-time.Second)}},
			},
			next: t0,
		},
	})
}

func TestDecideWorkerDeath(t *testing.T) {
	runDecide(t, []decideCase{
		{
			name: "worker killed: its delivered task fails and its delivery is abandoned",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Flights:   map[int64]Progress{1: {}},
			},
			want: []string{
				`abandon 1`,
				`move 1 delivered→failed error="the worker was killed before it finished" reason="worker w-2 was killed"`,
			},
		},
		{
			name: "worker killed: its queued tasks fail, all of them",
			s: Snapshot{
				Queued: []schema.Task{queued(1, "w-2"), queued(2, "w-2"), queued(3, "w-3")},
				Panes:  panes("w-3", working),
			},
			want: []string{
				`move 1 queued→failed error="the worker no longer exists" reason="worker w-2 was killed"`,
				`move 2 queued→failed error="the worker no longer exists" reason="worker w-2 was killed"`,
			},
		},
		{
			name: "worker's process ended: its delivered task fails with the reason",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Queued:    []schema.Task{queued(2, "w-2")},
				Panes:     panes("w-2", exited),
				Flights:   map[int64]Progress{1: {Next: t0.Add(time.Second)}},
			},
			want: []string{
				`abandon 1`,
				`move 1 delivered→failed error="the worker's process ended: exit status 1" reason="worker exited"`,
			},
		},
		{
			name: "a killed worker's task is no longer its worker's: the order of the others holds",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Queued:    []schema.Task{queued(2, "w-3")},
				Panes:     panes("w-3", idle),
			},
			want: []string{
				`move 1 delivered→failed error="the worker was killed before it finished" reason="worker w-2 was killed"`,
				`deliver 2 to w-3 reason="typed into the idle worker"`,
			},
		},
	})
}

func TestDecideCancel(t *testing.T) {
	runDecide(t, []decideCase{
		{
			name: "a cancelled task's delivery is abandoned",
			s: Snapshot{
				Delivered: []schema.Task{delivered(2, "w-3", 1)},
				Panes:     panes("w-3", working),
				Flights:   map[int64]Progress{7: {}, 2: {}, 5: {}},
			},
			want: []string{`abandon 5`, `abandon 7`},
		},
		{
			name: "its worker, idle again, takes its next task",
			s: Snapshot{
				Queued:  []schema.Task{queued(8, "w-2")},
				Panes:   panes("w-2", idle),
				Flights: map[int64]Progress{7: {}},
			},
			want: []string{`abandon 7`, `deliver 8 to w-2 reason="typed into the idle worker"`},
		},
	})
}

func TestDecideNotification(t *testing.T) {
	runDecide(t, []decideCase{
		{
			name: "a receptive master is told; nobody to tell is only marked",
			s: Snapshot{
				Unnotified: []schema.Task{
					ended(1, "w-1", api.TaskDone, false),
					ended(2, "user", api.TaskDone, false),
					ended(3, "", api.TaskFailed, false),
					ended(4, "w-9", api.TaskFailed, false),
				},
				Panes: panes("w-1", idle),
			},
			want: []string{`notify 1 to w-1`, `mark 2`, `mark 3`, `mark 4`},
		},
		{
			name: "a master that cannot take a line now waits",
			s: Snapshot{
				Unnotified: []schema.Task{ended(1, "w-1", api.TaskDone, false), ended(2, "w-5", api.TaskDone, false)},
				Panes:      panes("w-1", working, "w-5", exited),
			},
		},
		{
			name: "a task settled in this step is told at the next (once it is unnotified)",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1)},
				Panes:     panes("w-1", idle, "w-2", idle),
				Flights:   map[int64]Progress{1: {Ended: true, Result: "r", How: "h"}},
			},
			want: []string{`move 1 delivered→done result="r" reason="h"`},
		},
		{
			name: "a task its master blocks on (a team wait) is not told: the wait shows it",
			s: Snapshot{
				Unnotified: []schema.Task{ended(1, "w-1", api.TaskDone, false), ended(2, "w-1", api.TaskDone, false)},
				Panes:      panes("w-1", idle),
				Awaited:    map[int64]bool{1: true},
			},
			want: []string{`notify 2 to w-1`},
		},
		{
			name: "told once: a recorded notification is not given again",
			s: Snapshot{
				Panes: panes("w-1", idle),
				Ended: []schema.Task{ended(1, "w-1", api.TaskDone, true)},
			},
		},
	})
}

// recovering is a first step's snapshot: the delivered tasks, the
// workers present, and their panes' verdicts.
func recovering(ts []schema.Task, views map[string]View, rs map[int64]Recovery) Snapshot {
	return Snapshot{Recovering: true, Delivered: ts, Panes: views, Recovery: rs}
}

func TestDecideRecovery(t *testing.T) {
	runDecide(t, []decideCase{
		{
			name: "cicy: the answer in the worker's history settles it done",
			s: recovering([]schema.Task{delivered(1, "w-2", 1)}, panes("w-2", idle),
				map[int64]Recovery{1: {Verdict: Finished, Result: "the answer"}}),
			want: []string{`move 1 delivered→done result="the answer" reason="done before the restart (from the worker's history)"`},
		},
		{
			name: "cicy: a turn interrupted once is delivered again",
			s: recovering([]schema.Task{delivered(1, "w-2", 1)}, panes("w-2", idle),
				map[int64]Recovery{1: {Verdict: Interrupted}}),
			want: []string{`move 1 delivered→queued reason="re-delivered: the restart interrupted its turn"`},
		},
		{
			name: "cicy: a turn interrupted twice fails",
			s: recovering([]schema.Task{delivered(1, "w-2", 2)}, panes("w-2", idle),
				map[int64]Recovery{1: {Verdict: Interrupted}}),
			want: []string{`move 1 delivered→failed error="interrupted twice by supervisor restarts" reason="recovered after a restart"`},
		},
		{
			name: "shell on a PTY: its process ended with the supervisor",
			s: recovering([]schema.Task{delivered(1, "w-2", 1)}, panes("w-2", exited),
				map[int64]Recovery{1: {Verdict: Lost}}),
			want: []string{`move 1 delivered→failed error="interrupted by a restart: the worker's process ended with the supervisor" reason="recovered after a restart"`},
		},
		{
			name: "tmux shell and CLI agent alive: tracked on",
			s: recovering([]schema.Task{delivered(1, "w-2", 1), delivered(2, "w-3", 1)}, panes("w-2", working, "w-3", working),
				map[int64]Recovery{1: {Verdict: Resumed}, 2: {Verdict: Resumed}}),
			want: []string{`track 1`, `track 2`},
		},
		{
			name: "tmux shell and CLI agent alive: then settled as any delivery",
			s: Snapshot{
				Delivered: []schema.Task{delivered(1, "w-2", 1), delivered(2, "w-3", 1)},
				Panes:     panes("w-2", idle, "w-3", idle),
				Flights: map[int64]Progress{
					1: {Ended: true, Result: "out", How: "the worker's output was quiet for the settle time"},
					2: {Ended: true, Result: "said", How: "the agent's turn ended (hook)"},
				},
			},
			want: []string{
				`move 1 delivered→done result="out" reason="the worker's output was quiet for the settle time"`,
				`move 2 delivered→done result="said" reason="the agent's turn ended (hook)"`,
			},
		},
		{
			name: "a worker gone since: its task fails",
			s:    recovering([]schema.Task{delivered(1, "w-2", 1)}, panes(), map[int64]Recovery{}),
			want: []string{`move 1 delivered→failed error="the worker no longer exists" reason="recovered after a restart"`},
		},
		{
			name: "the first step only recovers: queued tasks and notifications wait for the next",
			s: Snapshot{
				Recovering: true,
				Queued:     []schema.Task{queued(2, "w-2")},
				Unnotified: []schema.Task{ended(3, "w-1", api.TaskDone, false)},
				Panes:      panes("w-1", idle, "w-2", idle),
			},
		},
	})
}

func TestDecideRecoveredNotices(t *testing.T) {
	s := Snapshot{
		Recovering: true,
		Ended: []schema.Task{
			ended(1, "w-1", api.TaskDone, false),  // seen, not recorded
			ended(2, "w-1", api.TaskDone, true),   // seen, recorded
			ended(3, "w-1", api.TaskFailed, true), // lost, recorded
			ended(4, "w-1", api.TaskDone, false),  // lost, not recorded: told as usual
			ended(5, "w-1", api.TaskDone, true),   // unknown
			ended(6, "w-9", api.TaskDone, false),  // its master is gone
			task(7, "w-1", "w-2", api.TaskCancelled),
		},
		Panes:   panes("w-1", idle),
		Notices: map[int64]Notice{1: NoticeSeen, 2: NoticeSeen, 3: NoticeLost, 4: NoticeLost, 6: NoticeSeen, 7: NoticeSeen},
	}
	runDecide(t, []decideCase{{name: "notices", s: s, want: []string{`mark 1`, `resend 3 to w-1`}}})
}

func TestNotification(t *testing.T) {
	done := schema.Task{ID: 7, To: "w-2", Status: api.TaskDone, Result: strings.Repeat("é", 2001)}
	if got := Notification(done, false); got != "🔔 [w-2] task 7 → done" {
		t.Errorf("short = %q", got)
	}
	if got, want := Notification(done, true), "🔔 [w-2] task 7 → done: "+strings.Repeat("é", 2000)+"…"; got != want {
		t.Errorf("full = %q", got)
	}
	failed := schema.Task{ID: 8, To: "w-3", Status: api.TaskFailed, Result: "r", Error: "boom"}
	if got := Notification(failed, true); got != "🔔 [w-3] task 8 → failed: boom" {
		t.Errorf("failed = %q", got)
	}
	work := schema.Task{ID: 9, To: "w-3", Status: api.TaskDone, Result: "ok",
		Work: api.Work{Branch: "cicy/w-3", Base: "a", Head: "b", Commits: 1, Files: 3, Added: 42, Deleted: 7}}
	if got := Notification(work, true); got != "🔔 [w-3] task 9 → done · 3 files +42 −7 on cicy/w-3: ok" {
		t.Errorf("with work = %q", got)
	}
	work.Head, work.Files = "a", 0
	if got := Notification(work, false); got != "🔔 [w-3] task 9 → done · no change on cicy/w-3" {
		t.Errorf("no change = %q", got)
	}
	if got := Message(schema.Task{ID: 3, Text: "do it"}); got != "task 3: do it" {
		t.Errorf("message = %q", got)
	}
}
