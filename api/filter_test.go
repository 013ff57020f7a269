package api

import (
	"slices"
	"strings"
	"testing"
)

// TestFilterCheck: a filter naming a state, role, team or node there is
// not is refused with the ones there are; one naming what there is passes.
func TestFilterCheck(t *testing.T) {
	t.Parallel()
	panes := []PaneInfo{{ID: "w-1", Team: "demo", Node: "a"}, {ID: "w-2", Node: "b"}}
	nodes := []string{"a", "c"}
	for _, tc := range []struct {
		f    PaneFilter
		want string // "" passes
	}{
		{PaneFilter{States: []string{"idle"}, Roles: []string{"untracked"}, Teams: []string{"demo"}, Nodes: []string{"b", "c"}}, ""},
		{PaneFilter{States: []string{"sleepy"}}, "--state sleepy: there is no such state (choose starting, idle"},
		{PaneFilter{Roles: []string{"boss"}}, "--role boss: there is no such role (choose master, worker or untracked)"},
		{PaneFilter{Teams: []string{"x"}}, "--team x: there is no such team (choose demo)"},
		{PaneFilter{Nodes: []string{"d"}}, "--node d: there is no such node (choose a, b or c)"},
	} {
		err := tc.f.Check(panes, nodes)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
	if err := (PaneFilter{Teams: []string{"x"}}).Check(nil, nil); err == nil || !strings.Contains(err.Error(), "there is none (no pane has one)") {
		t.Errorf("no teams: %v", err)
	}
}

// TestComparePaneIDs: panes are ordered by their number, w-2 before w-10;
// an id that is not w-N (number 0) comes first, by its text.
func TestComparePaneIDs(t *testing.T) {
	t.Parallel()
	ids := []string{"w-10", "x", "w-2", "w-1", "b"}
	slices.SortFunc(ids, ComparePaneIDs)
	if want := []string{"b", "x", "w-1", "w-2", "w-10"}; !slices.Equal(ids, want) {
		t.Fatalf("%q, want %q", ids, want)
	}
	if PaneNum("w-42") != 42 || PaneNum("w-x") != 0 {
		t.Fatal("PaneNum")
	}
}
