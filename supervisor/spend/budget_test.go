package spend

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// registry is the supervisor's pane registry as the spending sees it
// (Panes): panes by id, and the changes announced.
type registry struct {
	mu      sync.Mutex
	panes   map[string]Pane
	changed []string
}

func (r *registry) Live(id string) (Pane, bool) { return r.Registered(id) }

func (r *registry) Registered(id string) (Pane, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.panes[id]
	return p, ok
}

func (r *registry) Local(ref string) (Pane, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.panes {
		if p.ID == ref || p.Title == ref {
			return p, nil
		}
	}
	return Pane{}, api.PaneNotFound(ref)
}

func (r *registry) Resolve(ref string) (Pane, error) { return r.Local(ref) }

func (r *registry) LiveTeams() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for id, p := range r.panes {
		if p.Team != "" {
			out[id] = p.Team
		}
	}
	return out
}

func (r *registry) Changed(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changed = append(r.changed, id)
}

// announced returns the changes announced since the last call.
func (r *registry) announced() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.changed
	r.changed = nil
	slices.Sort(out)
	return out
}

// rig is the spending of a home of its own, on a real SQLite store.
type rig struct {
	t     *testing.T
	a     *Accounts
	panes *registry
	n     int
}

func newRig(t *testing.T) *rig {
	t.Helper()
	home := t.TempDir()
	store, err := schema.Open(context.Background(), filepath.Join(home, "db", "cicy.db"))
	if err != nil {
		t.Fatal(err)
	}
	l := logrus.New()
	l.SetOutput(io.Discard)
	r := &rig{t: t, panes: &registry{panes: map[string]Pane{}}}
	r.a, err = New(context.Background(), Config{Home: home, Store: store, Panes: r.panes, Log: logrus.NewEntry(l), Wrote: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.a.Close(); store.Close() })
	return r
}

// pane adds a pane of team ("" for none) with a budget (0: none), as the
// supervisor's create does.
func (r *rig) pane(title, team string, budget float64) string {
	r.n++
	id := fmt.Sprintf("w-%d", r.n)
	r.panes.mu.Lock()
	r.panes.panes[id] = Pane{ID: id, Title: title, Team: team}
	r.panes.mu.Unlock()
	if budget > 0 {
		r.a.PutPaneBudget(id, &budget)
	}
	return id
}

// spend records a call of claude-sonnet-4-5 ($3 per million input tokens)
// costing usd, or of a model without a price.
func (r *rig) spend(id, model string, usd float64) {
	r.t.Helper()
	row := schema.UsageRow{PaneID: id, Model: model, InputTokens: int64(usd / 3 * 1e6), OutputTokens: 1}
	if err := r.a.Record(context.Background(), row); err != nil {
		r.t.Fatal(err)
	}
}

// set sets the budget of a pane or a team (made if need be).
func (r *rig) set(ref string, usd *float64) api.Budget {
	r.t.Helper()
	b, err := r.a.SetBudget(context.Background(), ref, api.BudgetRequest{BudgetUSD: usd, Create: true})
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

func usd(v float64) *float64 { return &v }

const sonnet = "claude-sonnet-4-5"

// sonnetAsk is a request of 100 bytes for claude-sonnet-4-5 allowing 1,000
// output tokens: at most $0.01515.
var sonnetAsk = gateway.Ask{API: gateway.Anthropic, Model: sonnet, BodyBytes: 100, MaxTokens: 1000, Choices: 1}

// A cicy pane's provider refuses a call over the budget with the
// sentence, without making it.
func TestBudgetedProvider(t *testing.T) {
	r := newRig(t)
	a := r.pane("a", "", 0.5)
	p := &countingProvider{}
	bp := r.a.Budgeted(p, a, "script")
	if _, err := bp.Stream(context.Background(), &wire.Request{Model: sonnet}, nil); err != nil || p.calls != 1 {
		t.Fatalf("under the budget: %v, %d calls", err, p.calls)
	}
	r.spend(a, sonnet, 0.5)
	_, err := bp.Stream(context.Background(), &wire.Request{Model: sonnet}, nil)
	if err == nil || err.Error() != r.a.Refusal(a) || p.calls != 1 {
		t.Errorf("over the budget: %v, %d calls; want the refusal and no call", err, p.calls)
	}
}

type countingProvider struct{ calls int }

func (c *countingProvider) Stream(context.Context, *wire.Request, func(wire.Event)) (*wire.Response, error) {
	c.calls++
	return &wire.Response{}, nil
}

// A model call announces its pane's change, and that of its team's other
// panes when the team has a budget (the call may have reached it for all
// of them); a team's budget set announces every pane of the team.
func TestSpendAnnouncesTheTeam(t *testing.T) {
	r := newRig(t)
	a, b := r.pane("a", "crew", 0), r.pane("b", "crew", 0)
	other := r.pane("c", "", 0)
	r.spend(a, sonnet, 0.01)
	if got := r.panes.announced(); !slices.Equal(got, []string{a}) {
		t.Errorf("a call of a team without a budget announced %v", got)
	}
	r.set(api.TeamRef+"crew", usd(1))
	if got := r.panes.announced(); !slices.Equal(got, []string{a, b}) {
		t.Errorf("the team's budget set announced %v", got)
	}
	r.spend(a, sonnet, 0.01)
	if got := r.panes.announced(); !slices.Equal(got, []string{a, b}) {
		t.Errorf("a call of a team with a budget announced %v", got)
	}
	r.spend(other, sonnet, 0.01)
	if got := r.panes.announced(); !slices.Equal(got, []string{other}) {
		t.Errorf("a call of a pane of no team announced %v", got)
	}
}

// A pane's own budget and its team's in the pane's description: the
// budget, the cost, the cache-hit ratio and the sentence it is refused
// with, the team's once the team's spend reaches it.
func TestDescribe(t *testing.T) {
	r := newRig(t)
	a := r.pane("a", "crew", 5)
	b := r.pane("b", "crew", 0)
	r.set(api.TeamRef+"crew", usd(1))
	var pi api.PaneInfo
	pi.ID = a
	r.a.Describe(&pi, "crew")
	if pi.BudgetUSD == nil || *pi.BudgetUSD != 5 || pi.CostUSD != nil || pi.CacheHit != -1 || pi.OverBudget != "" {
		t.Fatalf("before any call: %+v", pi)
	}
	r.spend(b, sonnet, 1.2)
	r.a.Describe(&pi, "crew")
	want := "cicy: team crew reached its budget of $1.00 (spent $1.20); raise it with: cicy-agent budget team:crew 2.00"
	if pi.CostUSD != nil || pi.OverBudget != want {
		t.Errorf("after b's call: cost %v, over_budget %q; want none and %q", pi.CostUSD, pi.OverBudget, want)
	}
	r.spend(a, sonnet, 0.3)
	r.a.Describe(&pi, "crew")
	if pi.CostUSD == nil || *pi.CostUSD < 0.29 || *pi.CostUSD > 0.31 || pi.Usage.InputTokens != 99999 || pi.CacheHit != 0 {
		t.Errorf("after a's call: cost %v, usage %+v, cache hit %v", pi.CostUSD, pi.Usage, pi.CacheHit)
	}
}

// TestTeamBudgetHoldsRequestsInFlight: the requests in flight of all a
// team's panes count against the team's budget.
func TestTeamBudgetHoldsRequestsInFlight(t *testing.T) {
	r := newRig(t)
	a, b := r.pane("a", "crew", 0), r.pane("b", "crew", 0)
	limit := 0.05
	r.set(api.TeamRef+"crew", &limit)
	var releases []func()
	for i, id := range []string{a, b, a} {
		release, why := r.a.Reserve(id, sonnetAsk)
		if why != "" {
			t.Fatalf("request %d refused: %s", i, why)
		}
		releases = append(releases, release)
	}
	if _, why := r.a.Reserve(b, sonnetAsk); !strings.Contains(why, "team crew has $0.05 of its budget of $0.05 left, and its 3 model requests in flight may spend it") {
		t.Fatalf("the fourth: %q", why)
	}
	for _, f := range releases {
		f()
	}
	if release, why := r.a.Reserve(b, sonnetAsk); why != "" {
		t.Fatalf("after the others ended: %q", why)
	} else {
		release()
	}
	if len(r.a.held.usd) != 0 || len(r.a.held.n) != 0 {
		t.Fatalf("held after every release: %v %v", r.a.held.usd, r.a.held.n)
	}
}

// A request that has the upstream generate several answers (Chat
// Completions' n, best_of, Gemini's candidateCount) holds its output
// limit once per answer: beside one in flight, a request with n=128 does
// not fit a $0.05 budget (one with n=128 once spent $1.28 against it).
func TestBudgetCountsEveryAnswer(t *testing.T) {
	r := newRig(t)
	a := r.pane("a", "", 0.05)
	one := gateway.Ask{API: gateway.Chat, Model: "gpt-4o-mini", BodyBytes: 100, MaxTokens: 100, Choices: 1}
	many := one
	many.Choices = 128
	w1, _ := r.a.WorstCase(one)
	w128, _ := r.a.WorstCase(many)
	if in := 51 * 0.15 / 1e6; w128 < in+128*100*0.6/1e6 || w1 >= w128/100 {
		t.Fatalf("worst cost of one answer $%.6f, of 128 $%.6f", w1, w128)
	}
	release, why := r.a.Reserve(a, one)
	if why != "" {
		t.Fatal(why)
	}
	defer release()
	if _, why := r.a.Reserve(a, one); why != "" {
		t.Fatalf("a second request of one answer: %q", why)
	}
	many.MaxTokens = 1000 // 128,000 tokens at $0.60 a million: $0.077
	if _, why := r.a.Reserve(a, many); !strings.Contains(why, "pane "+a+" has $0.05 of its budget of $0.05 left, and its 2 model requests in flight may spend it") {
		t.Fatalf("n=128 beside two in flight: %q", why)
	}
}

// A model the price table does not know is held at the dearest price of
// its upstream's models, input billed as a cache write at worst; with
// none priced (here no Gemini model: its built-in prices are taken out of
// the table), a pane under a budget is refused, saying how to price it or
// remove the budget, while one without a budget is served; so is a body
// the gateway could not read. The scripted model answers as the model
// asked for: an unpriced one costs nothing.
func TestBudgetUnpricedModel(t *testing.T) {
	r := newRig(t)
	if _, ok := r.a.prices.dearest(gateway.Gemini); !ok {
		t.Error("the built-in table prices no Gemini model")
	}
	for k := range r.a.prices {
		if strings.HasPrefix(k, "gemini") {
			delete(r.a.prices, k)
		}
	}
	free := r.pane("free", "", 0)
	held := r.pane("held", "crew", 0)
	r.set(api.TeamRef+"crew", usd(1))
	alias := gateway.Ask{API: gateway.Anthropic, Model: "claude-best", BodyBytes: 2000, MaxTokens: 1000, Choices: 1}
	worst, ok := r.a.WorstCase(alias)
	if want := (1001*18.75 + 1000*75) / 1e6; !ok || worst != want {
		t.Errorf("claude-best held at $%.6f (%v); want $%.6f, claude-opus-4's output and cache write", worst, ok, want)
	}
	chat := alias
	chat.API, chat.Model = gateway.Responses, "o9-pro"
	if worst, ok := r.a.WorstCase(chat); !ok || worst != (1001*2.5+1000*10)/1e6 {
		t.Errorf("o9-pro held at $%.6f (%v); want gpt-4o's price", worst, ok)
	}
	gem := gateway.Ask{API: gateway.Gemini, Model: "gemini-2.5-pro", BodyBytes: 2000, MaxTokens: 1000, Choices: 1}
	want := `cicy: model "gemini-2.5-pro" has no price, nor does any model of the Gemini API, so the budget of team crew cannot bound what the request may cost: add the model's price to "prices" in $CICY_HOME/db/lite-config.json (then cicy-agent shutdown), or remove the budget with: cicy-agent budget team:crew none`
	if _, why := r.a.Reserve(held, gem); why != want {
		t.Errorf("Gemini under a budget:\n%q\nwant\n%q", why, want)
	}
	if release, why := r.a.Reserve(free, gem); why != "" {
		t.Errorf("Gemini without a budget: %q", why)
	} else {
		release()
	}
	// A body the gateway could not read (in a Content-Encoding) tells
	// nothing of its cost.
	zstd := gateway.Ask{API: gateway.Responses, BodyBytes: 2000, Choices: 1, Unread: `its body is in Content-Encoding "zstd"`}
	want = `cicy: the gateway cannot read the request (its body is in Content-Encoding "zstd"), so the budget of team crew cannot bound what it may cost: send it unencoded, or remove the budget with: cicy-agent budget team:crew none`
	if _, why := r.a.Reserve(held, zstd); why != want {
		t.Errorf("an encoded body under a budget:\n%q\nwant\n%q", why, want)
	}
	if release, why := r.a.Reserve(free, zstd); why != "" {
		t.Errorf("an encoded body without a budget: %q", why)
	} else {
		release()
	}
	script := gateway.Ask{Model: "mystery-1", BodyBytes: 2000, MaxTokens: 1000, Choices: 1}
	if worst, ok := r.a.WorstCase(script); !ok || worst != 0 {
		t.Errorf("the scripted model's mystery-1 held at $%.6f (%v); want nothing", worst, ok)
	}
	if release, why := r.a.Reserve(held, script); why != "" {
		t.Errorf("the scripted model under a budget: %q", why)
	} else {
		release()
	}
}
