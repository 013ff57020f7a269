package screens

import (
	"context"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
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
	// Scrub is text with the supervisor's credentials taken out.
	Scrub(text string) string
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

// Room answers the API's looks at a pane: its screen (with colours), its
// preview, its explanation.
type Room struct{ core Core }

// New is the screens on core.
func New(core Core) *Room { return &Room{core: core} }

// Screen returns a pane's screen; lines > 0 keeps only the last lines.
func (r *Room) Screen(id string, lines int) (api.ScreenResponse, error) {
	p, err := r.core.Pane(id)
	if err != nil {
		return api.ScreenResponse{}, err
	}
	k := p.Kind()
	sc, err := k.Screen()
	if err != nil {
		return api.ScreenResponse{}, err
	}
	out, _ := r.respond(p, k.Status(), sc, lines)
	return out, nil
}

// respond is the screen API's answer for a pane's screen sc (its state
// st), and sc scrubbed of credentials.
func (r *Room) respond(p Pane, st pane.Status, sc string, lines int) (api.ScreenResponse, string) {
	// Scrubbed whole before its last lines are cut: a key wrapped over
	// the cut is found.
	whole := r.core.Scrub(sc)
	out := api.ScreenResponse{ID: p.ID(), State: string(st.State), Screen: LastLines(whole, lines)}
	if agent, ok := cliagent.Lookup(p.Type()); ok {
		if d := agent.ReadDialog(pane.NewLayout(whole, nil).Lines); d.Kind != "" {
			out.Dialog = &d
		}
	}
	return out, whole
}
