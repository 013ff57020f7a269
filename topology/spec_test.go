package topology

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/panetype"
)

// The CLI agents' registry (package cliagent, which imports this one)
// registers their types; the tests here stand in for it, with the types
// the team files of the tests name.
func init() {
	for name, guidance := range map[string]string{"opencode": "", "claude": "CLAUDE.md", "codex": "", "qwen": "QWEN.md", "pi": "", "gemini": "GEMINI.md"} {
		panetype.Register(name, guidance)
	}
}

func TestPaneSpecRules(t *testing.T) {
	if got, want := PaneTypeChoices(), "cicy, "+strings.Join(panetype.Agents(), ", ")+" or shell"; got != want {
		t.Errorf("PaneTypeChoices = %q, want %q", got, want)
	}
	if r := PaneRole(""); r != RoleWorker {
		t.Errorf(`PaneRole("") = %q`, r)
	}
	for s, want := range map[string]bool{"engineer": true, "a-b_1": true, "Eng": false, "../etc": false, "-x": false, "": false, strings.Repeat("a", 64): true, strings.Repeat("a", 65): false} {
		if ValidSlug(s) != want {
			t.Errorf("ValidSlug(%q) = %v", s, !want)
		}
	}
	for _, tc := range []struct {
		v    string
		max  int
		want string
	}{
		{"plain", 10, ""},
		{"x\ty", 10, "control character"},
		{"toolong", 3, "is too long (7 bytes, at most 3)"},
		{"a\xffb", 10, "not valid UTF-8"},
	} {
		err := CheckText(tc.v, tc.max)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckText(%q, %d) = %v; want %q", tc.v, tc.max, err, tc.want)
		}
	}
	for _, tc := range []struct {
		typ, role, master string
		cmd, env          []string
		want              error
	}{
		{"cicy", RoleWorker, "", nil, nil, nil},
		{"shell", RoleWorker, "lead", []string{"bash"}, []string{"FOO"}, nil},
		{"cicy", RoleMaster, "lead", nil, nil, ErrMasterOfMaster},
		{"cicy", RoleWorker, "", []string{"bash"}, nil, ErrCicyCommand},
		{"cicy", RoleWorker, "", nil, []string{"FOO"}, ErrCicyEnv},
		{"shell", RoleWorker, "", nil, nil, ErrShellCommand},
		{"shell", RoleWorker, "", []string{""}, nil, ErrShellCommand},
		{"claude", RoleWorker, "", nil, nil, nil},
	} {
		if err := CheckLinks(tc.typ, tc.role, tc.master, tc.cmd, tc.env); !errors.Is(err, tc.want) {
			t.Errorf("CheckLinks(%+v) = %v; want %v", tc, err, tc.want)
		}
	}
}

func TestCheckBudget(t *testing.T) {
	for usd, want := range map[float64]string{
		0.000001: "", 0.5: "", MaxBudgetUSD: "",
		0: "must be more than $0", -1: "must be more than $0", math.NaN(): "must be more than $0", math.Inf(-1): "must be more than $0",
		MaxBudgetUSD + 1: "is more than $1000000; is a decimal point missing?", math.Inf(1): "is more than $1000000",
	} {
		err := CheckBudget(usd)
		if (err == nil) != (want == "") || (err != nil && !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("CheckBudget(%v) = %v, want %q", usd, err, want)
		}
	}
}

func TestCheckTitle(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"alice", "w-team", "w3", "ww-3", "Ünïcode ✓", "مرحبا", "👨 team"} {
		if err := CheckTitle(ok); err != nil {
			t.Errorf("CheckTitle(%q) = %v", ok, err)
		}
	}
	for _, c := range []struct{ title, want string }{
		{"bad\x1b[31m", "control character"},
		{"bad\u009b", "control character"},
		{"bad\xff", "not valid UTF-8"},
		{"evil\u202Egnp.exe", "bidirectional control (U+202E)"},
		{"a\u2066b", "bidirectional control (U+2066)"},
		{"a\u2069b", "bidirectional control"},
		{"a\u202Ab", "bidirectional control"},
		{"one\u2028two", "line separator (U+2028)"},
		{"one\u2029two", "line separator (U+2029)"},
		{"ali\u200Bce", "invisible character (U+200B)"},
		{"ali\u200Dce", "invisible character (U+200D)"},
		{"ali\u200Fce", "invisible character (U+200F)"},
		{"ali\u2060ce", "invisible character (U+2060)"},
		{"\uFEFFalice", "invisible character (U+FEFF)"},
		{"w-3", "pane id"},
		{"w-03", "pane id"},
		{"w-3:main.0", "pane id"},
	} {
		err := CheckTitle(c.title)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckTitle(%q) = %v, want %q", c.title, err, c.want)
		}
	}
}
