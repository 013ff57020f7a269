package spend

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Pane is what the spending knows of a pane.
type Pane struct {
	ID    string
	Title string
	Team  string // "" for none
}

// Panes is what the spending asks of the supervisor's pane registry.
type Panes interface {
	// Live is the pane with this id, registered or being started (a CLI
	// agent calls out while it starts).
	Live(id string) (Pane, bool)
	// Registered is the registered pane of this node with this id.
	Registered(id string) (Pane, bool)
	// Local is a pane of this node by id or title, or the API's error
	// saying why there is none.
	Local(ref string) (Pane, error)
	// Resolve is a pane by id or title, of this node or another of its
	// cluster, or the API's error saying why there is none.
	Resolve(ref string) (Pane, error)
	// LiveTeams are the teams of the live panes (those starting
	// included), by pane id; a pane of no team is left out.
	LiveTeams() map[string]string
	// Changed announces that a pane changed (its spend, its budget).
	Changed(id string)
}

// Store is what the spending needs of the database.
type Store interface {
	usageStore
	UsageByModel(ctx context.Context) (map[string]map[string]schema.UsageTotal, error)
	UsageGroups(ctx context.Context, q schema.UsageQuery) ([]schema.UsageGroup, error)
	HasUsage(ctx context.Context, pane string) (bool, error)
	SetPaneBudget(ctx context.Context, id string, usd sql.NullFloat64) error
	SetTeamBudget(ctx context.Context, team string, usd sql.NullFloat64) error
}

// Config is what New needs.
type Config struct {
	// Home is the CICY_HOME folder, whose db/lite-config.json may add
	// prices to the built-in table.
	Home  string
	Store Store
	Panes Panes
	Log   *logrus.Entry
	// LedgerRetry is how often usage rows the database refused are
	// written again (default 2 s).
	LedgerRetry time.Duration
	// Wrote is told how each of the ledger's writes went (the home's
	// disk watch).
	Wrote func(error)
}

// Accounts is the spending of a supervisor's panes: the price table,
// their usage by model, the ledger's writer, the budgets in force and the
// model requests in flight that hold them.
type Accounts struct {
	store Store
	panes Panes
	log   *logrus.Entry

	prices prices

	usageMu sync.Mutex
	usage   map[string]map[string]schema.UsageTotal // pane → model → sums

	ledger *ledger // usage rows to the store, queued while it refuses them

	budgets budgetBook
	held    heldBudget // the worst cost of the model requests in flight (Reserve)
	billed  billedAs   // the prices answers were billed at, by the model asked for
}

// New loads the price table and the usage of every pane the ledger has,
// and starts the ledger's writer (Close stops it). The budgets are loaded
// with LoadBudgets.
func New(ctx context.Context, cfg Config) (*Accounts, error) {
	a := &Accounts{store: cfg.Store, panes: cfg.Panes, log: cfg.Log, budgets: budgetBook{limits: map[string]float64{}},
		held: heldBudget{usd: map[string]float64{}, n: map[string]int{}}, billed: billedAs{price: map[string]Price{}}}
	var err error
	if a.prices, err = loadPrices(cfg.Home); err != nil {
		return nil, err
	}
	if a.usage, err = cfg.Store.UsageByModel(ctx); err != nil {
		return nil, err
	}
	a.ledger = newLedger(cfg.Store, cfg.Log, cfg.LedgerRetry, cfg.Wrote)
	return a, nil
}

// LoadBudgets puts in force the budgets of the stored panes of this node
// and of the teams.
func (a *Accounts) LoadBudgets(rows []schema.Pane, teams map[string]float64) {
	a.budgets.load(rows, teams)
}

// PutPaneBudget puts in force a pane's budget the store already holds (a
// new pane's), or takes it out when usd is nil (the pane is gone).
func (a *Accounts) PutPaneBudget(id string, usd *float64) {
	a.budgets.put(api.BudgetPane, id, usd)
}

// Record is the ledger: every model call, of a cicy pane's turn loop or
// through the gateway, is added to its pane's totals and stored; a row
// the store refuses waits in memory and is written again (see ledger).
func (a *Accounts) Record(ctx context.Context, row schema.UsageRow) error {
	a.addUsage(row.PaneID, row.Model, schema.UsageTotal{InputTokens: row.InputTokens, OutputTokens: row.OutputTokens,
		CacheRead: row.CacheRead, CacheCreation: row.CacheCreation})
	return a.ledger.add(ctx, row)
}

// NoteBilled hears that a request for the model asked was answered, and
// billed, as model: a later request for asked is held at its price at
// least (see WorstCase).
func (a *Accounts) NoteBilled(asked, model string) {
	a.billed.note(a.prices, asked, model)
}

// Describe fills in a pane's spending as the API shows it: its usage
// summed over models, its cost if every model's price is known, its
// cache-hit ratio, its budget and the sentence its model requests are
// refused with now. team is the pane's team ("" for none).
func (a *Accounts) Describe(pi *api.PaneInfo, team string) {
	pi.Usage, pi.CostUSD = a.usageOf(pi.ID)
	pi.CacheHit = cacheHit(pi.Usage)
	if usd, ok := a.budgets.get(api.BudgetPane, pi.ID); ok {
		pi.BudgetUSD = &usd
	}
	pi.OverBudget = a.refusal(Pane{ID: pi.ID, Title: pi.Title, Team: team})
}

// Waiting is how many usage rows wait in memory for the store to take
// them.
func (a *Accounts) Waiting() int { return a.ledger.pending() }

// Close stops the ledger's retries and tries the rows waiting once more;
// what the store still refuses is lost, and logged. It comes after the
// last model call.
func (a *Accounts) Close() { a.ledger.close() }
