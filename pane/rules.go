package pane

import (
	"fmt"
	"regexp"
	"strings"
)

// Rule is one screen rule: when Match (a Go regular expression) matches a
// line among the last Last non-blank lines of a screen (all lines when
// Last is 0), the pane is in State. Screen rules are the fallback of CLI
// agent panes, used when the agent's own hooks have not spoken recently
// (see docs/hooks.md); users override them in lite-config.json ("screenRules").
type Rule struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	Match string `json:"match"`
	Last  int    `json:"last,omitempty"`

	re *regexp.Regexp
}

// Rules is an ordered rule table: the first rule that matches decides.
type Rules []Rule

// Compile checks and prepares every rule.
func (rs Rules) Compile() (Rules, error) {
	out := make(Rules, len(rs))
	for i, r := range rs {
		switch r.State {
		case Busy, Idle, Waiting:
		default:
			return nil, fmt.Errorf("screen rule %q: state %q is not busy, idle or waiting", r.Name, r.State)
		}
		if r.Name == "" {
			return nil, fmt.Errorf("screen rule %d has no name", i+1)
		}
		re, err := regexp.Compile(r.Match)
		if err != nil {
			return nil, fmt.Errorf("screen rule %q: match %q: %w", r.Name, r.Match, err)
		}
		if r.Match == "" {
			return nil, fmt.Errorf("screen rule %q has an empty match", r.Name)
		}
		if r.Last < 0 {
			return nil, fmt.Errorf("screen rule %q: last must be 0 (whole screen) or more", r.Name)
		}
		r.re = re
		out[i] = r
	}
	return out, nil
}

// Verdict is what a rule table says of a screen.
type Verdict struct {
	State State
	Rule  Rule
	Line  string // the line that matched
}

// Classify returns the verdict of the first matching rule; ok is false
// when no rule matches (the pane then keeps its state). Rules must come
// from Compile.
func (rs Rules) Classify(screen string) (v Verdict, ok bool) {
	lines := nonBlankLines(screen)
	for _, r := range rs {
		from := 0
		if r.Last > 0 && len(lines) > r.Last {
			from = len(lines) - r.Last
		}
		for _, l := range lines[from:] {
			if r.re.MatchString(l) {
				return Verdict{State: r.State, Rule: r, Line: l}, true
			}
		}
	}
	return Verdict{}, false
}

func nonBlankLines(screen string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return out
}

// Describe is a rule as people read it in `explain`.
func (r Rule) Describe() string {
	where := "anywhere on the screen"
	if r.Last > 0 {
		where = fmt.Sprintf("in the last %d non-blank lines", r.Last)
	}
	return fmt.Sprintf("%s → %s: /%s/ %s", r.Name, r.State, r.Match, where)
}

// DefaultRules are the built-in screen rules per agent type, from the
// screens of Claude Code 2.1, Codex 0.171 and opencode 1.18 (tested
// against testdata/screens). Order matters: a permission dialog is drawn
// over a busy footer, so waiting comes first; a busy footer beats the
// idle hints that stay on screen.
var DefaultRules = map[string]Rules{
	"claude": {
		{Name: "claude-permission", State: Waiting, Match: `Do you want to (proceed|make this edit|create)|Esc to cancel · Tab to amend|❯ 1\. Yes`, Last: 14},
		{Name: "claude-trust-dialog", State: Waiting, Match: `Yes, I trust this folder|Do you want to use this API key|Yes, I accept`, Last: 20},
		{Name: "claude-busy-footer", State: Busy, Match: `esc to interrupt`, Last: 6},
		{Name: "claude-retrying", State: Busy, Match: `retrying in \d+s · attempt \d+`, Last: 10},
		{Name: "claude-idle-footer", State: Idle, Match: `\? for shortcuts|⏵⏵ |⏸ |shift\+tab to cycle`, Last: 6},
		{Name: "claude-idle-prompt", State: Idle, Match: `^\s*❯\s*$|^│ >\s*│?$`, Last: 8},
	},
	"codex": {
		{Name: "codex-approval", State: Waiting, Match: `Would you like to (run the following command|make the following edits)|Press enter to confirm or esc to cancel`, Last: 20},
		{Name: "codex-dialog", State: Waiting, Match: `Trust this folder|Hooks need review|Try new model`, Last: 20},
		{Name: "codex-busy", State: Busy, Match: `esc to interrupt`, Last: 8},
		{Name: "codex-idle-hints", State: Idle, Match: `\? for shortcuts|› Ask Codex to do anything|context left`, Last: 6},
	},
	"opencode": {
		{Name: "opencode-permission", State: Waiting, Match: `Permission required|Allow once\s+Allow always\s+Reject`, Last: 20},
		{Name: "opencode-busy", State: Busy, Match: `esc interrupt`, Last: 6},
		{Name: "opencode-idle-footer", State: Idle, Match: `ctrl\+p( commands)?`, Last: 6},
	},
}

// RulesFor is the compiled rule table of an agent type: the overrides
// first (they win), then the built-in rules.
func RulesFor(agentType string, overrides Rules) (Rules, error) {
	all := append(append(Rules{}, overrides...), DefaultRules[agentType]...)
	return all.Compile()
}
