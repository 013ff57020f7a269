package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cicy-ai/cicy-agent/topology"
)

// The scopes of a budget.
const (
	BudgetPane = "pane"
	BudgetTeam = "team"
)

// TeamRef is how a team is named where a pane could be: "team:NAME".
const TeamRef = "team:"

// Budget is a pane's or a team's spending limit and how it stands: what
// `budget <pane|team:NAME> --json` prints.
type Budget struct {
	// Scope is pane or team; Name is the pane's id or the team's name.
	Scope string `json:"scope"`
	Name  string `json:"name"`
	// Title is a pane's title.
	Title string `json:"title,omitempty"`
	// BudgetUSD is the limit; null when none is set.
	BudgetUSD *float64 `json:"budget_usd"`
	// SpentUSD is what the calls cost at the price table: a pane's, or the
	// sum of the team's live panes'. Calls of a model without a price are
	// not in it (see Unpriced).
	SpentUSD float64 `json:"spent_usd"`
	// LeftUSD is the budget less the spend, never below 0; null without a
	// budget.
	LeftUSD *float64 `json:"left_usd"`
	// Reached: the spend has reached the budget, so the model requests of
	// the pane (of every pane of the team) are refused.
	Reached bool `json:"reached"`
	// Unpriced are the models whose calls have no price: a budget cannot
	// hold their spend.
	Unpriced []string `json:"unpriced"`
	// Panes are a team's live panes, by id.
	Panes []string `json:"panes,omitempty"`
	// Team is a pane's team's budget, when the pane belongs to a team.
	Team *Budget `json:"team,omitempty"`
	// Refusal is, for a pane, the sentence its model requests are refused
	// with now (its own budget or its team's reached); "" when none.
	Refusal string `json:"refusal,omitempty"`
}

// BudgetRequest sets a budget (PUT /api/budgets/{ref}); a null
// budget_usd removes it.
type BudgetRequest struct {
	BudgetUSD *float64 `json:"budget_usd"`
	// Create sets a team's budget though the team is not known yet (no
	// pane of it, no budget of it): without it, a team name is refused
	// unless known, so that a mistyped one is not a new team.
	Create bool `json:"create,omitempty"`
}

// TeamName returns the team a budget reference names ("team:NAME"), or
// false when it names a pane.
func TeamName(ref string) (string, bool) {
	name, ok := strings.CutPrefix(ref, TeamRef)
	return name, ok
}

// CheckTeamName refuses a name that cannot be a team's.
func CheckTeamName(name string) error {
	if !topology.ValidSlug(name) {
		return &Error{Kind: KindUsage, Message: fmt.Sprintf("%q is not a team name (lowercase letters, digits, - and _, starting with a letter or digit, as a team file's name:)", name)}
	}
	return nil
}

// ParseBudget reads an amount of US dollars as the budget command takes
// it: "1.50" or "$1.50", or "none" (nil: remove the budget).
func ParseBudget(s string) (*float64, error) {
	if strings.EqualFold(s, "none") {
		return nil, nil
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
	if err != nil {
		return nil, &Error{Kind: KindUsage, Message: fmt.Sprintf("%q is not an amount of dollars; give one like 1.50, or none to remove the budget", s)}
	}
	if err := CheckBudget(v); err != nil {
		return nil, err
	}
	return &v, nil
}

// CheckBudget refuses an amount that cannot be a budget, saying how to
// remove one instead of setting it to 0.
func CheckBudget(usd float64) error {
	if err := topology.CheckBudget(usd); err != nil {
		return &Error{Kind: KindUsage, Message: fmt.Sprintf("a budget %v (to remove one, give none)", err)}
	}
	return nil
}

// USD is an amount for people: "$0.50", or "$0.0000012" below a cent.
func USD(v float64) string { return "$" + Amount(v) }

// Amount is an amount of dollars as the budget command takes it: two
// decimals, or two significant digits below a cent.
func Amount(v float64) string {
	d := decimals(v)
	s := strconv.FormatFloat(v, 'f', d, 64)
	if d > 2 {
		s = strings.TrimRight(s, "0")
	}
	return s
}

// RoundUp is v rounded up to what Amount shows, so that an amount
// suggested as above v is shown above it.
func RoundUp(v float64) float64 {
	p := math.Pow10(decimals(v))
	return math.Ceil(v*p-1e-9) / p
}

// decimals is how many decimals Amount shows of v.
func decimals(v float64) int {
	if v >= 0.01 || v <= 0 {
		return 2
	}
	return 1 - int(math.Floor(math.Log10(v)))
}
