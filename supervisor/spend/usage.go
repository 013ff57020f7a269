package spend

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Usage reports the ledger's model calls of every pane, removed ones
// included, grouped by q.By, with the cost of each group at the price
// table.
func (a *Accounts) Usage(ctx context.Context, q api.UsageQuery) (api.UsageReport, error) {
	by, err := api.CheckUsageBy(q.By)
	if err != nil {
		return api.UsageReport{}, err
	}
	rep := api.UsageReport{By: by, Groups: []api.UsageGroup{}, Unpriced: []string{}}
	sq := schema.UsageQuery{By: by}
	if q.Since != "" {
		t, err := api.ParseSince(q.Since, time.Now())
		if err != nil {
			return api.UsageReport{}, err
		}
		sq.Since, rep.Since = t, &t
	}
	if q.Pane != "" {
		if sq.Pane, err = a.usagePane(ctx, q.Pane); err != nil {
			return api.UsageReport{}, err
		}
		rep.Pane = sq.Pane
	}
	rows, err := a.store.UsageGroups(ctx, sq)
	if err != nil {
		return api.UsageReport{}, err
	}
	a.fold(&rep, rows)
	return rep, nil
}

// usagePane is the pane a usage report is about: a live pane by id or
// title, or a removed pane by id while the ledger has its calls.
func (a *Accounts) usagePane(ctx context.Context, ref string) (string, error) {
	id, err := api.ParsePaneID(ref)
	if err != nil {
		p, err := a.panes.Resolve(ref)
		if err != nil {
			return "", err
		}
		return p.ID, nil
	}
	if _, ok := a.panes.Registered(id); ok {
		return id, nil
	}
	has, err := a.store.HasUsage(ctx, id)
	if err != nil {
		return "", err
	}
	if !has {
		return "", &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no pane %s, and no calls of it in the usage ledger (see 'cicy-agent ls')", id)}
	}
	return id, nil
}

// usageSum is a group's sums as they are folded, with its tokens per
// model for the cost.
type usageSum struct {
	api.UsageSums
	byModel map[string]schema.UsageTotal
}

func (u *usageSum) add(r schema.UsageGroup) {
	if u.byModel == nil {
		u.byModel = map[string]schema.UsageTotal{}
	}
	u.byModel[r.Model] = u.byModel[r.Model].Add(r.UsageTotal)
	u.Calls += r.Calls
	u.InputTokens += r.InputTokens
	u.OutputTokens += r.OutputTokens
	u.CacheReadInputTokens += r.CacheRead
	u.CacheCreationInputTokens += r.CacheCreation
	if r.Aux {
		u.AuxCalls += r.Calls
		u.AuxTokens += r.InputTokens + r.OutputTokens + r.CacheRead + r.CacheCreation
	}
}

// done sets the cache-hit ratio and the cost.
func (u *usageSum) done(p prices) api.UsageSums {
	u.CacheHit = cacheHit(u.Usage)
	if usd, ok := p.cost(u.byModel); ok {
		u.CostUSD = &usd
	}
	return u.UsageSums
}

// fold sums the store's rows (per key, model and aux) into the report's
// groups and total.
func (a *Accounts) fold(rep *api.UsageReport, rows []schema.UsageGroup) {
	var keys []string
	groups := map[string]*usageSum{}
	var total usageSum
	for _, r := range rows {
		g := groups[r.Key]
		if g == nil {
			g = &usageSum{}
			groups[r.Key] = g
			keys = append(keys, r.Key)
		}
		g.add(r)
		total.add(r)
	}
	if rep.By == api.UsageByPane {
		slices.SortFunc(keys, api.ComparePaneIDs)
	}
	for _, k := range keys {
		g := groups[k]
		ug := api.UsageGroup{Key: k, Models: slices.Sorted(maps.Keys(g.byModel)), UsageSums: g.done(a.prices)}
		if rep.By == api.UsageByPane {
			if p, ok := a.panes.Registered(k); ok {
				ug.Title = p.Title
			}
		}
		rep.Groups = append(rep.Groups, ug)
	}
	rep.Total = total.done(a.prices)
	for _, m := range slices.Sorted(maps.Keys(total.byModel)) {
		if _, ok := a.prices.of(m); !ok {
			rep.Unpriced = append(rep.Unpriced, m)
		}
	}
}

// addUsage counts one model call of a pane.
func (a *Accounts) addUsage(id, model string, u schema.UsageTotal) {
	a.usageMu.Lock()
	if a.usage[id] == nil {
		a.usage[id] = map[string]schema.UsageTotal{}
	}
	a.usage[id][model] = a.usage[id][model].Add(u)
	a.usageMu.Unlock()
	a.spendChanged(id)
}

// usageOf is a pane's usage summed over models, and its cost if every
// model's price is known.
func (a *Accounts) usageOf(id string) (api.Usage, *float64) {
	a.usageMu.Lock()
	defer a.usageMu.Unlock()
	var t schema.UsageTotal
	for _, u := range a.usage[id] {
		t = t.Add(u)
	}
	u := api.Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CacheReadInputTokens: t.CacheRead, CacheCreationInputTokens: t.CacheCreation}
	if usd, ok := a.prices.cost(a.usage[id]); ok {
		return u, &usd
	}
	return u, nil
}

// cacheHit is cache-read input tokens over all input tokens, or -1 when
// there were none.
func cacheHit(u api.Usage) float64 {
	total := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	if total == 0 {
		return -1
	}
	return float64(u.CacheReadInputTokens) / float64(total)
}
