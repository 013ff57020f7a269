package api

import (
	"strings"
	"testing"
)

func TestParseBudget(t *testing.T) {
	for in, want := range map[string]float64{"1.50": 1.5, "$2": 2, " 0.000001": 0.000001, "1e-3": 0.001} {
		got, err := ParseBudget(in)
		if err != nil || got == nil || *got != want {
			t.Errorf("ParseBudget(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"none", "None"} {
		if got, err := ParseBudget(in); got != nil || err != nil {
			t.Errorf("ParseBudget(%q) = %v, %v; want nil: no budget", in, got, err)
		}
	}
	for in, want := range map[string]string{
		"0":       "a budget must be more than $0 (to remove one, give none)",
		"-1":      "a budget must be more than $0 (to remove one, give none)",
		"NaN":     "a budget must be more than $0",
		"2000000": "a budget is more than $1000000; is a decimal point missing? (to remove one, give none)",
		"1,50":    `"1,50" is not an amount of dollars; give one like 1.50, or none to remove the budget`,
		"":        `"" is not an amount of dollars`,
	} {
		_, err := ParseBudget(in)
		if e, ok := err.(*Error); !ok || e.Kind != KindUsage || !strings.HasPrefix(e.Message, want) {
			t.Errorf("ParseBudget(%q) = %v; want a usage error %q", in, err, want)
		}
	}
}

func TestAmounts(t *testing.T) {
	for v, want := range map[float64]string{0: "0.00", 0.5: "0.50", 0.514: "0.51", 12: "12.00", 0.01: "0.01",
		0.000001: "0.000001", 0.0000123: "0.000012", 0.0012345: "0.0012", 0.00999: "0.01"} {
		if got := Amount(v); got != want {
			t.Errorf("Amount(%v) = %q, want %q", v, got, want)
		}
	}
	if USD(0.5) != "$0.50" {
		t.Errorf("USD(0.5) = %q", USD(0.5))
	}
	for v, want := range map[float64]float64{1: 1, 1.001: 1.01, 0.51: 0.51, 0.0012001: 0.0013, 0.000002: 0.000002} {
		if got := RoundUp(v); got != want {
			t.Errorf("RoundUp(%v) = %v, want %v", v, got, want)
		}
	}
	if n, ok := TeamName("team:demo"); !ok || n != "demo" {
		t.Errorf("TeamName(team:demo) = %q, %v", n, ok)
	}
	if _, ok := TeamName("w-3"); ok {
		t.Error("w-3 names a team")
	}
	if CheckTeamName("demo") != nil || CheckTeamName("Demo") == nil || CheckTeamName("") == nil {
		t.Error("CheckTeamName does not follow the team file's rule")
	}
}
