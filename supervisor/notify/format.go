package notify

import (
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
)

// maxText is the most runes of an event's text a message carries.
const maxText = 1000

// refPrefix starts a message's last line, which names its event: a reply
// to the message is matched to the event by it.
const refPrefix = "ref "

// message is an event said in words, before a sink's markup.
type message struct {
	title   string // the headline: what, to whom
	what    string // the first line: which pane, what happened
	text    string // the question, the command awaiting approval, the failure
	resolve string // the one command that resolves it
	ref     string // the event's id
}

// Format says an event in plain words: a title (what happened, which
// pane) and a body (the pane with its title and team, the text, the one
// command that resolves it, and a last line "ref <id>" that a reply is
// matched by). A digest says how many events it stands for.
func Format(e Event) (title, body string) {
	m := compose(e)
	lines := []string{m.what}
	if m.text != "" {
		lines = append(lines, m.text)
	}
	if m.resolve != "" {
		lines = append(lines, "run: "+m.resolve)
	}
	if m.ref != "" {
		lines = append(lines, refPrefix+m.ref)
	}
	return m.title, strings.Join(lines, "\n")
}

func compose(e Event) message {
	m := message{text: clip.Runes(strings.TrimSpace(e.Text), maxText), resolve: e.Resolve, ref: e.ID}
	who := paneName(e)
	switch e.Event {
	case EventNeedsYou:
		m.title = who + " needs you: " + e.Kind
		m.what = who + describe(e) + " " + needsWhat(e.Kind)
	case EventTaskFailed:
		m.title = "task " + taskName(e) + " failed"
		m.what = "task " + taskName(e) + " of " + who + describe(e) + " failed"
	case EventGoalDone:
		m.title = "goal done: " + who
		m.what = "every task of " + who + describe(e) + " has ended"
	case EventBudgetReached:
		m.title = "budget reached: " + who
		m.what = who + describe(e) + " reached its budget and is paused"
	case EventNodeDown:
		m.title = "node down: " + nodeName(e)
		m.what = "node " + nodeName(e) + " stopped answering"
	case EventTest:
		m.title = "test from cicy-agent"
		m.what = "a sample notification: this sink works"
	default:
		m.title = e.Event + ": " + who
		m.what = who + describe(e) + ": " + e.Event
	}
	if e.Count > 1 {
		m.title += fmt.Sprintf(" (%d times)", e.Count)
		m.what = fmt.Sprintf("%d events like this since the last message; the latest: ", e.Count) + m.what
	}
	return m
}

func paneName(e Event) string {
	switch {
	case e.Pane != "":
		return e.Pane
	case e.Team != "":
		return "team " + e.Team
	case e.Node != "":
		return "node " + e.Node
	}
	return "the team"
}

func nodeName(e Event) string {
	if e.Node != "" {
		return e.Node
	}
	return "?"
}

func taskName(e Event) string {
	if e.Task == 0 {
		return "?"
	}
	return strconv.FormatInt(e.Task, 10)
}

// describe is " (title, team T, on node N)" with what the event knows.
func describe(e Event) string {
	var d []string
	if e.Title != "" {
		d = append(d, clip.Runes(e.Title, 40))
	}
	if e.Team != "" && e.Pane != "" {
		d = append(d, "team "+e.Team)
	}
	if e.Node != "" && e.Event != EventNodeDown {
		d = append(d, "on node "+e.Node)
	}
	if len(d) == 0 {
		return ""
	}
	return " (" + strings.Join(d, ", ") + ")"
}

func needsWhat(kind string) string {
	switch kind {
	case KindApproval:
		return "waits for your approval:"
	case KindQuestion:
		return "asks:"
	case KindWorkerStopped:
		return "is a worker that is not running"
	case "":
		return "needs you"
	}
	return "needs you (" + kind + ")"
}

// slackText is the message in Slack's mrkdwn: the title bold, the
// command in a code span (&, < and > escaped, as Slack asks).
func slackText(e Event) string {
	m := compose(e)
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	lines := []string{"*" + esc(m.title) + "*", esc(m.what)}
	if m.text != "" {
		lines = append(lines, esc(m.text))
	}
	if m.resolve != "" {
		lines = append(lines, "run: `"+esc(strings.ReplaceAll(m.resolve, "`", "'"))+"`")
	}
	if m.ref != "" {
		lines = append(lines, refPrefix+esc(m.ref))
	}
	return strings.Join(lines, "\n")
}

// telegramText is the message in Telegram's HTML: the title bold, the
// command in <code> (a tap copies it), everything else escaped.
func telegramText(e Event) string {
	m := compose(e)
	esc := html.EscapeString
	lines := []string{"<b>" + esc(m.title) + "</b>", esc(m.what)}
	if m.text != "" {
		lines = append(lines, esc(m.text))
	}
	if m.resolve != "" {
		lines = append(lines, "run: <code>"+esc(m.resolve)+"</code>")
	}
	if m.ref != "" {
		lines = append(lines, refPrefix+esc(m.ref))
	}
	return strings.Join(lines, "\n")
}

// RefOf finds the event id a message names on its "ref <id>" line ("" if
// none): how a free-text reply is matched to the event it answers.
func RefOf(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if id, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), refPrefix); ok {
			return strings.TrimSpace(id)
		}
	}
	return ""
}
