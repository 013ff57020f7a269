package supervisor

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// TestUsageReport: the ledger grouped by pane and model, a removed pane's
// calls included, priced where the model's price is known and null where
// not, aux calls counted apart; a pane named by title or removed id.
func TestUsageReport(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	live := shellPane(t, c) // titled "sh"
	fillLedger(t, c, []schema.UsageRow{
		{PaneID: live, Model: "claude-sonnet-4-5", InputTokens: 1000, OutputTokens: 100, CacheRead: 9000},
		{PaneID: live, Model: "claude-sonnet-4-5", Aux: "title", InputTokens: 200, OutputTokens: 50},
		{PaneID: "w-10", Model: "mystery-model", InputTokens: 10, OutputTokens: 5, CacheCreation: 40},
	})
	t.Run("by pane", func(t *testing.T) { checkUsageByPane(t, c, live) })
	t.Run("by model and since", func(t *testing.T) { checkUsageFilters(t, c, live) })
	t.Run("errors", func(t *testing.T) { checkUsageErrors(t, c) })
}

// fillLedger writes rows into the supervisor's usage table.
func fillLedger(t *testing.T, c *api.Client, rows []schema.UsageRow) {
	t.Helper()
	ctx := context.Background()
	store, err := schema.Open(ctx, c.Home().(Home).DB())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, u := range rows {
		if err := store.AddUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
}

func checkUsageByPane(t *testing.T, c *api.Client, live string) {
	rep, err := c.Usage(context.Background(), api.UsageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.By != "pane" || len(rep.Groups) != 2 || rep.Groups[0].Key != live || rep.Groups[1].Key != "w-10" {
		t.Fatalf("by pane: %+v", rep)
	}
	g := rep.Groups[0]
	want := api.UsageSums{Calls: 2, AuxCalls: 1, AuxTokens: 250,
		Usage: api.Usage{InputTokens: 1200, OutputTokens: 150, CacheReadInputTokens: 9000}}
	if got := g.UsageSums; got.CostUSD == nil || math.Abs(*got.CostUSD-0.00855) > 1e-9 || math.Abs(got.CacheHit-9000.0/10200) > 1e-9 {
		t.Errorf("%s: cost %v, cache hit %v; want 0.00855 and %v", live, got.CostUSD, got.CacheHit, 9000.0/10200)
	}
	g.CostUSD, g.CacheHit = nil, 0
	if g.Title != "sh" || !reflect.DeepEqual(g.Models, []string{"claude-sonnet-4-5"}) || g.UsageSums != want {
		t.Errorf("%s = %+v; want title sh and %+v", live, g, want)
	}
	if removed := rep.Groups[1]; removed.Title != "" || removed.CostUSD != nil || removed.Calls != 1 {
		t.Errorf("the removed pane = %+v; want no title, no cost, 1 call", removed)
	}
	if rep.Total.Calls != 3 || rep.Total.AuxCalls != 1 || rep.Total.CostUSD != nil || !reflect.DeepEqual(rep.Unpriced, []string{"mystery-model"}) {
		t.Errorf("total %+v, unpriced %v; want 3 calls, 1 aux, no cost (mystery-model has no price)", rep.Total, rep.Unpriced)
	}
}

func checkUsageFilters(t *testing.T, c *api.Client, live string) {
	ctx := context.Background()
	rep, err := c.Usage(ctx, api.UsageQuery{By: "model", Since: "2h"})
	if err != nil || len(rep.Groups) != 2 || rep.Groups[0].Key != "claude-sonnet-4-5" || rep.Groups[1].Key != "mystery-model" || rep.Since == nil {
		t.Errorf("by model since 2h = %+v, %v", rep, err)
	}
	for ref, calls := range map[string]int64{"sh": 2, live: 2, "w-10": 1} {
		rep, err := c.Usage(ctx, api.UsageQuery{Pane: ref})
		if err != nil || rep.Total.Calls != calls || len(rep.Groups) != 1 {
			t.Errorf("--pane %s = %+v, %v; want %d calls in one group", ref, rep, err, calls)
		}
	}
	rep, err = c.Usage(ctx, api.UsageQuery{Since: "2099-01-01"})
	if err != nil || len(rep.Groups) != 0 || rep.Total.Calls != 0 || rep.Total.CacheHit != -1 || rep.Total.CostUSD != nil {
		t.Errorf("since 2099 = %+v, %v; want nothing", rep, err)
	}
}

func checkUsageErrors(t *testing.T, c *api.Client) {
	for q, kind := range map[api.UsageQuery]string{
		{Pane: "w-9"}: api.KindNotFound, {Pane: "nosuch"}: api.KindNotFound,
		{By: "week"}: api.KindUsage, {Since: "yesterday"}: api.KindUsage,
	} {
		var ae *api.Error
		if _, err := c.Usage(context.Background(), q); !errors.As(err, &ae) || ae.Kind != kind {
			t.Errorf("%+v: %v; want a %s error", q, err, kind)
		}
	}
}
