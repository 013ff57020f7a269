package spend

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// Budgets: a spending limit in US dollars at the price table, a pane's own
// or a team's. A pane's spend is its calls' cost (the models with a price;
// a model without one cannot be held to a budget, and the budget report
// names it); a team's spend is the sum of its live panes'. Once a spend
// reaches its budget, the pane's model requests (every team pane's) are
// refused with a sentence saying how to raise it: by the gateway for CLI
// agents, by the turn loop's provider for cicy panes.

// budgetBook is the budgets in force, by "pane:w-3" or "team:NAME". The
// store holds them; this copy answers the check of every model request
// without a query.
type budgetBook struct {
	mu     sync.Mutex
	limits map[string]float64
	// set serialises the changes, so the store and the book agree.
	set sync.Mutex
}

// load fills the book from the stored panes and team budgets.
func (b *budgetBook) load(rows []schema.Pane, teams map[string]float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.limits = map[string]float64{}
	for _, r := range rows {
		if r.BudgetUSD.Valid {
			b.limits[api.BudgetPane+":"+r.ID] = r.BudgetUSD.Float64
		}
	}
	for name, usd := range teams {
		b.limits[api.BudgetTeam+":"+name] = usd
	}
}

// get returns the budget of a pane or team, if one is set.
func (b *budgetBook) get(scope, name string) (float64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	usd, ok := b.limits[scope+":"+name]
	return usd, ok
}

// put sets a budget, or removes it when usd is nil.
func (b *budgetBook) put(scope, name string, usd *float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if usd == nil {
		delete(b.limits, scope+":"+name)
		return
	}
	b.limits[scope+":"+name] = *usd
}

// scopes returns every budget set: panes by number, then teams by name.
func (b *budgetBook) scopes() (panes, teams []string) {
	b.mu.Lock()
	for k := range b.limits {
		scope, name, _ := strings.Cut(k, ":")
		if scope == api.BudgetPane {
			panes = append(panes, name)
		} else {
			teams = append(teams, name)
		}
	}
	b.mu.Unlock()
	slices.SortFunc(panes, api.ComparePaneIDs)
	slices.Sort(teams)
	return panes, teams
}

// Refusal is "" when the pane may make a model request, else the sentence
// the request is refused with: the pane's spend has reached its budget,
// or its team's spend the team's. It is asked before every model request
// (the gateway's, a cicy turn loop's) and needs no database.
func (a *Accounts) Refusal(pane string) string {
	if p, ok := a.panes.Live(pane); ok {
		return a.refusal(p)
	}
	return ""
}

// Reserve is Refusal for a request about to be made, and holds what it
// may cost at most (see WorstCase) until release: while requests of a
// pane (or of its team) are in flight, a new one is refused when the
// spend and what the requests in flight may cost, with its own, pass the
// budget. The first request in flight is refused only by a budget
// reached, so a pane with little left still works — its spend passes the
// budget by at most that one request's cost. A request whose cost has no
// bound (its model has no price, nor has any model of its upstream; its
// body could not be read) is refused while a budget holds the pane.
func (a *Accounts) Reserve(pane string, ask gateway.Ask) (release func(), why string) {
	p, ok := a.panes.Live(pane)
	if !ok {
		return func() {}, ""
	}
	a.held.mu.Lock()
	defer a.held.mu.Unlock()
	if why := a.refusal(p); why != "" {
		return nil, why
	}
	worst, bounded := a.WorstCase(ask)
	if !bounded || ask.Unread != "" {
		if why := a.unboundedRefusal(p, ask); why != "" {
			return nil, why
		}
	}
	if why := a.inFlightRefusal(p, worst); why != "" {
		return nil, why
	}
	a.held.usd[pane] += worst
	a.held.n[pane]++
	return func() {
		a.held.mu.Lock()
		defer a.held.mu.Unlock()
		if a.held.n[pane]--; a.held.n[pane] <= 0 {
			delete(a.held.usd, pane)
			delete(a.held.n, pane)
			return
		}
		a.held.usd[pane] -= worst
	}, ""
}

// heldBudget is the worst cost of the model requests in flight, by pane
// (Reserve), and how many there are.
type heldBudget struct {
	mu  sync.Mutex
	usd map[string]float64
	n   map[string]int
}

// inFlightRefusal is the sentence a request of worst cost is refused
// with when the requests in flight of its pane (or its team) may take
// the spend past the budget; "" when none are in flight or it fits. The
// caller holds a.held.mu.
func (a *Accounts) inFlightRefusal(p Pane, worst float64) string {
	check := func(who, ref string, limit float64, ids []string) string {
		var held float64
		var n int
		for _, id := range ids {
			held, n = held+a.held.usd[id], n+a.held.n[id]
		}
		spent, _ := a.spend(ids...)
		if n == 0 || spent+held+worst <= limit {
			return ""
		}
		return fmt.Sprintf("cicy: %s has %s of its budget of %s left, and its %d model requests in flight may spend it: wait for them, or raise it with: cicy-agent budget %s %s",
			who, api.USD(max(limit-spent, 0)), api.USD(limit), n, ref, api.Amount(api.RoundUp(2*limit)))
	}
	if limit, ok := a.budgets.get(api.BudgetPane, p.ID); ok {
		if why := check("pane "+p.ID, p.ID, limit, []string{p.ID}); why != "" {
			return why
		}
	}
	if p.Team == "" {
		return ""
	}
	if limit, ok := a.budgets.get(api.BudgetTeam, p.Team); ok {
		return check("team "+p.Team, api.TeamRef+p.Team, limit, a.teamPanes(p.Team))
	}
	return ""
}

// defaultMaxOutput is the output a request that does not bound its own is
// counted for.
const defaultMaxOutput = 32000

// WorstCase is what a request may cost at most at the price table, and
// whether it has a bound: its body's bytes as input tokens (a token is at
// least a few bytes of JSON), billed at the dearer of the input and the
// cache-write price, and its allowed output for each answer it asks for
// (n, best_of, candidateCount). The ledger bills the model the answer
// names, which an alias does not tell: a model without a price is counted
// at the dearest price of the models its upstream serves (prices.dearest),
// and any model at the price of a dearer one its answers were billed as
// (billedAs).
func (a *Accounts) WorstCase(ask gateway.Ask) (float64, bool) {
	pr, ok := a.prices.of(ask.Model)
	if !ok {
		pr, ok = a.prices.dearest(ask.API)
	}
	if seen, was := a.billed.of(ask.Model); was {
		pr, ok = dearer(pr, seen), true
	}
	if !ok {
		return 0, ask.API == ""
	}
	out := ask.MaxTokens
	if out <= 0 {
		out = defaultMaxOutput
	}
	in := float64(ask.BodyBytes/2 + 1)
	return (in*max(pr.Input, pr.CacheWrite) + float64(max(ask.Choices, 1))*float64(out)*pr.Output) / 1e6, true
}

// unboundedRefusal is the sentence a request whose cost has no bound (no
// price for it, or a body the gateway could not read) is refused with
// when a budget holds the pane (its own or its team's); "" when none
// does.
func (a *Accounts) unboundedRefusal(p Pane, ask gateway.Ask) string {
	who, ref := "pane "+p.ID, p.ID
	if _, ok := a.budgets.get(api.BudgetPane, p.ID); !ok {
		if _, ok := a.budgets.get(api.BudgetTeam, p.Team); p.Team == "" || !ok {
			return ""
		}
		who, ref = "team "+p.Team, api.TeamRef+p.Team
	}
	if ask.Unread != "" {
		return fmt.Sprintf("cicy: the gateway cannot read the request (%s), so the budget of %s cannot bound what it may cost: send it unencoded, or remove the budget with: cicy-agent budget %s none",
			ask.Unread, who, ref)
	}
	what := fmt.Sprintf("model %q has no price, nor does any model of the %s API", ask.Model, upstreamOf(ask.API))
	if ask.Model == "" {
		what = fmt.Sprintf("the request's model could not be read, and no model of the %s API has a price", upstreamOf(ask.API))
	}
	return fmt.Sprintf("cicy: %s, so the budget of %s cannot bound what the request may cost: add the model's price to \"prices\" in $CICY_HOME/db/lite-config.json (then cicy-agent shutdown), or remove the budget with: cicy-agent budget %s none",
		what, who, ref)
}

// billedAs keeps, by the model a request asked for, the dearest price
// field by field its answers were billed at when they named another
// model: a later request for it is held at that price at least. A model
// the upstream resolves (an alias, a router's choice) is known after its
// first answer.
type billedAs struct {
	mu    sync.Mutex
	price map[string]Price
}

// note records that a request for asked was answered, and billed, as
// model.
func (b *billedAs) note(p prices, asked, model string) {
	if asked == "" || model == asked {
		return
	}
	pr, ok := p.of(model)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.price[asked] = dearer(b.price[asked], pr)
}

// of is the dearest price answers to a request for asked were billed at
// under another model's name, if any.
func (b *billedAs) of(asked string) (Price, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pr, ok := b.price[asked]
	return pr, ok
}

// dearer is the dearer of two prices, field by field.
func dearer(a, b Price) Price {
	return Price{Input: max(a.Input, b.Input), Output: max(a.Output, b.Output),
		CacheRead: max(a.CacheRead, b.CacheRead), CacheWrite: max(a.CacheWrite, b.CacheWrite)}
}

func (a *Accounts) refusal(p Pane) string {
	if limit, ok := a.budgets.get(api.BudgetPane, p.ID); ok {
		if spent, _ := a.spend(p.ID); spent >= limit {
			return refusalSentence("pane "+p.ID, p.ID, limit, spent)
		}
	}
	if p.Team == "" {
		return ""
	}
	if limit, ok := a.budgets.get(api.BudgetTeam, p.Team); ok {
		if spent, _ := a.spend(a.teamPanes(p.Team)...); spent >= limit {
			return refusalSentence("team "+p.Team, api.TeamRef+p.Team, limit, spent)
		}
	}
	return ""
}

// refusalSentence says whose budget is reached and how to raise it, with
// an amount well above the spend: double the budget, or double the spend
// when one costly call went far past the budget.
func refusalSentence(who, ref string, limit, spent float64) string {
	raise := 2 * limit
	if raise < 1.5*spent {
		raise = 2 * spent
	}
	return "cicy: " + who + " reached its budget of " + api.USD(limit) + " (spent " + api.USD(spent) +
		"); raise it with: cicy-agent budget " + ref + " " + api.Amount(api.RoundUp(raise))
}

// spend is what the panes' calls cost at the price table, counting the
// models with a price, and the models without one, sorted.
func (a *Accounts) spend(ids ...string) (float64, []string) {
	a.usageMu.Lock()
	defer a.usageMu.Unlock()
	var usd float64
	unpriced := []string{}
	for _, id := range ids {
		for model, u := range a.usage[id] {
			if c, ok := a.prices.costOf(model, u); ok {
				usd += c
			} else if !slices.Contains(unpriced, model) {
				unpriced = append(unpriced, model)
			}
		}
	}
	slices.Sort(unpriced)
	return usd, unpriced
}

// teamPanes are the ids of a team's live panes (those starting included),
// in id order.
func (a *Accounts) teamPanes(team string) []string {
	var ids []string
	for id, t := range a.panes.LiveTeams() {
		if t == team {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, api.ComparePaneIDs)
	return ids
}

// spendChanged publishes a pane's change after a model call, and that of
// its team's other panes when the team has a budget: the call may have
// reached it for all of them.
func (a *Accounts) spendChanged(id string) {
	a.panes.Changed(id)
	p, ok := a.panes.Registered(id)
	if !ok || p.Team == "" {
		return
	}
	if _, ok := a.budgets.get(api.BudgetTeam, p.Team); !ok {
		return
	}
	for _, other := range a.teamPanes(p.Team) {
		if other != id {
			a.panes.Changed(other)
		}
	}
}

// Budget reports the budget of a pane (by id or title; with its team's)
// or of a team (team:NAME).
func (a *Accounts) Budget(ref string) (api.Budget, error) {
	if name, ok := api.TeamName(ref); ok {
		if err := api.CheckTeamName(name); err != nil {
			return api.Budget{}, err
		}
		return a.teamBudget(name), nil
	}
	p, err := a.panes.Local(ref)
	if err != nil {
		return api.Budget{}, err
	}
	return a.paneBudget(p), nil
}

// Budgets reports every budget set: the panes' by id, then the teams' by
// name.
func (a *Accounts) Budgets() []api.Budget {
	panes, teams := a.budgets.scopes()
	out := make([]api.Budget, 0, len(panes)+len(teams))
	for _, id := range panes {
		if p, ok := a.panes.Registered(id); ok {
			out = append(out, a.paneBudget(p))
		}
	}
	for _, name := range teams {
		out = append(out, a.teamBudget(name))
	}
	return out
}

func (a *Accounts) paneBudget(p Pane) api.Budget {
	b := api.Budget{Scope: api.BudgetPane, Name: p.ID, Title: p.Title}
	limit, set := a.budgets.get(api.BudgetPane, p.ID)
	spent, unpriced := a.spend(p.ID)
	standing(&b, limit, set, spent, unpriced)
	if p.Team != "" {
		t := a.teamBudget(p.Team)
		b.Team = &t
	}
	b.Refusal = a.refusal(p)
	return b
}

func (a *Accounts) teamBudget(name string) api.Budget {
	ids := a.teamPanes(name)
	b := api.Budget{Scope: api.BudgetTeam, Name: name, Panes: ids}
	limit, set := a.budgets.get(api.BudgetTeam, name)
	spent, unpriced := a.spend(ids...)
	standing(&b, limit, set, spent, unpriced)
	return b
}

// standing fills in a budget's limit, if set, and how the spend stands.
func standing(b *api.Budget, limit float64, set bool, spent float64, unpriced []string) {
	b.SpentUSD, b.Unpriced = spent, unpriced
	if !set {
		return
	}
	left := max(limit-spent, 0)
	b.BudgetUSD, b.LeftUSD, b.Reached = &limit, &left, spent >= limit
}

// SetBudget sets the budget of a pane (by id or title) or of a team
// (team:NAME), or removes it when req.BudgetUSD is nil, and reports it.
// A team must exist (a pane of it, or a budget of it, is known) unless
// req.Create is set: a mistyped name is refused, not a new team. The
// panes it applies to change at once: one whose budget is raised above
// its spend is no longer refused, nor in needs-you.
func (a *Accounts) SetBudget(ctx context.Context, ref string, req api.BudgetRequest) (api.Budget, error) {
	usd := req.BudgetUSD
	val := sql.NullFloat64{}
	if usd != nil {
		if err := api.CheckBudget(*usd); err != nil {
			return api.Budget{}, err
		}
		val = sql.NullFloat64{Float64: *usd, Valid: true}
	}
	a.budgets.set.Lock()
	defer a.budgets.set.Unlock()
	what := "none"
	if usd != nil {
		what = api.USD(*usd)
	}
	log := a.log.WithField("budget", what)
	if name, ok := api.TeamName(ref); ok {
		if err := api.CheckTeamName(name); err != nil {
			return api.Budget{}, err
		}
		if err := a.teamExists(name, req.Create); err != nil {
			return api.Budget{}, err
		}
		if err := a.store.SetTeamBudget(ctx, name, val); err != nil {
			return api.Budget{}, err
		}
		a.budgets.put(api.BudgetTeam, name, usd)
		ids := a.teamPanes(name)
		for _, id := range ids {
			a.panes.Changed(id)
		}
		log.WithField("team", name).Info("Team budget set")
		return a.teamBudget(name), nil
	}
	p, err := a.panes.Local(ref)
	if err != nil {
		return api.Budget{}, err
	}
	if err := a.store.SetPaneBudget(ctx, p.ID, val); errors.Is(err, schema.ErrNotFound) {
		return api.Budget{}, api.PaneNotFound(p.ID) // killed meanwhile
	} else if err != nil {
		return api.Budget{}, err
	}
	a.budgets.put(api.BudgetPane, p.ID, usd)
	a.panes.Changed(p.ID)
	log.WithField("pane", p.ID).Info("Pane budget set")
	return a.paneBudget(p), nil
}

// teamExists refuses a team no pane belongs to and no budget is set for,
// unless create: one sentence naming the teams there are, or how to make
// one.
func (a *Accounts) teamExists(name string, create bool) error {
	teams := a.teams()
	if create || slices.Contains(teams, name) {
		return nil
	}
	known := "there is none yet: 'cicy-agent up' of a team file named " + name + " starts it"
	if len(teams) > 0 {
		known = "the teams are " + strings.Join(teams, ", ")
	}
	msg := fmt.Sprintf("no team %q (%s); give --create to set the budget of a team before it starts", name, known)
	return &api.Error{Kind: api.KindNotFound, Message: msg}
}

// teams are the names of the teams known: those of the live panes and
// those with a budget set, sorted.
func (a *Accounts) teams() []string {
	_, teams := a.budgets.scopes()
	for _, team := range a.panes.LiveTeams() {
		if !slices.Contains(teams, team) {
			teams = append(teams, team)
		}
	}
	slices.Sort(teams)
	return teams
}

// budgeted is a cicy pane's provider behind its budget: once the pane's
// budget (or its team's) is reached, a model call is refused with the
// sentence, not made and not retried; the turn ends failed with it.
type budgeted struct {
	cicy.Provider
	a   *Accounts
	id  string
	api gateway.API // the provider's upstream ("" for the scripted model)
}

// Budgeted is a cicy pane's provider p (of the provider named name) behind
// the pane's budget: once the pane's budget (or its team's) is reached, a
// model call is refused with the sentence, not made and not retried; the
// turn ends failed with it.
func (a *Accounts) Budgeted(p cicy.Provider, pane, name string) cicy.Provider {
	return budgeted{Provider: p, a: a, id: pane, api: providerAPI(name)}
}

// providerAPI is the API whose upstream a cicy provider calls: "" for
// the scripted model, which answers as the model asked for.
func providerAPI(name string) gateway.API {
	switch name {
	case "anthropic":
		return gateway.Anthropic
	case "openai":
		return gateway.Chat
	}
	return ""
}

func (b budgeted) Stream(ctx context.Context, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error) {
	size := 0
	if body, err := json.Marshal(req); err == nil {
		size = len(body)
	}
	release, why := b.a.Reserve(b.id, gateway.Ask{API: b.api, Model: req.Model, BodyBytes: size, MaxTokens: req.MaxTokens, Choices: 1})
	if why != "" {
		b.a.log.WithFields(logrus.Fields{"pane": b.id, "model": req.Model}).Info("Refused a model call for the budget")
		return nil, errors.New(why)
	}
	defer release()
	return b.Provider.Stream(ctx, req, onEvent)
}
