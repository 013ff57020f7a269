// Package notify carries the team's events to the places its person
// reads: a sink is a webhook (signed), an ntfy topic, a Slack incoming
// webhook, a Telegram chat (two-way: its buttons answer a dialog) or a
// command fed the event as JSON. The service that decides what to send
// and keeps the durable queue is notify/notifier; this package knows each
// sink's wire format.
package notify

import "time"

// Events a sink can be sent (its filter names them; a needs-you event
// may also be named with its kind, "needs-you:approval").
const (
	EventNeedsYou      = "needs-you"
	EventTaskFailed    = "task-failed"
	EventGoalDone      = "goal-done"
	EventBudgetReached = "budget-reached"
	EventNodeDown      = "node-down"
	EventTest          = "test" // notify test: a sample
)

// Events are the events a sink's filter may name, in the order told.
var Events = []string{EventNeedsYou, EventTaskFailed, EventGoalDone, EventBudgetReached, EventNodeDown}

// Kinds of needs-you that a person can answer from a messenger.
const (
	KindApproval      = "approval"       // a tool waits for permission
	KindQuestion      = "question"       // a question with options, or free text
	KindWorkerStopped = "worker-stopped" // a worker is not running
)

// Sink types.
const (
	TypeWebhook  = "webhook"
	TypeNtfy     = "ntfy"
	TypeSlack    = "slack"
	TypeTelegram = "telegram"
	TypeCommand  = "command"
)

// Types are the sink types, in the order told.
var Types = []string{TypeWebhook, TypeNtfy, TypeSlack, TypeTelegram, TypeCommand}

// Event is one notification: what happened, to which pane, and the one
// command that resolves it. Its JSON is the webhook's body and the
// command's stdin.
type Event struct {
	// ID is the idempotency key: the same event delivered twice carries
	// the same id.
	ID    string `json:"id"`
	Event string `json:"event"` // one of Events (or EventTest)
	// Kind is a needs-you event's kind (approval, question,
	// worker-stopped, budget, upstream, crash-loop, disk-full, error,
	// unreachable, …); the event's name for the others.
	Kind  string `json:"kind"`
	Pane  string `json:"pane,omitempty"`
	Title string `json:"title,omitempty"`
	Team  string `json:"team,omitempty"`
	Node  string `json:"node,omitempty"`
	Task  int64  `json:"task,omitempty"`
	// Text says what happened: the question, the command awaiting
	// approval, the failure — cut to a readable length.
	Text string `json:"text"`
	// Resolve is the one command that resolves it.
	Resolve string `json:"resolve,omitempty"`
	// Actions are what a person can answer from a messenger (approve,
	// deny, option:N, restart, screen); empty for an event told only.
	Actions []string `json:"actions,omitempty"`
	// Options are a question's options, in order (option:1 is the first).
	Options []string `json:"options,omitempty"`
	// Count is how many events a digest stands for (0 for one event).
	Count int       `json:"count,omitempty"`
	At    time.Time `json:"at"`
}

// Sink is one place events are sent to.
type Sink struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// URL is the webhook, the ntfy topic, the Slack incoming webhook,
	// the Telegram Bot API's base (default https://api.telegram.org), or
	// for a command sink the program and its arguments (space-separated).
	URL  string `json:"url"`
	Chat string `json:"chat,omitempty"` // a telegram sink's chat id
	// Events filters what it is sent (empty: every event).
	Events []string `json:"events,omitempty"`
	// Secret is the webhook's signing key, the ntfy access token, the
	// Telegram bot token; never in JSON.
	Secret string `json:"-"`
}

// Result is what a sink answered.
type Result struct {
	Status int    `json:"status"` // the HTTP status (a command's exit status)
	Body   string `json:"body"`   // its answer, cut, scrubbed of the sink's secret
}
