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
	// Unreachable is a pane of another node whose supervisor does not
	// answer; no backend reports it.
	Unreachable State = "unreachable"
)

// Cause is why a pane is in its state, for code to test; Status.Reason
// says it for people.
type Cause string

// The causes of a pane's state. The zero Cause is a status no pane
// backend made (one read back from the store, or set by the supervisor).
const (
	CauseStarted Cause = "started" // the program was started
	CauseAdopted Cause = "adopted" // a running tmux session was taken over
	CauseOutput  Cause = "output"  // the program printed
	CauseQuiet   Cause = "quiet"   // its output stayed quiet for the settle time
	CauseInput   Cause = "input"   // input was typed into it
	CauseHook    Cause = "hook"    // the agent's own hook said so
	CauseGateway Cause = "gateway" // a model request of the agent went through the gateway
	CauseScreen  Cause = "screen"  // a screen rule matched (Status.Rule names it)
	CauseExit    Cause = "exit"    // the program ended by itself (or its session went away)
	CauseStop    Cause = "stop"    // the program ended because it was stopped
	CauseClosed  Cause = "closed"  // the pane was closed
)

// Status is a pane's state, why it has it, and since when.
type Status struct {
	State    State     `json:"state"`
	Reason   string    `json:"reason"`
	Since    time.Time `json:"since"`
	PID      int       `json:"pid,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`
	// Cause is Reason as a value to test; Rule names the screen rule
	// when Cause is CauseScreen.
	Cause Cause  `json:"-"`
	Rule  string `json:"-"`
	// Pending is an agent's screen verdict that differs from State and
	// applies if the next look of the screen rules gives it again.
	Pending State `json:"-"`
	// Signals is what an agent pane's gateway says, and how often its
	// state signals disagreed.
	Signals Signals `json:"-"`
}

// Signals is an agent pane's model requests in flight and how often each
// pair of its three state signals (hooks, the gateway, the screen rules)
// disagreed, since its program was started or adopted (see machine.go for
// when a disagreement counts).
type Signals struct {
	InFlight        int
	HookVsScreen    int
	GatewayVsHook   int
	GatewayVsScreen int
	// GatewayAt is when the count of requests in flight last changed
	// (zero before the first request).
	GatewayAt time.Time
	// The screen rules' last look (ScreenAt zero before the first): its
	// state ("" when no rule matched), rule and part.
	ScreenState State
	ScreenRule  string
	ScreenPart  Part
	ScreenAt    time.Time
	// ScreenBusyAt is the last look at which the rules said busy (by a
	// part other than the transcript), whatever the state then: a typed
	// task an agent takes up without a hook shows here first.
	ScreenBusyAt time.Time
}

// Running reports whether the pane's process is alive.
func (s Status) Running() bool { return s.State != Exited && s.State != Error }
