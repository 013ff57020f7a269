package pane

import (
	"fmt"
	"slices"
	"strings"
)

// Part names a part of an agent's screen layout.
type Part string

// The parts of an agent's layout. Only the transcript carries what the
// agent and its user wrote; the other parts are the agent's own UI.
const (
	PartTranscript Part = "transcript" // the conversation, scrolling up
	PartStatus     Part = "status"     // the spinner or status line above the composer
	PartComposer   Part = "composer"   // the input box, with any draft in it
	PartFooter     Part = "footer"     // the hints below the composer
	PartDialog     Part = "dialog"     // a modal dialog or question replacing or covering the composer
	PartMenu       Part = "menu"       // a menu, help panel or palette the user opened over the agent
)

// Parts are the valid part names.
var Parts = []Part{PartTranscript, PartStatus, PartComposer, PartFooter, PartDialog, PartMenu}

// Span is one part found on a screen: its lines From to To-1 (counted
// from 0).
type Span struct {
	Part     Part
	From, To int
}

// Parser finds the parts of an agent's layout among a screen's lines
// (trailing spaces trimmed). It returns the spans it found, in any
// order; a part it does not find is absent.
type Parser func(lines []string) []Span

// Layout is a screen cut into the parts of an agent's layout.
type Layout struct {
	Lines []string
	Spans []Span
}

// NewLayout cuts screen into lines and finds its parts with parse (none
// when parse is nil).
func NewLayout(screen string, parse Parser) Layout {
	screen = strings.TrimRight(screen, "\n")
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \r")
	}
	l := Layout{Lines: lines}
	if parse != nil {
		l.Spans = parse(lines)
	}
	return l
}

// Find is the span of part p; ok is false when the screen does not show
// it.
func (l Layout) Find(p Part) (s Span, ok bool) {
	for _, s := range l.Spans {
		if s.Part == p {
			return s, true
		}
	}
	return Span{}, false
}

// Found is the spans found, in screen order (from the top).
func (l Layout) Found() []Span {
	var out []Span
	for _, p := range Parts {
		if s, ok := l.Find(p); ok {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Span) int { return a.From - b.From })
	return out
}

// Describe lists the parts found, in screen order, with their lines
// counted from 1 ("composer 21-23").
func (l Layout) Describe() []string {
	var out []string
	for _, s := range l.Found() {
		out = append(out, fmt.Sprintf("%s %d-%d", s.Part, s.From+1, s.To))
	}
	return out
}

// Blank reports whether a line holds nothing but spaces.
func Blank(line string) bool { return strings.TrimSpace(line) == "" }

// LastNonBlank is the index of the last non-blank line at or above
// from, or -1.
func LastNonBlank(lines []string, from int) int {
	for i := min(from, len(lines)-1); i >= 0; i-- {
		if !Blank(lines[i]) {
			return i
		}
	}
	return -1
}
