package supervisor

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Usage reports the ledger's model calls of every pane, removed ones
// included, grouped by q.By, with the cost of each group at the price
// table.
func (s *Supervisor) Usage(ctx context.Context, q api.UsageQuery) (api.UsageReport, error) {
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
		if sq.Pane, err = s.usagePane(ctx, q.Pane); err != nil {
			return api.UsageReport{}, err
		}
		rep.Pane = sq.Pane
	}
	rows, err := s.store.UsageGroups(ctx, sq)
	if err != nil {
		return api.UsageReport{}, err
	}
	s.fold(&rep, rows)
	return rep, nil
}

// usagePane is the pane a usage report is about: a live pane by id or
// title, or a removed pane by id while the ledger has its calls.
func (s *Supervisor) usagePane(ctx context.Context, ref string) (string, error) {
	id, err := api.ParsePaneID(ref)
	if err != nil {
		e, err := s.resolvePane(ref)
		if err != nil {
			return "", err
		}
		return e.cfg.ID, nil
	}
	if _, err := s.get(id); err == nil {
		return id, nil
	}
	has, err := s.store.HasUsage(ctx, id)
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
func (s *Supervisor) fold(rep *api.UsageReport, rows []schema.UsageGroup) {
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
		slices.SortFunc(keys, comparePaneIDs)
	}
	for _, k := range keys {
		g := groups[k]
		ug := api.UsageGroup{Key: k, Models: slices.Sorted(maps.Keys(g.byModel)), UsageSums: g.done(s.prices)}
		if rep.By == api.UsageByPane {
			if e, err := s.get(k); err == nil {
				ug.Title = e.cfg.Title
			}
		}
		rep.Groups = append(rep.Groups, ug)
	}
	rep.Total = total.done(s.prices)
	for _, m := range slices.Sorted(maps.Keys(total.byModel)) {
		if _, ok := s.prices.of(m); !ok {
			rep.Unpriced = append(rep.Unpriced, m)
		}
	}
}

// comparePaneIDs orders w-2 before w-10.
func comparePaneIDs(a, b string) int {
	na, _ := strconv.ParseInt(strings.TrimPrefix(a, "w-"), 10, 64)
	nb, _ := strconv.ParseInt(strings.TrimPrefix(b, "w-"), 10, 64)
	return cmp.Or(cmp.Compare(na, nb), strings.Compare(a, b))
}

func (a *handler) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rep, err := a.sup.Usage(r.Context(), api.UsageQuery{Pane: q.Get("pane"), Since: q.Get("since"), By: q.Get("by")})
	respond(w, rep, err)
}
