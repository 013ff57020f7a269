package pane

import "time"

// State is where a pane is in its life.
type State string

// The pane states.
const (
	Starting State = "starting"
	Idle     State = "idle"
	Busy     State = "busy"
	Waiting  State = "waiting"
	Exited   State = "exited"
	Error    State = "error"
)

// Status is a pane's state, why it has it, and since when.
type Status struct {
	State    State     `json:"state"`
	Reason   string    `json:"reason"`
	Since    time.Time `json:"since"`
	PID      int       `json:"pid,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Cause Cause `json:"-"`
}

// Running reports whether the pane's process is alive.
func (s Status) Running() bool { return s.State != Exited && s.State != Error }

// TEMP stub
type Cause string

const (
	CauseInput  Cause = "input"
	CauseScreen Cause = "screen"
)
