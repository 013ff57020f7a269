package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cicypanes"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// budgetRig is a supervisor on its own store, for the budget tests: its
// panes are PTY shells that wait, and their spend is recorded as a cicy
// pane's would be.
type budgetRig struct {
	t     *testing.T
	h     Home
	store *schema.Store
	s     *Supervisor
}

func newBudgetRig(t *testing.T) *budgetRig {
	t.Helper()
	r := &budgetRig{t: t, h: Home{Root: filepath.Join(t.TempDir(), "home")}}
	if err := r.h.Prepare(); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.store, err = schema.Open(context.Background(), r.h.DB()); err != nil {
		t.Fatal(err)
	}
	r.start()
	t.Cleanup(func() { r.s.Close(); r.store.Close() })
	return r
}

// start starts the supervisor (again) on the rig's store.
func (r *budgetRig) start() {
	r.t.Helper()
	l := logrus.New()
	l.SetOutput(io.Discard)
	s, err := New(context.Background(), Config{Home: r.h, Log: logrus.NewEntry(l)}, r.store)
	if err != nil {
		r.t.Fatal(err)
	}
	r.s = s
}

// pane creates a shell pane of team ("" for none) with a budget (0: none).
func (r *budgetRig) pane(title, team string, usd float64) string {
	r.t.Helper()
	p, err := r.s.Create(context.Background(), api.CreateRequest{Title: title, Type: "shell", Backend: "pty",
		Command: []string{"sh", "-c", "exec sleep 100000"}, Team: team, BudgetUSD: usd})
	if err != nil {
		r.t.Fatal(err)
	}
	return p.ID
}

// spend records a call of claude-sonnet-4-5 ($3 per million input tokens)
// costing usd, or of a model without a price.
func (r *budgetRig) spend(id, model string, usd float64) {
	r.t.Helper()
	rec := cicy.UsageRecord{PaneID: id, Model: model, Usage: wire.Usage{InputTokens: int64(usd / 3 * 1e6), OutputTokens: 1}}
	if err := (cicypanes.UsageSink{Ledger: r.s.spend}).RecordUsage(context.Background(), rec); err != nil {
		r.t.Fatal(err)
	}
}

func (r *budgetRig) set(ref string, usd *float64) api.Budget {
	r.t.Helper()
	return r.put(ref, api.BudgetRequest{BudgetUSD: usd})
}

// create sets the budget of a team that is not known yet.
func (r *budgetRig) create(ref string, usd *float64) api.Budget {
	r.t.Helper()
	return r.put(ref, api.BudgetRequest{BudgetUSD: usd, Create: true})
}

func (r *budgetRig) put(ref string, req api.BudgetRequest) api.Budget {
	r.t.Helper()
	b, err := r.s.spend.SetBudget(context.Background(), ref, req)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// needs returns the needs-you entries of kind budget, by pane.
func (r *budgetRig) needs() map[string]string {
	r.t.Helper()
	st, err := r.s.Status(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range st.NeedsYou {
		if n.Kind == "budget" {
			out[n.ID] = n.Reason
		}
	}
	return out
}

func usd(v float64) *float64 { return &v }

const sonnet = "claude-sonnet-4-5"

// A pane's own budget: allowed below it, refused with the sentence once
// its spend reaches it, shown in ls and needs-you, and allowed again when
// it is raised or removed.
func TestPaneBudgetRefusal(t *testing.T) {
	r := newBudgetRig(t)
	w := r.pane("build", "", 0.5)
	free := r.pane("free", "", 0)
	if got := r.s.spend.Refusal(w); got != "" {
		t.Fatalf("refused before any spend: %q", got)
	}
	r.spend(w, sonnet, 0.3)
	r.spend(free, sonnet, 9)
	if got := r.s.spend.Refusal(w); got != "" {
		t.Fatalf("refused at $0.30 of $0.50: %q", got)
	}
	r.spend(w, sonnet, 0.21)
	want := "cicy: pane " + w + " reached its budget of $0.50 (spent $0.51); raise it with: cicy-agent budget " + w + " 1.00"
	if got := r.s.spend.Refusal(w); got != want {
		t.Fatalf("Refusal = %q\nwant      %q", got, want)
	}
	if got := r.s.spend.Refusal(free); got != "" {
		t.Errorf("a pane without a budget is refused: %q", got)
	}
	pi, _ := r.s.Get(w)
	if pi.BudgetUSD == nil || *pi.BudgetUSD != 0.5 || pi.OverBudget != want {
		t.Errorf("ls: budget_usd %v, over_budget %q", pi.BudgetUSD, pi.OverBudget)
	}
	if got := r.needs(); !reflect.DeepEqual(got, map[string]string{w: want}) {
		t.Errorf("needs-you %v", got)
	}
	b := r.set("build", usd(1)) // by title
	if b.Name != w || b.Reached || b.Refusal != "" || *b.LeftUSD < 0.48 || *b.LeftUSD > 0.5 {
		t.Errorf("raised: %+v", b)
	}
	if got := r.s.spend.Refusal(w); got != "" {
		t.Errorf("refused after the raise: %q", got)
	}
	if got := r.needs(); len(got) != 0 {
		t.Errorf("needs-you after the raise: %v", got)
	}
	r.set(w, usd(0.4))
	if r.s.spend.Refusal(w) == "" {
		t.Error("not refused under a lowered budget")
	}
	r.set(w, nil)
	if got, pi := r.s.spend.Refusal(w), r.describeOf(w); got != "" || pi.BudgetUSD != nil {
		t.Errorf("budget removed: refusal %q, budget_usd %v", got, pi.BudgetUSD)
	}
}

func (r *budgetRig) describeOf(id string) api.PaneInfo {
	r.t.Helper()
	pi, err := r.s.Get(id)
	if err != nil {
		r.t.Fatal(err)
	}
	return pi
}

// A team's budget holds the sum of its live panes' spend: every pane of
// the team is refused once the sum reaches it, others are not; a removed
// pane's spend no longer counts.
func TestTeamBudgetSum(t *testing.T) {
	r := newBudgetRig(t)
	a, b := r.pane("a", "demo", 0), r.pane("b", "demo", 0)
	other := r.pane("c", "other", 0)
	r.set("team:demo", usd(1))
	r.spend(a, sonnet, 0.6)
	r.spend(other, sonnet, 5)
	if r.s.spend.Refusal(a) != "" || r.s.spend.Refusal(b) != "" {
		t.Fatal("refused at $0.60 of the team's $1.00")
	}
	r.spend(b, sonnet, 0.5)
	want := "cicy: team demo reached its budget of $1.00 (spent $1.10); raise it with: cicy-agent budget team:demo 2.00"
	for _, id := range []string{a, b} {
		if got := r.s.spend.Refusal(id); got != want {
			t.Errorf("Refusal(%s) = %q\nwant %q", id, got, want)
		}
	}
	if got := r.s.spend.Refusal(other); got != "" {
		t.Errorf("a pane of another team is refused: %q", got)
	}
	if got := r.needs(); len(got) != 2 || got[a] != want || got[b] != want {
		t.Errorf("needs-you %v", got)
	}
	r.checkTeamReport(a, b, want)
	// Removing b takes its $0.50 out of the team's spend.
	if err := r.s.Kill(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got := r.s.spend.Refusal(a); got != "" {
		t.Errorf("refused after the pane that spent most was removed: %q", got)
	}
	r.set("team:demo", nil)
	if tb, _ := r.s.spend.Budget("team:demo"); tb.BudgetUSD != nil || tb.Reached {
		t.Errorf("removed team budget: %+v", tb)
	}
}

// checkTeamReport checks the budget reports of team demo, whose panes a
// and b are refused with want.
func (r *budgetRig) checkTeamReport(a, b, want string) {
	r.t.Helper()
	tb, err := r.s.spend.Budget("team:demo")
	if err != nil || !tb.Reached || !reflect.DeepEqual(tb.Panes, []string{a, b}) || tb.SpentUSD < 1.09 || *tb.LeftUSD != 0 {
		r.t.Errorf("team budget %+v, %v", tb, err)
	}
	if pb, _ := r.s.spend.Budget(a); pb.Team == nil || pb.Team.Name != "demo" || pb.BudgetUSD != nil || pb.Refusal != want {
		r.t.Errorf("pane budget with its team's: %+v", pb)
	}
}

// A pane's own budget and its team's: the first reached is the one named.
// After a call that cost far more than the budget, the amount suggested
// is double the spend.
func TestPaneBudgetBeforeTeam(t *testing.T) {
	r := newBudgetRig(t)
	a := r.pane("a", "demo", 0.000001)
	r.set("team:demo", usd(100))
	r.spend(a, sonnet, 0.0012)
	want := "cicy: pane " + a + " reached its budget of $0.000001 (spent $0.0012); raise it with: cicy-agent budget " + a + " 0.0025"
	if got := r.s.spend.Refusal(a); got != want {
		t.Errorf("Refusal = %q\nwant      %q", got, want)
	}
}

// A model without a price cannot be held to a budget: its calls are not
// counted, and the report says so.
func TestUnpricedModelIsNamed(t *testing.T) {
	r := newBudgetRig(t)
	a := r.pane("a", "", 0.01)
	r.spend(a, "mystery-1", 50)
	if got := r.s.spend.Refusal(a); got != "" {
		t.Errorf("refused on an unpriced model's calls: %q", got)
	}
	b, err := r.s.spend.Budget(a)
	if err != nil || b.SpentUSD != 0 || !reflect.DeepEqual(b.Unpriced, []string{"mystery-1"}) {
		t.Errorf("budget %+v, %v; want $0 spent and mystery-1 unpriced", b, err)
	}
	r.spend(a, sonnet, 0.02)
	if r.s.spend.Refusal(a) == "" {
		t.Error("the priced calls over the budget are not refused")
	}
}

// Budgets survive a restart of the supervisor, as does the spend.
func TestBudgetsPersist(t *testing.T) {
	r := newBudgetRig(t)
	a := r.pane("a", "demo", 0.5)
	r.set("team:demo", usd(3))
	r.create("team:empty", usd(2))
	r.spend(a, sonnet, 0.6)
	want := r.s.spend.Refusal(a)
	if want == "" {
		t.Fatal("not refused")
	}
	r.s.Close()
	r.start()
	if got := r.s.spend.Refusal(a); got != want {
		t.Errorf("after a restart: %q, want %q", got, want)
	}
	all := r.s.spend.Budgets()
	if len(all) != 3 || all[0].Name != a || all[1].Name != "demo" || all[2].Name != "empty" || *all[2].BudgetUSD != 2 || len(all[2].Panes) != 0 {
		t.Errorf("budgets after a restart: %+v", all)
	}
}

// Mistakes get one sentence each, of the usage or not_found kind.
func TestBudgetErrors(t *testing.T) {
	r := newBudgetRig(t)
	r.pane("a", "", 0)
	ctx := context.Background()
	for _, c := range []struct {
		ref  string
		usd  *float64
		kind string
		msg  string
	}{
		{"w-1", usd(0), api.KindUsage, "a budget must be more than $0 (to remove one, give none)"},
		{"w-1", usd(-2), api.KindUsage, "a budget must be more than $0"},
		{"team:Demo", usd(1), api.KindUsage, `"Demo" is not a team name`},
		{"team:", usd(1), api.KindUsage, `"" is not a team name`},
		{"w-9", usd(1), api.KindNotFound, "no pane w-9"},
		{"nosuch", nil, api.KindNotFound, "no pane nosuch"},
		{"team:demo", usd(1), api.KindNotFound, `no team "demo" (there is none yet: 'cicy-agent up' of a team file named demo starts it); give --create`},
		{"team:demo", nil, api.KindNotFound, `no team "demo" (there is none yet`},
	} {
		_, err := r.s.spend.SetBudget(ctx, c.ref, api.BudgetRequest{BudgetUSD: c.usd})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Kind != c.kind || !strings.HasPrefix(ae.Message, c.msg) || strings.Contains(ae.Message, "\n") {
			t.Errorf("SetBudget(%s, %v) = %v; want %s %q", c.ref, c.usd, err, c.kind, c.msg)
		}
	}
	if _, err := r.s.Create(ctx, api.CreateRequest{Title: "x", Type: "shell", Command: []string{"sh"}, BudgetUSD: -1}); err == nil ||
		err.Error() != "--budget-usd must be more than $0 (leave it out for no budget)" {
		t.Errorf("create with a negative budget: %v", err)
	}
}

// The routes: GET and PUT /api/budgets/{ref}, GET /api/budgets.
func TestBudgetAPI(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	p, err := c.Create(ctx, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"sh"}, BudgetUSD: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	if pi, _ := c.Get(ctx, p.ID); pi.BudgetUSD == nil || *pi.BudgetUSD != 0.25 || pi.OverBudget != "" {
		t.Errorf("created with a budget: budget_usd %v, over_budget %q", pi.BudgetUSD, pi.OverBudget)
	}
	checkBudgetRoutes(t, c, p.ID)
	checkBudgetRouteErrors(t, c, p.ID)
}

func checkBudgetRoutes(t *testing.T, c *api.Client, id string) {
	ctx := context.Background()
	b, err := c.Budget(ctx, "sh")
	if err != nil || b.Scope != "pane" || b.Name != id || b.Title != "sh" || *b.BudgetUSD != 0.25 || *b.LeftUSD != 0.25 || b.Team != nil {
		t.Errorf("GET by title: %+v, %v", b, err)
	}
	if b, err = c.SetBudget(ctx, "team:demo", api.BudgetRequest{BudgetUSD: usd(5), Create: true}); err != nil || b.Scope != "team" || *b.BudgetUSD != 5 {
		t.Errorf("PUT team: %+v, %v", b, err)
	}
	if b, err = c.SetBudget(ctx, id, api.BudgetRequest{BudgetUSD: usd(2)}); err != nil || *b.BudgetUSD != 2 {
		t.Errorf("PUT pane: %+v, %v", b, err)
	}
	all, err := c.Budgets(ctx)
	if err != nil || len(all) != 2 || all[0].Name != id || all[1].Name != "demo" {
		t.Errorf("GET all: %+v, %v", all, err)
	}
	if b, err = c.SetBudget(ctx, id, api.BudgetRequest{}); err != nil || b.BudgetUSD != nil || b.LeftUSD != nil {
		t.Errorf("PUT null: %+v, %v", b, err)
	}
}

func checkBudgetRouteErrors(t *testing.T, c *api.Client, id string) {
	ctx := context.Background()
	if _, err := c.SetBudget(ctx, id, api.BudgetRequest{BudgetUSD: usd(0)}); err == nil || err.Error() != "a budget must be more than $0 (to remove one, give none)" {
		t.Errorf("PUT 0: %v", err)
	}
	if code, body := rawRequest(t, c, "PUT", "/api/budgets/"+id, "application/json", `{"usd": 1}`); code != 400 || !strings.Contains(body, "unknown field") {
		t.Errorf("PUT with a wrong field: %d %s", code, body)
	}
	if code, _ := rawRequest(t, c, "GET", "/api/budgets/w-99", "", ""); code != 404 {
		t.Errorf("GET a missing pane: %d", code)
	}
	if code, body := rawRequest(t, c, "PUT", "/api/budgets/team:qa", "application/json", `{"budget_usd": 1}`); code != 404 || !strings.Contains(body, `no team \"qa\" (the teams are demo)`) {
		t.Errorf("PUT an unknown team: %d %s", code, body)
	}
}

// A CLI pane's main-loop request refused by the gateway ends its turn as
// failed with the sentence; the agent's plain end signal after it (an
// idle with an earlier answer) does not make it a success, and its next
// turn counts again.
func TestRefusedEndsTheTurn(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\nexec sleep 100000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := newBudgetRig(t)
	ctx := context.Background()
	p, err := r.s.Create(ctx, api.CreateRequest{Title: "c", Type: "claude", Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	sh := r.pane("sh", "", 0)
	e, _ := r.s.get(p.ID)
	start := time.Now()
	hook := func(event, payload string) {
		t.Helper()
		if _, err := r.s.Hook(ctx, p.ID, api.HookRequest{Event: event, Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	hook("UserPromptSubmit", `{}`)
	r.s.Refused(p.ID, "cicy: pane "+p.ID+" reached its budget")
	r.s.Refused(sh, "not an agent: nothing to end")
	hook("Stop", `{"last_assistant_message": "an earlier answer"}`)
	want := "the gateway refused the agent's model request: cicy: pane " + p.ID + " reached its budget"
	if end, ok := e.hooks.TurnEnd(start); !ok || end.Failed != want || end.Result != "" {
		t.Errorf("turn end: %q, %q, %v; want failed %q", end.Result, end.Failed, ok, want)
	}
	next := time.Now()
	hook("UserPromptSubmit", `{}`)
	hook("Stop", `{"last_assistant_message": "done"}`)
	if end, ok := e.hooks.TurnEnd(next); !ok || end.Failed != "" || end.Result != "done" {
		t.Errorf("the next turn: %q, %q, %v; want done", end.Result, end.Failed, ok)
	}
}

// TestBudgetUnderConcurrency: 50 model requests at once from a pane with
// a budget: each holds its worst cost while in flight, so the spend
// passes the budget by at most one request's — not by the 49 others that
// all saw the budget not reached yet (all 50 used to go through).
func TestBudgetUnderConcurrency(t *testing.T) {
	r := budgetRush(t, 50, sonnetRush)
	if r.spent > r.budget+r.worst || r.ok == 0 || r.refused == 0 {
		t.Fatalf("spent $%.4f of $%.2f (one request at most $%.4f): %d answered, %d refused", r.spent, r.budget, r.worst, r.ok, r.refused)
	}
}

// TestBudgetUnpricedAlias: 50 requests at once for a model the price
// table does not know (an alias), each answered as a dear one. The
// ledger bills the model of the answer, so each request holds what the
// dearest model of its upstream could cost: the spend passes the budget
// by at most one request's (all 50 used to pass, holding nothing: $0.78
// spent against $0.03).
func TestBudgetUnpricedAlias(t *testing.T) {
	r := budgetRush(t, 50, rushCase{model: "claude-best", answeredAs: "claude-opus-4-1", out: 200, budget: 0.03})
	opus := 200 * 75 / 1e6 // what each answer costs
	if r.spent > r.budget+r.worst || r.ok == 0 || r.refused == 0 || r.worst < opus {
		t.Fatalf("spent $%.4f of $%.2f (one request at most $%.4f, each answer $%.4f): %d answered, %d refused",
			r.spent, r.budget, r.worst, opus, r.ok, r.refused)
	}
}

// rushCase is what budgetRush asks for: the model requested, the one the
// upstream answers as, the output tokens allowed (all of them spent),
// the budget.
type rushCase struct {
	model, answeredAs string
	out               int
	budget            float64
}

// sonnetRush asks for claude-sonnet-4-5 and is answered as it, up to
// 1,000 output tokens, under a $0.05 budget.
var sonnetRush = rushCase{model: sonnet, answeredAs: sonnet, out: 1000, budget: 0.05}

// rush is what budgetRush saw.
type rush struct {
	spent, budget, worst float64
	ok, refused          int64
}

// budgetRush sends n model requests at once (each 200 ms upstream) from
// a pane with a budget.
func budgetRush(t testing.TB, n int, c rushCase) rush {
	r := newTruthRig(t)
	r.up.hold = 200 * time.Millisecond
	r.up.then(cannedAnswer{200, fmt.Sprintf(`{"id":"m","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":%d}}`, c.answeredAs, c.out)})
	budget := c.budget
	if _, err := r.s.spend.SetBudget(context.Background(), r.id, api.BudgetRequest{BudgetUSD: &budget}); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"go"}]}`, c.model, c.out)
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, r.s.GatewayURL()+"/v1/messages", strings.NewReader(body))
			req.Header.Set("x-api-key", r.token)
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusPaymentRequired:
				refused.Add(1)
			default:
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	b, err := r.s.spend.Budget(r.id)
	if err != nil {
		t.Fatal(err)
	}
	spent := b.SpentUSD
	worst, _ := r.s.spend.WorstCase(gateway.Ask{API: gateway.Anthropic, Model: c.model, BodyBytes: len(body), MaxTokens: c.out, Choices: 1})
	return rush{spent: spent, budget: budget, worst: worst, ok: ok.Load(), refused: refused.Load()}
}

// BenchmarkBudgetRush: TestBudgetUnderConcurrency's 50 requests at once,
// reported: how far the spend passed the budget beyond one request's
// worst cost (overspend, the target 0), the spend against the budget.
func BenchmarkBudgetRush(b *testing.B) {
	var worst rush
	over := 0.0
	for b.Loop() {
		r := budgetRush(b, 50, sonnetRush)
		if o := max(0, r.spent-r.budget-r.worst); o >= over {
			over, worst = o, r
		}
	}
	b.ReportMetric(over, "overspend-usd")
	b.ReportMetric(worst.spent, "spent-usd")
	b.ReportMetric(worst.budget, "budget-usd")
	b.ReportMetric(float64(worst.ok), "answered")
	b.ReportMetric(float64(worst.refused), "refused")
}

// sonnetAsk is a request of 100 bytes for claude-sonnet-4-5 allowing 1,000
// output tokens: at most $0.01515.
var sonnetAsk = gateway.Ask{API: gateway.Anthropic, Model: sonnet, BodyBytes: 100, MaxTokens: 1000, Choices: 1}

// The ledger bills the model an answer names: once a request for a
// priced model was answered, and billed, as a dearer one, a request for
// it holds the dearer price (a router or an alias the upstream resolves
// bills what it chose, not what was asked for).
func TestBudgetHoldsWhatAnswersWereBilledAs(t *testing.T) {
	r := newBudgetRig(t)
	a := r.pane("a", "", 1)
	haiku := gateway.Ask{API: gateway.Anthropic, Model: "claude-haiku-4-5", BodyBytes: 2000, MaxTokens: 1000, Choices: 1}
	before, _ := r.s.spend.WorstCase(haiku)
	if want := (1001*1.25 + 1000*5) / 1e6; before != want {
		t.Fatalf("claude-haiku-4-5 held at $%.6f before any answer; want $%.6f", before, want)
	}
	ledger := gatewayLedger{r.s}
	for _, c := range []gateway.Call{
		{Pane: a, API: gateway.Anthropic, Asked: "claude-haiku-4-5", Model: "claude-haiku-4-5-20251001", Status: 200, OutputTokens: 10},
		{Pane: a, API: gateway.Anthropic, Asked: "claude-haiku-4-5", Model: "claude-opus-4-1", Status: 200, OutputTokens: 10},
		{Pane: a, API: gateway.Anthropic, Asked: "claude-haiku-4-5", Model: "mystery-2", Status: 200, OutputTokens: 10},
	} {
		if err := ledger.Record(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := r.s.spend.WorstCase(haiku); after != (1001*18.75+1000*75)/1e6 {
		t.Errorf("claude-haiku-4-5 held at $%.6f after an answer billed as claude-opus-4-1; want its price", after)
	}
	sonnetAfter, _ := r.s.spend.WorstCase(sonnetAsk)
	if want := (51*3.75 + 1000*15) / 1e6; sonnetAfter != want {
		t.Errorf("claude-sonnet-4-5 held at $%.6f; want its own price $%.6f", sonnetAfter, want)
	}
}
