package pane

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Rule is one screen rule: when Match (a Go regular expression) matches a
// line of Part of a screen's layout (see Layout), among its last Last
// non-blank lines (all of them when Last is 0), the pane is in State. A
// rule without a part looks at the last Last non-blank lines of the whole
// screen, transcript included, so that text the agent or its user wrote
// can set it off. Screen rules are the fallback of CLI agent panes, used
// when the agent's own hooks have not spoken recently (see docs/hooks.md);
// users override them in lite-config.json ("screenRules").
type Rule struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	Part  Part   `json:"part,omitempty"`
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
		if r.Part != "" && !slices.Contains(Parts, r.Part) {
			return nil, fmt.Errorf("screen rule %q: part %q is not one of %s", r.Name, r.Part, partNames())
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
	State  State
	Rule   Rule
	Part   Part   // the part the rule looked at ("" for the whole screen)
	Line   string // the line that matched
	LineNo int    // its number on the screen, from 1
}

// Classify returns the verdict of the first rule that matches the
// screen's layout; ok is false when no rule matches (the pane then keeps
// its state). A rule whose part the screen does not show does not match.
// Rules must come from Compile.
func (rs Rules) Classify(l Layout) (v Verdict, ok bool) {
	for _, r := range rs {
		from, to := 0, len(l.Lines)
		if r.Part != "" {
			s, found := l.Find(r.Part)
			if !found {
				continue
			}
			from, to = s.From, s.To
		}
		if r.Last > 0 {
			from = lastLinesStart(l.Lines, from, to, r.Last)
		}
		for i := from; i < to; i++ {
			line := l.Lines[i]
			if !Blank(line) && r.re.MatchString(line) {
				return Verdict{State: r.State, Rule: r, Part: r.Part, Line: line, LineNo: i + 1}, true
			}
		}
	}
	return Verdict{}, false
}

// lastLinesStart is where the last n non-blank lines of lines[from:to]
// start.
func lastLinesStart(lines []string, from, to, n int) int {
	for i := to - 1; i >= from; i-- {
		if !Blank(lines[i]) {
			n--
			if n == 0 {
				return i
			}
		}
	}
	return from
}

func partNames() string {
	names := make([]string, len(Parts))
	for i, p := range Parts {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// Describe is a rule as people read it in `explain`.
func (r Rule) Describe() string {
	where := "anywhere on the screen"
	if r.Last > 0 {
		where = fmt.Sprintf("in the last %d non-blank lines", r.Last)
	}
	if r.Part != "" {
		where = "in the " + string(r.Part)
		if r.Last > 0 {
			where = fmt.Sprintf("in the last %d non-blank lines of the %s", r.Last, r.Part)
		}
	}
	return fmt.Sprintf("%s → %s: /%s/ %s", r.Name, r.State, r.Match, where)
}

// SeesTranscript reports whether the rule may match text of the
// transcript (it names no part, or the transcript itself): whatever the
// agent or its user wrote can then set it off.
func (r Rule) SeesTranscript() bool { return r.Part == "" || r.Part == PartTranscript }
