package schema

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
)

// taskIDs is the ids of ts.
func taskIDs(ts []Task) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// TestTaskLedger: tasks are created with increasing ids, move only from
// the status a transition names (of deciders racing, one wins), and are
// listed as open, recent, standing failures and unnotified; a master is
// marked told once.
func TestTaskLedger(t *testing.T) { eachStore(t, testTaskLedger) }

func testTaskLedger(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	var ids []int64
	for _, to := range []string{"w-2", "w-2", "w-3", "w-3"} {
		task, err := s.CreateTask(ctx, "w-1", to, "do "+to, "")
		if err != nil {
			t.Fatal(err)
		}
		if task.Status != api.TaskQueued || task.To != to || (len(ids) > 0 && task.ID <= ids[len(ids)-1]) {
			t.Fatalf("created %+v after ids %v", task, ids)
		}
		ids = append(ids, task.ID)
	}
	// Five deciders race to deliver the first task: one does.
	var wins int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			ok, err := s.MoveTask(ctx, ids[0], TaskChange{From: api.TaskQueued, To: api.TaskDelivered})
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d deciders delivered the task, want 1", wins)
	}
	moves := []struct {
		id       int64
		from, to string
	}{
		{ids[0], api.TaskDelivered, api.TaskDone}, {ids[1], api.TaskQueued, api.TaskDelivered}, {ids[1], api.TaskDelivered, api.TaskFailed},
		{ids[2], api.TaskQueued, api.TaskDelivered}, {ids[2], api.TaskDelivered, api.TaskFailed}, {ids[3], api.TaskQueued, api.TaskCancelled},
	}
	for _, m := range moves {
		if ok, err := s.MoveTask(ctx, m.id, TaskChange{From: m.from, To: m.to, Result: "r", Error: "e"}); err != nil || !ok {
			t.Fatalf("move %d %s→%s: %v, %v", m.id, m.from, m.to, ok, err)
		}
	}
	if ok, _ := s.MoveTask(ctx, ids[0], TaskChange{From: api.TaskDelivered, To: api.TaskFailed}); ok {
		t.Fatal("a done task was failed")
	}
	got, err := s.GetTask(ctx, ids[0])
	if err != nil || got.Status != api.TaskDone || got.Attempts != 1 || !got.DeliveredAt.Valid || !got.FinishedAt.Valid {
		t.Fatalf("the first task: %+v, %v", got, err)
	}
	if _, err := s.GetTask(ctx, ids[3]+100); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing task: %v", err)
	}
	recent, err := s.RecentTasks(ctx, 2)
	if err != nil || !slices.Equal(taskIDs(recent), ids[2:]) {
		t.Fatalf("recent 2: %v, %v; want %v", taskIDs(recent), err, ids[2:])
	}
	// w-2's failure is its latest end; w-3's was followed by a cancel.
	failed, err := s.FailedLast(ctx)
	if err != nil || !slices.Equal(taskIDs(failed), []int64{ids[1]}) {
		t.Fatalf("standing failures: %v, %v; want [%d] (w-3's ended cancelled later)", taskIDs(failed), err, ids[1])
	}
	un, err := s.Unnotified(ctx)
	if err != nil || !slices.Equal(taskIDs(un), ids[:3]) {
		t.Fatalf("unnotified: %v, %v; want %v", taskIDs(un), err, ids[:3])
	}
	for range 2 {
		if err := s.MarkNotified(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}
	}
	if un, _ = s.Unnotified(ctx); !slices.Equal(taskIDs(un), ids[1:3]) {
		t.Fatalf("unnotified after telling: %v", taskIDs(un))
	}
	counts, err := s.TaskCounts(ctx)
	if err != nil || counts["w-1"][api.TaskFailed] != 2 || counts["w-1"][api.TaskDone] != 1 || counts["w-1"][api.TaskCancelled] != 1 {
		t.Fatalf("counts: %v, %v", counts, err)
	}
	if list, err := s.ListTasks(ctx, "w-3"); err != nil || !slices.Equal(taskIDs(list), ids[2:]) {
		t.Fatalf("w-3's tasks: %v, %v", taskIDs(list), err)
	}
	if in, err := s.TasksIn(ctx, api.TaskFailed); err != nil || !slices.Equal(taskIDs(in), ids[1:3]) {
		t.Fatalf("failed tasks: %v, %v", taskIDs(in), err)
	}
}

// TestSettingsAndTokens: settings and gateway token hashes round-trip and
// are replaced in place.
func TestSettingsAndTokens(t *testing.T) { eachStore(t, testSettingsAndTokens) }

func testSettingsAndTokens(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	if _, ok, err := s.Setting(ctx, "gateway_port"); ok || err != nil {
		t.Fatalf("an unset setting: %v, %v", ok, err)
	}
	for _, v := range []string{"4000", "4001"} {
		if err := s.SetSetting(ctx, "gateway_port", v); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := s.Setting(ctx, "gateway_port"); v != "4001" || !ok || err != nil {
		t.Fatalf("setting: %q, %v, %v", v, ok, err)
	}
	p, err := s.CreatePane(ctx, newPane("a"), ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"hash1", "hash2"} {
		if err := s.SaveGatewayToken(ctx, p.ID, h); err != nil {
			t.Fatal(err)
		}
	}
	if tok, err := s.GatewayTokens(ctx); err != nil || len(tok) != 1 || tok["hash2"] != p.ID {
		t.Fatalf("tokens: %v, %v", tok, err)
	}
	if err := s.DeletePane(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if tok, _ := s.GatewayTokens(ctx); len(tok) != 0 {
		t.Fatalf("tokens of a removed pane: %v", tok)
	}
}
