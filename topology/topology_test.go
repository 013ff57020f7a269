package topology

import "testing"

// A worker reports to the master recorded in its row (the supervisor
// records the only master at create); one without is not taken by the
// only master there is now: it may have been made before that master.
func TestBuildWorkersReportToTheirRecordedMaster(t *testing.T) {
	st := Build([]Pane{
		{ID: "w-1", Role: "master", State: "idle"},
		{ID: "w-2", Role: "worker", State: "busy", Master: "w-1"},
		{ID: "w-3", Role: "reviewer", State: "idle"},
		{ID: "w-4", Role: "worker", State: "waiting", Reason: "permission", Master: "w-1"},
		{ID: "w-5", Role: "worker", State: "idle"},
	}, map[string]TaskCounts{"w-1": {Done: 2, Queued: 1}}, nil)
	if len(st.Masters) != 1 || len(st.Masters[0].Workers) != 2 {
		t.Fatalf("masters = %+v", st.Masters)
	}
	if len(st.Unassigned) != 1 || st.Unassigned[0].ID != "w-5" {
		t.Fatalf("unassigned = %+v, want w-5 (made without a master): the only master does not take it", st.Unassigned)
	}
	if got := st.Masters[0].Tasks; got.Total != 3 || got.Done != 2 || got.Queued != 1 {
		t.Fatalf("task counts = %+v", got)
	}
	if len(st.Untracked) != 1 || st.Untracked[0].ID != "w-3" || st.Untracked[0].Role != "reviewer" {
		t.Fatalf("untracked = %+v", st.Untracked)
	}
	if len(st.NeedsYou) != 1 || st.NeedsYou[0].ID != "w-4" {
		t.Fatalf("needs_you = %+v", st.NeedsYou)
	}
}

func TestBuildTwoMastersNeedExplicitLinks(t *testing.T) {
	st := Build([]Pane{
		{ID: "w-1", Role: "master"},
		{ID: "w-2", Role: "master"},
		{ID: "w-3", Role: "worker", Master: "w-2"},
		{ID: "w-4", Role: "worker"},
	}, nil, nil)
	if len(st.Masters[0].Workers) != 0 || len(st.Masters[1].Workers) != 1 || st.Masters[1].Workers[0].ID != "w-3" {
		t.Fatalf("masters = %+v", st.Masters)
	}
	if len(st.Unassigned) != 1 || st.Unassigned[0].ID != "w-4" {
		t.Fatalf("unassigned = %+v", st.Unassigned)
	}
}

func TestNeedsYou(t *testing.T) {
	panes := []Pane{
		{ID: "w-1", Role: "master", State: "idle"},
		{ID: "w-2", Role: "master", State: "busy"},
		{ID: "w-3", Role: "worker", Master: "w-1", State: "idle"},
		{ID: "w-4", Role: "worker", Master: "w-2", State: "error", Reason: "exit 1"},
		{ID: "w-5", Role: "worker", Master: "w-2", State: "idle", OverBudget: "cicy: pane w-5 reached its budget"},
	}
	counts := map[string]TaskCounts{"w-1": {Done: 2, Failed: 1}, "w-2": {Done: 1}}
	st := Build(panes, counts, []FailedTask{{ID: 7, Worker: "w-3", Error: "boom\nstack"}})
	want := []Attention{
		{ID: "w-1", State: "idle", Kind: NeedAllDone, Reason: "all 3 tasks finished: 2 done, 1 failed, 0 cancelled"},
		{ID: "w-3", State: "idle", Kind: NeedTaskFailed, Task: 7, Reason: "task 7 failed: boom …"},
		{ID: "w-4", State: "error", Kind: NeedError, Reason: "exit 1"},
		{ID: "w-5", State: "idle", Kind: NeedBudget, Reason: "cicy: pane w-5 reached its budget"},
	}
	if len(st.NeedsYou) != len(want) {
		t.Fatalf("needs_you = %+v", st.NeedsYou)
	}
	for i := range want {
		if st.NeedsYou[i] != want[i] {
			t.Errorf("needs_you[%d] = %+v, want %+v", i, st.NeedsYou[i], want[i])
		}
	}
	// A busy master may dispatch more: its finished tasks are not "all
	// done" yet (w-2 above), and neither are open ones.
	c := counts["w-1"]
	c.Queued = 1
	counts["w-1"] = c
	for _, n := range Build(panes, counts, nil).NeedsYou {
		if n.Kind == NeedAllDone {
			t.Fatalf("all_done with an open task: %+v", n)
		}
	}
}

func TestTracked(t *testing.T) {
	for role, want := range map[string]bool{"worker": true, "master": false, "": false, "Worker": false, "code reviewer": false} {
		if Tracked(role) != want {
			t.Errorf("Tracked(%q) = %v", role, !want)
		}
	}
}

// TestUnreachableNeedsYou: a pane of a node that does not answer is in
// needs_you with its node and the reason, and every part of the view
// carries each pane's node.
func TestUnreachableNeedsYou(t *testing.T) {
	st := Build([]Pane{
		{ID: "w-1", Role: "master", State: "busy", Node: "a"},
		{ID: "w-2", Role: "worker", Master: "w-1", State: "unreachable", Reason: "node b's lease lapsed 40 s ago", Node: "b"},
		{ID: "w-3", Role: "notes", State: "unreachable", Reason: "node b does not answer: connection refused", Node: "b"},
		{ID: "w-4", Role: "worker", Master: "w-1", State: "idle", Node: "a"},
	}, nil, nil)
	want := []Attention{
		{ID: "w-2", State: "unreachable", Kind: NeedUnreachable, Reason: "node b's lease lapsed 40 s ago", Node: "b"},
		{ID: "w-3", State: "unreachable", Kind: NeedUnreachable, Reason: "node b does not answer: connection refused", Node: "b"},
	}
	if len(st.NeedsYou) != len(want) {
		t.Fatalf("needs_you = %+v", st.NeedsYou)
	}
	for i := range want {
		if st.NeedsYou[i] != want[i] {
			t.Errorf("needs_you[%d] = %+v, want %+v", i, st.NeedsYou[i], want[i])
		}
	}
	if m := st.Masters[0]; m.Node != "a" || len(m.Workers) != 2 || m.Workers[0].Node != "b" || m.Workers[1].Node != "a" {
		t.Fatalf("masters = %+v", st.Masters)
	}
	if len(st.Untracked) != 1 || st.Untracked[0].Node != "b" {
		t.Fatalf("untracked = %+v", st.Untracked)
	}
}

func TestSpansNodes(t *testing.T) {
	for _, c := range []struct {
		nodes []string
		want  bool
	}{
		{nil, false},
		{[]string{"", ""}, false},
		{[]string{"a", "a", ""}, false},
		{[]string{"a", "", "b"}, true},
	} {
		if got := SpansNodes(c.nodes...); got != c.want {
			t.Errorf("SpansNodes(%q) = %v", c.nodes, got)
		}
	}
	st := Build([]Pane{{ID: "w-1", Role: "master", Node: "a"}, {ID: "w-2", Role: "notes", Node: "b"}}, nil, nil)
	if !SpansNodes(st.Nodes()...) {
		t.Fatalf("nodes of %+v: %q", st, st.Nodes())
	}
}
