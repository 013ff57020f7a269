package cicy

import "time"

// State is where a cicy pane's turn loop is: idle between turns, busy in
// one (or compacting), closed once it stopped. The words are those of the
// supervisor's pane states.
type State string

// The states of a turn loop.
const (
	Idle   State = "idle"
	Busy   State = "busy"
	Closed State = "exited"
)

// Status is the loop's state, why it has it, and since when.
type Status struct {
	State  State
	Reason string
	Since  time.Time
}

// Done is closed once the loop has stopped (Close): a result awaited
// from it will not come.
func (a *Agent) Done() <-chan struct{} { return a.done }
