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

// Cause is what set a loop's state, for code to test; Status.Reason says
// it for people.
type Cause string

// The causes of a loop's state.
const (
	CauseRestored Cause = "restored" // the loop started, its conversation read from disk
	CauseTurn     Cause = "turn"     // a turn began or ended
	CauseCommand  Cause = "command"  // /compact or /clear
)

// Status is the loop's state, why it has it, and since when.
type Status struct {
	State  State
	Cause  Cause
	Reason string
	Since  time.Time
}

// Done is closed once the loop has stopped (Close): a result awaited
// from it will not come.
func (a *Agent) Done() <-chan struct{} { return a.done }
