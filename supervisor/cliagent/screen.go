package cliagent

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/pane"
)

// Layout is the screen parser of a pane type (nil for a type that is not
// a CLI agent): it finds the parts of the agent's layout that its screen
// rules look at.
func Layout(typ string) pane.Parser {
	if k, ok := Lookup(typ); ok {
		return k.Layout()
	}
	return nil
}

// Layout is the agent's screen parser.
func (k Kind) Layout() pane.Parser { return k.layout }

// The helpers below read the shapes the agents draw with; each agent's
// parser sits beside its rules.

// isRule reports whether a line is a horizontal rule drawn with r (at
// least 10 of them and nothing else but spaces).
func isRule(line string, r rune) bool {
	n := 0
	for _, c := range line {
		switch c {
		case r:
			n++
		case ' ':
		default:
			return false
		}
	}
	return n >= 10
}

// indent is the number of spaces a line starts with.
func indent(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// startsWithGlyph reports whether a line starts, at column 0, with the
// rune g followed by a space (Claude Code draws a no-break space) or the
// end of the line.
func startsWithGlyph(line string, g rune) bool {
	r, n := utf8.DecodeRuneInString(line)
	if r != g {
		return false
	}
	next, _ := utf8.DecodeRuneInString(line[n:])
	return len(line) == n || unicode.IsSpace(next)
}

// blockAbove is the first line of the run of non-blank lines ending at
// end.
func blockAbove(lines []string, end int) int {
	i := end
	for i > 0 && !pane.Blank(lines[i-1]) {
		i--
	}
	return i
}

// lastLine is one past the last non-blank line.
func lastLine(lines []string) int { return pane.LastNonBlank(lines, len(lines)-1) + 1 }

// spans builds the layout's spans, leaving out empty ones; the transcript
// is everything above top.
func spans(top int, rest ...pane.Span) []pane.Span {
	out := make([]pane.Span, 0, len(rest)+1)
	if top > 0 {
		out = append(out, pane.Span{Part: pane.PartTranscript, From: 0, To: top})
	}
	for _, s := range rest {
		if s.To > s.From {
			out = append(out, s)
		}
	}
	return out
}

// isWordGlyph reports whether r is a letter or digit.
func isWordGlyph(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// escCloses reports whether the dialog lines[from:end] is a panel a
// person opened (a model picker): its key hints, in its last lines, offer
// "Esc to close", where a question or a confirmation offers to cancel.
func escCloses(lines []string, from, end int) bool {
	for i := max(from, end-5); i < end; i++ {
		if strings.Contains(lines[i], "Esc to close") {
			return true
		}
	}
	return false
}
