package screens

import (
	"context"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// Core is what the screens ask of the daemon.
type Core interface {
	// Pane is the pane id names in the registry.
	Pane(id string) (Pane, error)
	// Answers is the recorded answers to what a pane asked (task 0: any).
	Answers(ctx context.Context, pane string, task int64) []api.Answer
	// Settle is how long a terminal pane's output is quiet before it is
	// idle.
	Settle() time.Duration
}

// Pane is one pane of the registry as the screens read it.
type Pane interface {
	// ID and Type are the pane's id and type.
	ID() string
	Type() string
	// Kind is what runs the pane now; a restart replaces it.
	Kind() Kind
	// Gone says the pane is no longer in the registry.
	Gone() bool
	// Wake wakes a dormant cicy pane (its turn is read from its history).
	Wake()
	// Info is the pane as the API lists it.
	Info() api.PaneInfo
	// Respond is the screen API's answer for sc, the screen of what runs
	// the pane (in state st), and sc scrubbed of credentials whole.
	Respond(st pane.Status, sc string, lines int) (api.ScreenResponse, string)
}

// Kind is what runs a pane (one of the core's kinds): its screen, its
// state, its account of why, its preview.
type Kind interface {
	Screen() (string, error)
	Status() pane.Status
	Explain(x *api.Explanation)
	// Preview calls emit with the screen and each time it changes until
	// ctx ends, what runs the pane stops, or replaced says it was.
	Preview(ctx context.Context, lines int, emit func(api.ScreenResponse) error, replaced func() bool) error
}

// StyledScreener is a Kind whose screen has colours: a terminal pane.
type StyledScreener interface {
	// StyledScreen is the screen with its colours; false when the
	// program's backend cannot give them.
	StyledScreen() ([]pane.StyledLine, bool)
}

// Room answers the API's looks at a pane: its styled screen, its preview,
// its explanation.
type Room struct{ core Core }

// New is the screens on core.
func New(core Core) *Room { return &Room{core: core} }
