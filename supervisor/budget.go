package supervisor

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/panetype"
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
	slices.SortFunc(panes, comparePaneIDs)
	slices.Sort(teams)
	return panes, teams
}

// Refusal is "" when the pane may make a model request, else the sentence
// the request is refused with: the pane's spend has reached its budget,
// or its team's spend the team's. It is asked before every model request
// (the gateway's, a cicy turn loop's) and needs no database.
func (s *Supervisor) Refusal(pane string) string {
	if e, ok := s.live(pane); ok {
		return s.refusal(e)
	}
	return ""
}

// Reserve is Refusal for a request about to be made, and holds what it
// may cost at most (see worstCase) until release: while requests of a
// pane (or of its team) are in flight, a new one is refused when the
// spend and what the requests in flight may cost, with its own, pass the
// budget. The first request in flight is refused only by a budget
// reached, so a pane with little left still works — its spend passes the
// budget by at most that one request's cost. A request whose cost has no
// bound (its model has no price, nor has any model of its upstream; its
// body could not be read) is refused while a budget holds the pane.
func (s *Supervisor) Reserve(pane string, ask gateway.Ask) (release func(), why string) {
	e, ok := s.live(pane)
	if !ok {
		return func() {}, ""
	}
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	if why := s.refusal(e); why != "" {
		return nil, why
	}
	worst, bounded := s.worstCase(ask)
	if !bounded || ask.Unread != "" {
		if why := s.unboundedRefusal(e, ask); why != "" {
			return nil, why
		}
	}
	if why := s.inFlightRefusal(e, worst); why != "" {
		return nil, why
	}
	s.held.usd[pane] += worst
	s.held.n[pane]++
	return func() {
		s.held.mu.Lock()
		defer s.held.mu.Unlock()
		if s.held.n[pane]--; s.held.n[pane] <= 0 {
			delete(s.held.usd, pane)
			delete(s.held.n, pane)
			return
		}
		s.held.usd[pane] -= worst
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
// caller holds s.held.mu.
func (s *Supervisor) inFlightRefusal(e *entry, worst float64) string {
	check := func(who, ref string, limit float64, ids []string) string {
		var held float64
		var n int
		for _, id := range ids {
			held, n = held+s.held.usd[id], n+s.held.n[id]
		}
		spent, _ := s.spend(ids...)
		if n == 0 || spent+held+worst <= limit {
			return ""
		}
		return fmt.Sprintf("cicy: %s has %s of its budget of %s left, and its %d model requests in flight may spend it: wait for them, or raise it with: cicy-agent budget %s %s",
			who, api.USD(max(limit-spent, 0)), api.USD(limit), n, ref, api.Amount(api.RoundUp(2*limit)))
	}
	if limit, ok := s.budgets.get(api.BudgetPane, e.cfg.ID); ok {
		if why := check("pane "+e.cfg.ID, e.cfg.ID, limit, []string{e.cfg.ID}); why != "" {
			return why
		}
	}
	if e.team == "" {
		return ""
	}
	if limit, ok := s.budgets.get(api.BudgetTeam, e.team); ok {
		return check("team "+e.team, api.TeamRef+e.team, limit, s.teamPanes(e.team))
	}
	return ""
}

// defaultMaxOutput is the output a request that does not bound its own is
// counted for.
const defaultMaxOutput = 32000

// worstCase is what a request may cost at most at the price table, and
// whether it has a bound: its body's bytes as input tokens (a token is at
// least a few bytes of JSON), billed at the dearer of the input and the
// cache-write price, and its allowed output for each answer it asks for
// (n, best_of, candidateCount). The ledger bills the model the answer
// names, which an alias does not tell: a model without a price is counted
// at the dearest price of the models its upstream serves (prices.dearest),
// and any model at the price of a dearer one its answers were billed as
// (billedAs).
func (s *Supervisor) worstCase(ask gateway.Ask) (float64, bool) {
	pr, ok := s.prices.of(ask.Model)
	if !ok {
		pr, ok = s.prices.dearest(ask.API)
	}
	if seen, was := s.billed.of(ask.Model); was {
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
func (s *Supervisor) unboundedRefusal(e *entry, ask gateway.Ask) string {
	who, ref := "pane "+e.cfg.ID, e.cfg.ID
	if _, ok := s.budgets.get(api.BudgetPane, e.cfg.ID); !ok {
		if _, ok := s.budgets.get(api.BudgetTeam, e.team); e.team == "" || !ok {
			return ""
		}
		who, ref = "team "+e.team, api.TeamRef+e.team
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

// live is the pane with this id, registered or being started (a CLI
// agent calls out while it starts).
func (s *Supervisor) live(id string) (*entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.panes[id]
	if !ok {
		e, ok = s.starting[id]
	}
	return e, ok
}

// Refused hears that the gateway refused a CLI pane's main-loop request
// for its budget. The agent's turn has ended in that failure: a task it
// works on fails with the sentence, whatever the agent signals after
// (Codex nothing, opencode an idle carrying an earlier turn's answer).
func (s *Supervisor) Refused(pane, why string) {
	e, ok := s.live(pane)
	if !ok || !panetype.IsAgent(e.cfg.Type) {
		return
	}
	e.hooks.refused(time.Now(), "the gateway refused the agent's model request: "+why)
	s.tasks.PaneChanged() // settles a task the pane works on
}

func (s *Supervisor) refusal(e *entry) string {
	if limit, ok := s.budgets.get(api.BudgetPane, e.cfg.ID); ok {
		if spent, _ := s.spend(e.cfg.ID); spent >= limit {
			return refusalSentence("pane "+e.cfg.ID, e.cfg.ID, limit, spent)
		}
	}
	if e.team == "" {
		return ""
	}
	if limit, ok := s.budgets.get(api.BudgetTeam, e.team); ok {
		if spent, _ := s.spend(s.teamPanes(e.team)...); spent >= limit {
			return refusalSentence("team "+e.team, api.TeamRef+e.team, limit, spent)
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
func (s *Supervisor) spend(ids ...string) (float64, []string) {
	s.usageMu.Lock()
	defer s.usageMu.Unlock()
	var usd float64
	unpriced := []string{}
	for _, id := range ids {
		for model, u := range s.usage[id] {
			if c, ok := s.prices.costOf(model, u); ok {
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
func (s *Supervisor) teamPanes(team string) []string {
	var ids []string
	s.mu.Lock()
	for _, m := range []map[string]*entry{s.panes, s.starting} {
		for id, e := range m {
			if e.team == team {
				ids = append(ids, id)
			}
		}
	}
	s.mu.Unlock()
	slices.SortFunc(ids, comparePaneIDs)
	return ids
}

// spendChanged publishes a pane's change after a model call, and that of
// its team's other panes when the team has a budget: the call may have
// reached it for all of them.
func (s *Supervisor) spendChanged(id string) {
	s.paneChanged(id)
	e, err := s.get(id)
	if err != nil || e.team == "" {
		return
	}
	if _, ok := s.budgets.get(api.BudgetTeam, e.team); !ok {
		return
	}
	for _, p := range s.teamPanes(e.team) {
		if p != id {
			s.paneChanged(p)
		}
	}
}

// Budget reports the budget of a pane (by id or title; with its team's)
// or of a team (team:NAME).
func (s *Supervisor) Budget(ref string) (api.Budget, error) {
	if name, ok := api.TeamName(ref); ok {
		if err := api.CheckTeamName(name); err != nil {
			return api.Budget{}, err
		}
		return s.teamBudget(name), nil
	}
	e, err := s.localPane(ref)
	if err != nil {
		return api.Budget{}, err
	}
	return s.paneBudget(e), nil
}

// Budgets reports every budget set: the panes' by id, then the teams' by
// name.
func (s *Supervisor) Budgets() []api.Budget {
	panes, teams := s.budgets.scopes()
	out := make([]api.Budget, 0, len(panes)+len(teams))
	for _, id := range panes {
		if e, err := s.get(id); err == nil {
			out = append(out, s.paneBudget(e))
		}
	}
	for _, name := range teams {
		out = append(out, s.teamBudget(name))
	}
	return out
}

func (s *Supervisor) paneBudget(e *entry) api.Budget {
	b := api.Budget{Scope: api.BudgetPane, Name: e.cfg.ID, Title: e.cfg.Title}
	limit, set := s.budgets.get(api.BudgetPane, e.cfg.ID)
	spent, unpriced := s.spend(e.cfg.ID)
	standing(&b, limit, set, spent, unpriced)
	if e.team != "" {
		t := s.teamBudget(e.team)
		b.Team = &t
	}
	b.Refusal = s.refusal(e)
	return b
}

func (s *Supervisor) teamBudget(name string) api.Budget {
	ids := s.teamPanes(name)
	b := api.Budget{Scope: api.BudgetTeam, Name: name, Panes: ids}
	limit, set := s.budgets.get(api.BudgetTeam, name)
	spent, unpriced := s.spend(ids...)
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
func (s *Supervisor) SetBudget(ctx context.Context, ref string, req api.BudgetRequest) (api.Budget, error) {
	usd := req.BudgetUSD
	val := sql.NullFloat64{}
	if usd != nil {
		if err := api.CheckBudget(*usd); err != nil {
			return api.Budget{}, err
		}
		val = sql.NullFloat64{Float64: *usd, Valid: true}
	}
	s.budgets.set.Lock()
	defer s.budgets.set.Unlock()
	what := "none"
	if usd != nil {
		what = api.USD(*usd)
	}
	log := s.log.WithField("budget", what)
	if name, ok := api.TeamName(ref); ok {
		if err := api.CheckTeamName(name); err != nil {
			return api.Budget{}, err
		}
		if err := s.teamExists(name, req.Create); err != nil {
			return api.Budget{}, err
		}
		if err := s.store.SetTeamBudget(ctx, name, val); err != nil {
			return api.Budget{}, err
		}
		s.budgets.put(api.BudgetTeam, name, usd)
		ids := s.teamPanes(name)
		for _, id := range ids {
			s.paneChanged(id)
		}
		log.WithField("team", name).Info("Team budget set")
		return s.teamBudget(name), nil
	}
	e, err := s.localPane(ref)
	if err != nil {
		return api.Budget{}, err
	}
	if err := s.store.SetPaneBudget(ctx, e.cfg.ID, val); errors.Is(err, schema.ErrNotFound) {
		return api.Budget{}, notFoundErr(e.cfg.ID) // killed meanwhile
	} else if err != nil {
		return api.Budget{}, err
	}
	s.budgets.put(api.BudgetPane, e.cfg.ID, usd)
	s.paneChanged(e.cfg.ID)
	log.WithField("pane", e.cfg.ID).Info("Pane budget set")
	return s.paneBudget(e), nil
}

// teamExists refuses a team no pane belongs to and no budget is set for,
// unless create: one sentence naming the teams there are, or how to make
// one.
func (s *Supervisor) teamExists(name string, create bool) error {
	teams := s.teams()
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
func (s *Supervisor) teams() []string {
	_, teams := s.budgets.scopes()
	s.mu.Lock()
	for _, m := range []map[string]*entry{s.panes, s.starting} {
		for _, e := range m {
			if e.team != "" && !slices.Contains(teams, e.team) {
				teams = append(teams, e.team)
			}
		}
	}
	s.mu.Unlock()
	slices.Sort(teams)
	return teams
}

// budgeted is a cicy pane's provider behind its budget: once the pane's
// budget (or its team's) is reached, a model call is refused with the
// sentence, not made and not retried; the turn ends failed with it.
type budgeted struct {
	cicy.Provider
	s   *Supervisor
	id  string
	api gateway.API // the provider's upstream ("" for the scripted model)
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
	release, why := b.s.Reserve(b.id, gateway.Ask{API: b.api, Model: req.Model, BodyBytes: size, MaxTokens: req.MaxTokens, Choices: 1})
	if why != "" {
		b.s.log.WithFields(logrus.Fields{"pane": b.id, "model": req.Model}).Info("Refused a model call for the budget")
		return nil, errors.New(why)
	}
	defer release()
	return b.Provider.Stream(ctx, req, onEvent)
}

func (a *handler) budgetRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/budgets", func(w http.ResponseWriter, r *http.Request) {
		respond(w, a.sup.Budgets(), nil)
	})
	mux.HandleFunc("GET /api/budgets/{ref}", func(w http.ResponseWriter, r *http.Request) {
		b, err := a.sup.Budget(r.PathValue("ref"))
		respond(w, b, err)
	})
	mux.HandleFunc("PUT /api/budgets/{ref}", func(w http.ResponseWriter, r *http.Request) {
		var req api.BudgetRequest
		if err := decode(r, &req); err != nil {
			writeErr(w, err)
			return
		}
		b, err := a.sup.SetBudget(r.Context(), r.PathValue("ref"), req)
		respond(w, b, err)
	})
}
