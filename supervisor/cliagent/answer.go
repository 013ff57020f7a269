package cliagent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// Answering a pane's dialog: which keys approve, deny or pick option N
// of each CLI agent's dialogs (key names as `cicy-agent send --key` takes
// them), and what a dialog on its screen asks. Both were read off the
// pinned CLIs' recorded screens (cmd/cicy-agent/testdata/screens/*/waiting)
// and checked by answering the real CLIs (testdata/script/cli_*.txtar).

// Dialog is what a dialog on an agent's screen asks.
type Dialog = api.Dialog

// DialogTextMax is how long a dialog's text is at most, in characters.
const DialogTextMax = 300

// The answer actions.
const (
	ActionApprove = "approve"
	ActionDeny    = "deny"
	ActionOption  = "option:" // followed by N, from 1
)

// answerSpec is how an agent's dialogs are answered and read.
type answerSpec struct {
	approve, deny []string
	// option are the keys that pick option n (from 1) of a list.
	option func(n int) []string
	// approvalOption, when set, picks option n of a permission prompt
	// drawn otherwise (opencode's row: Allow once, Allow always, Reject).
	approvalOption func(n int) []string
	// approval matches a dialog line that marks a permission prompt.
	approval *regexp.Regexp
}

// digit picks option n by its number, as the agents that number their
// choices take it (1 to 9).
func digit(n int) []string { return []string{strconv.Itoa(n)} }

// downEnter picks option n of a list whose cursor starts on the first:
// Down n-1 times, then Enter.
func downEnter(n int) []string {
	keys := make([]string, 0, n)
	for range n - 1 {
		keys = append(keys, "Down")
	}
	return append(keys, "Enter")
}

// rightEnter picks option n of a row whose cursor starts on the first:
// Right n-1 times, then Enter.
func rightEnter(n int) []string {
	keys := make([]string, 0, n)
	for range n - 1 {
		keys = append(keys, "Right")
	}
	return append(keys, "Enter")
}

// maxOption is the highest option an answer can pick: the agents take
// one digit.
const maxOption = 9

// ParseOption is N of an action "option:N"; ok is false for another
// action.
func ParseOption(action string) (n int, ok bool, err error) {
	rest, ok := strings.CutPrefix(action, ActionOption)
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.Atoi(rest)
	if err != nil || n < 1 || n > maxOption {
		return 0, true, fmt.Errorf("%q is no option: use option:N with N from 1 to %d", action, maxOption)
	}
	return n, true, nil
}

// AnswerKeys are the keys (names as `cicy-agent send --key` takes them)
// that answer the agent's dialog: action is "approve", "deny" or
// "option:N". Each key is typed on its own.
func (k Kind) AnswerKeys(action string) ([]string, error) {
	a := k.answer
	if a.option == nil {
		return nil, fmt.Errorf("%s has no dialogs cicy-agent can answer", k.Name)
	}
	switch action {
	case ActionApprove:
		return append([]string{}, a.approve...), nil
	case ActionDeny:
		return append([]string{}, a.deny...), nil
	}
	n, ok, err := ParseOption(action)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("unknown action %q: use approve, deny or option:N", action)
	}
	return a.option(n), nil
}

// AnswerKeysFor are the keys that answer dialog d, read off the screen
// (ReadDialog): AnswerKeys, with option N checked against d's options and
// picked the way d is drawn.
func (k Kind) AnswerKeysFor(action string, d Dialog) ([]string, error) {
	keys, err := k.AnswerKeys(action)
	if err != nil {
		return nil, err
	}
	n, isOpt, _ := ParseOption(action)
	if !isOpt {
		return keys, nil
	}
	if len(d.Options) > 0 && n > len(d.Options) {
		return nil, fmt.Errorf("the dialog has %d options: pick option:1 to option:%d", len(d.Options), len(d.Options))
	}
	if d.Kind == "approval" && k.answer.approvalOption != nil {
		return k.answer.approvalOption(n), nil
	}
	return keys, nil
}

// ReadDialog reads the dialog on a screen of the agent (its lines, as
// pane.NewLayout cuts them): the part its layout finds as a dialog. A
// screen without one is Dialog{}.
func (k Kind) ReadDialog(lines []string) Dialog {
	if k.layout == nil {
		return Dialog{}
	}
	l := pane.NewLayout(strings.Join(lines, "\n"), k.layout)
	s, ok := l.Find(pane.PartDialog)
	if !ok {
		return Dialog{}
	}
	return readDialog(l.Lines[s.From:s.To], k.answer.approval)
}

// readDialog reads a dialog's lines.
func readDialog(raw []string, approval *regexp.Regexp) Dialog {
	lines := make([]string, 0, len(raw))
	for _, r := range raw {
		lines = append(lines, unframe(r))
	}
	first, opts := numberedOptions(lines)
	if opts == nil {
		first, opts = markedOptions(lines)
	}
	d := Dialog{Options: opts}
	for _, l := range lines {
		if approval != nil && approval.MatchString(l) {
			d.Kind = "approval"
			break
		}
	}
	if d.Kind == "" && len(opts) == 0 {
		return Dialog{}
	}
	if first < 0 {
		first = len(lines)
	}
	body := lines[:first]
	if d.Kind == "approval" {
		d.Text = approvalText(body)
	} else {
		d.Kind = "question"
		d.Text = lastParagraph(body)
	}
	d.Text = cut(d.Text, DialogTextMax)
	return d
}

// frameGlyphs are the glyphs agents draw their dialogs' frames and
// scrollbars with.
const frameGlyphs = "│┃█▌▐ \u00a0"

// unframe trims a line of frame glyphs and spaces at both ends; a rule
// (a line drawn only with box glyphs) becomes "".
func unframe(l string) string {
	for {
		t := strings.Trim(l, frameGlyphs)
		if t == l {
			break
		}
		l = t
	}
	if strings.Trim(l, "─━╌╭╮╰╯┌┐└┘▔▁ ") == "" {
		return ""
	}
	return l
}

// optionLine is a numbered choice, after a cursor glyph: "❯ 1. Yes",
// "› 2. No", "● 1. Allow once", "1. [ ] Red".
var optionLine = regexp.MustCompile(`^(?:[❯›●→>]\s*)?(\d+)\.\s+(.*)$`)

// numberedOptions are the last run of numbered choices 1, 2, 3, … and
// the line of choice 1 (-1 when there is none).
func numberedOptions(lines []string) (first int, opts []string) {
	first = -1
	for i, l := range lines {
		m := optionLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		switch {
		case n == 1:
			first, opts = i, []string{optionText(m[2])}
		case first >= 0 && n == len(opts)+1:
			opts = append(opts, optionText(m[2]))
		}
	}
	return first, opts
}

// optionText is a choice's label: without a checkbox, and without the
// description some agents put beside it after a gap.
func optionText(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "[ ] "), "[✔] ")
	if i := strings.Index(s, "  "); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// wideGap separates the choices of a row.
var wideGap = regexp.MustCompile(`\s{2,}`)

// markedOptions reads choices drawn without numbers: a vertical list
// whose cursor is "→" (pi's confirm: "→ Yes" over "No"), or a row of
// them (opencode's "Allow once   Allow always   Reject").
func markedOptions(lines []string) (first int, opts []string) {
	for i, l := range lines {
		if strings.HasPrefix(l, "Allow once   ") {
			for _, o := range wideGap.Split(l, -1) {
				if strings.ContainsAny(o, "⇆+") || strings.HasPrefix(o, "enter ") {
					break
				}
				opts = append(opts, o)
			}
			return i, opts
		}
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "→ ") {
			continue
		}
		start := i
		for start > 0 && lines[start-1] != "" {
			start--
		}
		for j := start; j < len(lines) && lines[j] != ""; j++ {
			opts = append(opts, strings.TrimPrefix(lines[j], "→ "))
		}
		return start, opts
	}
	return -1, nil
}

// approvalText is the command of a permission prompt: Claude Code's
// between two ╌ rules, the "$ cmd" line (Codex, opencode), the "? Tool
// cmd" line (Gemini CLI, Qwen Code), the "Allow tool: cmd" line (pi);
// else the paragraph above the choices.
func approvalText(body []string) string {
	// unframe turned Claude Code's ╌ rules into "": its command is the
	// paragraph right above "Do you want to proceed?".
	for i, l := range body {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			// opencode draws the workspace at the right, after a wide gap.
			if i := strings.Index(cmd, "    "); i > 0 {
				cmd = cmd[:i]
			}
			return cmd
		}
		if rest, ok := strings.CutPrefix(l, "? "); ok {
			return strings.Join(strings.Fields(strings.TrimSuffix(rest, "←")), " ")
		}
		if strings.HasPrefix(l, "Do you want to") && i > 0 {
			return lastParagraph(body[:i])
		}
	}
	for _, l := range body {
		if strings.HasPrefix(l, "Allow ") && strings.Contains(l, ": ") {
			return l
		}
	}
	return lastParagraph(body)
}

// lastParagraph is the last run of non-blank lines, joined by spaces,
// without a question counter ("Question 1/2 (…)").
func lastParagraph(body []string) string {
	end := len(body)
	for end > 0 && body[end-1] == "" {
		end--
	}
	start := end
	for start > 0 && body[start-1] != "" {
		start--
	}
	var out []string
	for _, l := range body[start:end] {
		if questionCounter.MatchString(l) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, " ")
}

var questionCounter = regexp.MustCompile(`^Question \d+/\d+`)

// cut shortens s to at most n characters, marking the cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
