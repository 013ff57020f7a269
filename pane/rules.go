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
