package api

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// The groupings of a usage report.
const (
	UsageByPane  = "pane"
	UsageByModel = "model"
	UsageByDay   = "day"
)

// UsageQuery is what `GET /api/usage` reports on; each field may be empty.
type UsageQuery struct {
	// Pane is a pane id (a removed pane's too) or a live pane's title.
	Pane string
	// Since is a duration back from now, a UTC date or an RFC 3339 time
	// (see ParseSince).
	Since string
	// By is pane (the default), model or day (UTC).
	By string
}

// UsageSums is the summed usage of a set of model calls.
type UsageSums struct {
	// Calls counts every model call, AuxCalls the side calls (compact,
	// memory, a CLI's title generation, token counting…) among them.
	Calls    int64 `json:"calls"`
	AuxCalls int64 `json:"aux_calls"`
	// Usage is the tokens of every call, aux ones included.
	Usage
	// AuxTokens is the tokens (input of all kinds and output) of the aux
	// calls.
	AuxTokens int64 `json:"aux_tokens"`
	// CacheHit is cache-read input tokens over all input tokens (-1: no
	// input).
	CacheHit float64 `json:"cache_hit"`
	// CostUSD is what the calls cost at the price table; null when a
	// model's price is unknown.
	CostUSD *float64 `json:"cost_usd"`
}

// UsageGroup is the usage of one pane, model or day.
type UsageGroup struct {
	// Key is the pane id, the model or the UTC date (2026-12-01).
	Key string `json:"key"`
	// Title is the pane's title, by pane and while the pane exists.
	Title string `json:"title,omitempty"`
	// Models are the models the calls used.
	Models []string `json:"models"`
	UsageSums
}

// UsageReport is the answer of `GET /api/usage`: the groups in order
// (panes by number, models by name, days by date) and their total.
type UsageReport struct {
	By     string       `json:"by"`
	Pane   string       `json:"pane,omitempty"`
	Since  *time.Time   `json:"since,omitempty"`
	Groups []UsageGroup `json:"groups"`
	Total  UsageSums    `json:"total"`
	// Unpriced are the models with no price in the table.
	Unpriced []string `json:"unpriced"`
}

// CheckUsageBy accepts pane, model and day, and "" for pane.
func CheckUsageBy(by string) (string, error) {
	switch by {
	case "":
		return UsageByPane, nil
	case UsageByPane, UsageByModel, UsageByDay:
		return by, nil
	}
	return "", &Error{Kind: KindUsage, Message: fmt.Sprintf("--by %q: group by pane, model or day", by)}
}

var sinceDaysRe = regexp.MustCompile(`^([1-9][0-9]{0,4})([dw])$`)

// ParseSince reads when a usage report starts: a duration back from now
// (90m, 2h, 7d, 2w), a date (2026-12-01, from 00:00 UTC) or an RFC 3339
// time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if m := sinceDaysRe.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		if m[2] == "w" {
			n *= 7
		}
		return now.AddDate(0, 0, -n), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, &Error{Kind: KindUsage, Message: fmt.Sprintf(
		"--since %q: give a duration back from now (90m, 2h, 7d, 2w) or a date (2026-12-01)", s)}
}
