package schema

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

func idText(ts []Task) string { return fmt.Sprint(taskIDs(ts)) }

// twoNodes makes worker w-1 on node a and master w-2 on node b.
func twoNodes(t *testing.T, s *Store) {
	t.Helper()
	for _, node := range []string{"a", "b"} {
		p := newPane(node)
		p.Node = node
		if _, err := s.CreatePane(context.Background(), p, ws); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNodeViews(t *testing.T) { eachStore(t, testNodeViews) }

func testNodeViews(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	twoNodes(t, s)
	a, b, all := s.ForNode("a"), s.ForNode("b"), s.ForNode("")
	t1, _ := s.CreateTask(ctx, "w-2", "w-1", "b's master to a's worker", "") // 1
	t2, _ := s.CreateTask(ctx, "user", "w-9", "to a pane with no row", "")   // 2
	t3, _ := s.CreateTask(ctx, "user", "w-2", "the user to b's pane", "")    // 3

	views := func(what string, f func(v *NodeTasks) ([]Task, error), wantA, wantB, wantAll string) {
		t.Helper()
		for _, c := range []struct {
			name string
			v    *NodeTasks
			want string
		}{{"a", a, wantA}, {"b", b, wantB}, {"all", all, wantAll}} {
			ts, err := f(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if got := idText(ts); got != c.want {
				t.Errorf("%s: node %s sees %s, want %s", what, c.name, got, c.want)
			}
		}
	}
	queued := func(v *NodeTasks) ([]Task, error) { return v.TasksIn(ctx, api.TaskQueued) }
	views("queued", queued, "[1 2]", "[2 3]", "[1 2 3]")
	views("list", func(v *NodeTasks) ([]Task, error) { return v.ListTasks(ctx, "") }, "[1 2 3]", "[1 2 3]", "[1 2 3]")
	views("list w-1", func(v *NodeTasks) ([]Task, error) { return v.ListTasks(ctx, "w-1") }, "[1]", "[1]", "[1]")

	for _, id := range []int64{t1.ID, t2.ID, t3.ID} {
		if ok, err := a.MoveTask(ctx, id, TaskChange{From: api.TaskQueued, To: api.TaskDelivered}); !ok || err != nil {
			t.Fatalf("deliver %d: %v, %v", id, ok, err)
		}
		if ok, err := a.MoveTask(ctx, id, TaskChange{From: api.TaskDelivered, To: api.TaskDone, Result: "ok"}); !ok || err != nil {
			t.Fatalf("finish %d: %v, %v", id, ok, err)
		}
	}
	views("queued when done", queued, "[]", "[]", "[]")
	views("done", func(v *NodeTasks) ([]Task, error) { return v.TasksIn(ctx, api.TaskDone) }, "[1 2]", "[2 3]", "[1 2 3]")
	unnotified := func(v *NodeTasks) ([]Task, error) { return v.Unnotified(ctx) }
	// Task 1 is reported by b (its master's node); the user's tasks by
	// whichever node marks them first.
	views("unnotified", unnotified, "[2 3]", "[1 2 3]", "[1 2 3]")
	if err := b.MarkNotified(ctx, t1.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.MarkNotified(ctx, t2.ID); err != nil {
		t.Fatal(err)
	}
	views("unnotified after marking", unnotified, "[3]", "[3]", "[3]")
	if ok, err := s.ForNode("b").MoveTask(ctx, t1.ID, TaskChange{From: api.TaskDelivered, To: api.TaskFailed}); ok || err != nil {
		t.Fatalf("a done task moved again: %v, %v", ok, err)
	}
}

// TestClaimSkipsLocked: on PostgreSQL, delivering (queued→delivered) a
// task that another transaction has locked reports false at once instead
// of waiting for it; once the lock is gone the claim succeeds.
func TestClaimSkipsLocked(t *testing.T) { eachStore(t, testClaimSkipsLocked) }

func testClaimSkipsLocked(t *testing.T, reopen func() *Store) {
	s := reopen()
	if s.Dialect() != Postgres {
		t.Skip("SQLite has one writer: nothing to skip")
	}
	ctx := context.Background()
	twoNodes(t, s)
	task, err := s.CreateTask(ctx, "w-2", "w-1", "x", "")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // rolled back below
	var id int64
	if err := tx.GetContext(ctx, &id, `SELECT id FROM tasks WHERE id = ? FOR UPDATE`, task.ID); err != nil {
		t.Fatal(err)
	}
	// Without SKIP LOCKED the update waits for tx, which ends only below:
	// the deadline turns that wait into an error.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	deliver := TaskChange{From: api.TaskQueued, To: api.TaskDelivered}
	if ok, err := s.ForNode("a").MoveTask(cctx, task.ID, deliver); ok || err != nil {
		t.Fatalf("claim of a locked task: %v, %v; want false at once", ok, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.MoveTask(ctx, task.ID, deliver); !ok || err != nil {
		t.Fatalf("claim after the lock is gone: %v, %v", ok, err)
	}
	if ok, err := s.MoveTask(ctx, task.ID, deliver); ok || err != nil {
		t.Fatalf("a second claim: %v, %v", ok, err)
	}
}
