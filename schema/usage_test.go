package schema

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// addUsageAt records a call made at t.
func addUsageAt(t *testing.T, s *Store, u UsageRow, at string) {
	t.Helper()
	if err := s.AddUsage(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(context.Background(), `UPDATE usage SET created_at = ? WHERE id = (SELECT MAX(id) FROM usage)`, at); err != nil {
		t.Fatal(err)
	}
}

func TestUsageGroups(t *testing.T) { eachStore(t, testUsageGroups) }

func testUsageGroups(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	addUsageAt(t, s, UsageRow{PaneID: "w-1", Model: "m-a", InputTokens: 10, OutputTokens: 1, CacheRead: 100, CacheCreation: 5}, "2026-01-01T23:59:59.9Z")
	addUsageAt(t, s, UsageRow{PaneID: "w-1", Model: "m-a", InputTokens: 20, OutputTokens: 2, CacheRead: 200}, "2026-01-02T10:00:00.25Z")
	addUsageAt(t, s, UsageRow{PaneID: "w-1", Model: "m-a", Aux: "compact", InputTokens: 7, OutputTokens: 3}, "2026-01-02T10:00:00.3Z")
	addUsageAt(t, s, UsageRow{PaneID: "w-2", Model: "m-b", InputTokens: 4, OutputTokens: 4}, "2026-01-02T11:00:00Z")

	tot := func(in, out, read, write int64) UsageTotal {
		return UsageTotal{InputTokens: in, OutputTokens: out, CacheRead: read, CacheCreation: write}
	}
	for _, tc := range []struct {
		name string
		q    UsageQuery
		want []UsageGroup
	}{
		{"by pane", UsageQuery{By: ByPane}, []UsageGroup{
			{Key: "w-1", Model: "m-a", Calls: 2, UsageTotal: tot(30, 3, 300, 5)},
			{Key: "w-1", Model: "m-a", Aux: true, Calls: 1, UsageTotal: tot(7, 3, 0, 0)},
			{Key: "w-2", Model: "m-b", Calls: 1, UsageTotal: tot(4, 4, 0, 0)},
		}},
		{"by model", UsageQuery{By: ByModel}, []UsageGroup{
			{Key: "m-a", Model: "m-a", Calls: 2, UsageTotal: tot(30, 3, 300, 5)},
			{Key: "m-a", Model: "m-a", Aux: true, Calls: 1, UsageTotal: tot(7, 3, 0, 0)},
			{Key: "m-b", Model: "m-b", Calls: 1, UsageTotal: tot(4, 4, 0, 0)},
		}},
		{"by day (UTC)", UsageQuery{By: ByDay}, []UsageGroup{
			{Key: "2026-01-01", Model: "m-a", Calls: 1, UsageTotal: tot(10, 1, 100, 5)},
			{Key: "2026-01-02", Model: "m-a", Calls: 1, UsageTotal: tot(20, 2, 200, 0)},
			{Key: "2026-01-02", Model: "m-a", Aux: true, Calls: 1, UsageTotal: tot(7, 3, 0, 0)},
			{Key: "2026-01-02", Model: "m-b", Calls: 1, UsageTotal: tot(4, 4, 0, 0)},
		}},
		{"one pane", UsageQuery{By: ByModel, Pane: "w-2"}, []UsageGroup{
			{Key: "m-b", Model: "m-b", Calls: 1, UsageTotal: tot(4, 4, 0, 0)},
		}},
		// As text, "…10:00:00.25Z" sorts before "…10:00:00.2Z".
		{"since, to the fraction of a second", UsageQuery{By: ByPane, Since: time.Date(2026, 1, 2, 10, 0, 0, 200e6, time.UTC)}, []UsageGroup{
			{Key: "w-1", Model: "m-a", Calls: 1, UsageTotal: tot(20, 2, 200, 0)},
			{Key: "w-1", Model: "m-a", Aux: true, Calls: 1, UsageTotal: tot(7, 3, 0, 0)},
			{Key: "w-2", Model: "m-b", Calls: 1, UsageTotal: tot(4, 4, 0, 0)},
		}},
		// As text, "…11:00:00Z" sorts after "…11:00:00.5Z".
		{"since, a call on the second before it", UsageQuery{By: ByPane, Since: time.Date(2026, 1, 2, 11, 0, 0, 500e6, time.UTC)}, []UsageGroup{}},
		{"since, in another zone", UsageQuery{By: ByDay, Since: time.Date(2026, 1, 2, 11, 30, 0, 0, time.FixedZone("X", 3600))}, []UsageGroup{
			{Key: "2026-01-02", Model: "m-b", Calls: 1, UsageTotal: tot(4, 4, 0, 0)},
		}},
		{"nothing selected", UsageQuery{By: ByPane, Pane: "w-3"}, []UsageGroup{}},
	} {
		got, err := s.UsageGroups(ctx, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
	if _, err := s.UsageGroups(ctx, UsageQuery{By: "week"}); err == nil {
		t.Error("grouping by week was accepted")
	}
	for pane, want := range map[string]bool{"w-1": true, "w-3": false} {
		if got, err := s.HasUsage(ctx, pane); err != nil || got != want {
			t.Errorf("HasUsage(%s) = %v, %v; want %v", pane, got, err, want)
		}
	}
}
