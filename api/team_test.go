package api

import (
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/topology"
)

// TestTeamStatusCarriesNodes: the status view names each pane's node,
// and a pane of an unreachable node needs you.
func TestTeamStatusCarriesNodes(t *testing.T) {
	lead := "w-1"
	st := TeamStatus([]PaneInfo{
		{ID: "w-1", Role: "master", State: "idle", Node: "a", CacheHit: -1},
		{ID: "w-2", Role: "worker", Master: &lead, State: "unreachable", Reason: "node b does not answer: timeout", Node: "b", CacheHit: -1},
	}, nil, TaskSummary{}, HomeInfo{}, time.Now())
	if len(st.Masters) != 1 || st.Masters[0].Node != "a" || len(st.Masters[0].Workers) != 1 || st.Masters[0].Workers[0].Node != "b" {
		t.Fatalf("masters = %+v", st.Masters)
	}
	want := topology.Attention{ID: "w-2", State: "unreachable", Kind: topology.NeedUnreachable, Reason: "node b does not answer: timeout", Node: "b"}
	if len(st.NeedsYou) != 1 || st.NeedsYou[0] != want {
		t.Fatalf("needs_you = %+v, want [%+v]", st.NeedsYou, want)
	}
}

// TestTeamStatusCountsTasksByStatus: a master's task counts are read from
// the summary by the task statuses' names, and totalled.
func TestTeamStatusCountsTasksByStatus(t *testing.T) {
	t.Parallel()
	sum := TaskSummary{Counts: map[string]map[string]int{"w-1": {TaskQueued: 1, TaskDelivered: 2, TaskDone: 3, TaskFailed: 4, TaskCancelled: 5}}}
	st := TeamStatus([]PaneInfo{{ID: "w-1", Role: "master", State: "idle", CacheHit: -1}}, nil, sum, HomeInfo{}, time.Now())
	want := topology.TaskCounts{Total: 15, Queued: 1, Delivered: 2, Done: 3, Failed: 4, Cancelled: 5}
	if len(st.Masters) != 1 || st.Masters[0].Tasks != want {
		t.Fatalf("masters = %+v, want tasks %+v", st.Masters, want)
	}
}
