package schema

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// nextNote waits for the next note with a deadline.
func nextNote(t *testing.T, notes <-chan TaskNote) TaskNote {
	t.Helper()
	select {
	case n := <-notes:
		return n
	case <-time.After(30 * time.Second):
		t.Fatal("no task note within 30 s")
		return TaskNote{}
	}
}

// TestWatchTasks: on PostgreSQL a new task and a move each say their id
// and the nodes of both ends; every (re)connect first says ID 0; a killed
// connection is reported once and made again. On SQLite it returns at
// once.
func TestWatchTasks(t *testing.T) { eachStore(t, testWatchTasks) }

func testWatchTasks(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if s.Dialect() == SQLite {
		if err := s.WatchTasks(ctx, func(TaskNote) { t.Error("a note on SQLite") }, func(error) {}); err != nil {
			t.Fatal(err)
		}
		return
	}
	twoNodes(t, s)
	notes := make(chan TaskNote, 16)
	var mu sync.Mutex
	var errs []error
	done := make(chan error, 1)
	go func() {
		done <- s.WatchTasks(ctx, func(n TaskNote) { notes <- n }, func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchTasks returned %v after ctx ended, want nil", err)
		}
	}()

	if n := nextNote(t, notes); n != (TaskNote{}) {
		t.Fatalf("first note %+v, want ID 0", n)
	}
	task, err := s.CreateTask(ctx, "w-2", "w-1", "x", "")
	if err != nil {
		t.Fatal(err)
	}
	want := TaskNote{ID: task.ID, ToNode: "a", FromNode: "b"}
	if n := nextNote(t, notes); n != want {
		t.Fatalf("note of a new task = %+v, want %+v", n, want)
	}
	if ok, err := s.MoveTask(ctx, task.ID, TaskChange{From: api.TaskQueued, To: api.TaskDelivered}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if n := nextNote(t, notes); n != want {
		t.Fatalf("note of a move = %+v, want %+v", n, want)
	}
	user, _ := s.CreateTask(ctx, "user", "w-9", "y", "")
	if n, want := nextNote(t, notes), (TaskNote{ID: user.ID}); n != want {
		t.Fatalf("note of a task between panes with no row = %+v, want %+v", n, want)
	}
	if err := s.RegisterNode(ctx, Node{Name: "c", Addr: "127.0.0.1:9"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, want := nextNote(t, notes), (TaskNote{Joined: "c"}); n != want {
		t.Fatalf("note of a node that registered = %+v, want %+v", n, want)
	}

	// Kill the listener's backend: it is reported, and once connected
	// again the watcher says ID 0.
	var killed int
	if err := s.db.GetContext(ctx, &killed, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = ? AND datname = current_database()`, watchApp); err != nil || killed != 1 {
		t.Fatalf("terminated %d listeners, %v; want 1", killed, err)
	}
	if n := nextNote(t, notes); n != (TaskNote{}) {
		t.Fatalf("first note after reconnecting %+v, want ID 0", n)
	}
	mu.Lock()
	if len(errs) != 1 {
		t.Errorf("errors reported for one outage: %v", errs)
	}
	mu.Unlock()
	if _, err := s.ForNode("b").MoveTask(ctx, task.ID, TaskChange{From: api.TaskDelivered, To: api.TaskDone}); err != nil {
		t.Fatal(err)
	}
	if n := nextNote(t, notes); n != want {
		t.Fatalf("note after reconnecting = %+v, want %+v", n, want)
	}
}
