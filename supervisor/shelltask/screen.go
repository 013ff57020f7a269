package shelltask

import (
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
)

// verify is how long a typed task may take to show on the screen.
const verify = 5 * time.Second

// Screen is what a task typed into a shell worker needs of it when it is
// watched on its screen: its status and its screen's text.
type Screen interface {
	Status() pane.Status
	Screen() string
}

// Typed is the delivery of task text command typed at at into shell p,
// whose program is not a POSIX shell (verified: its typing was seen
// already, before a restart).
func Typed(p Screen, at time.Time, command string, verified bool) *TypedDelivery {
	return &TypedDelivery{p: p, at: at, command: command, verified: verified}
}

// TypedDelivery is a task typed into a shell worker whose program is not
// a POSIX shell: verified once its first line shows on the screen, done
// once the output after it has been quiet for the settle time.
type TypedDelivery struct {
	p        Screen
	verified bool
	at       time.Time
	command  string // the text typed: the output follows it
}

func (d *TypedDelivery) Check(now time.Time) outbox.Progress {
	if st := d.p.Status(); !st.Running() {
		return outbox.Progress{Ended: true, Failed: true, Error: "the worker's process ended: " + st.Reason, How: "worker exited"}
	}
	if !d.verified {
		head, _ := typedMarks(d.command)
		d.verified = strings.Contains(d.p.Screen(), head)
	}
	if !d.verified {
		if !now.Before(d.at.Add(verify)) {
			return outbox.Progress{Ended: true, Failed: true, Error: "the typed task never showed on the worker's screen", How: "delivery not verified"}
		}
		return outbox.Progress{Next: d.at.Add(verify)}
	}
	if st := d.p.Status(); st.State == pane.Idle && st.Since.After(d.at) {
		return outbox.Progress{Ended: true, Result: OutputAfter(d.p.Screen(), d.command), How: "the worker's output was quiet for the settle time", Source: schema.SourceScreen}
	}
	return outbox.Progress{}
}

func (d *TypedDelivery) Abandon() {}

// typedMarks are what shows typed text on a screen: the start of its first
// line (seen once it was typed) and the end of it (a long line wraps on the
// screen; the output begins after its end, see OutputAfter).
func typedMarks(text string) (head, tail string) {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	head, tail = first, first
	if len(head) > 40 {
		head = head[:40]
	}
	if len(tail) > 12 {
		tail = tail[len(tail)-12:]
	}
	return head, tail
}

// OutputAfter is the screen after the typed text, without the prompt
// that came back at the end. The typed line is the last one holding the
// start of its first line (output that repeats the command's arguments
// holds their end, not the start); a long line wraps, so the output
// begins after the line holding its end. When the start has scrolled
// away, the first line holding the end marks it (the output below may
// repeat the end: echo done).
func OutputAfter(screen, typed string) string {
	head, tail := typedMarks(typed)
	lines := strings.Split(screen, "\n")
	start := 0
	if i := lineWith(lines, head, true); i >= 0 {
		first, _, _ := strings.Cut(strings.TrimSpace(typed), "\n")
		wrap := lines[i:min(len(lines), i+len(first)/20+2)] // the rows it can wrap over
		start = i + 1
		if j := lineWith(wrap, tail, false); j >= 0 {
			start = i + j + 1
		}
	} else if j := lineWith(lines, tail, false); j >= 0 {
		start = j + 1
	}
	out := lines[start:]
	if n := len(out); n > 0 {
		if last := strings.TrimSpace(out[n-1]); strings.HasSuffix(last, "$") || strings.HasSuffix(last, "#") || strings.HasSuffix(last, ">") {
			out = out[:n-1]
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// lineWith is the index of the first (or with last, the last) line
// holding s; -1 when none does.
func lineWith(lines []string, s string, last bool) int {
	found := -1
	for i, l := range lines {
		if strings.Contains(l, s) {
			found = i
			if !last {
				break
			}
		}
	}
	return found
}
