package api

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	"github.com/cicy-ai/cicy-agent/topology"
)

// Event is one line of the team's event stream (GET /api/events): a
// snapshot on connect, then what changed. Fields may be added.
type Event struct {
	// Type is snapshot, pane, state, pane_removed, task, summary or home.
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	// Snapshot: everything, first on every stream.
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	// Pane: a pane's new state, usage or config (pane).
	Pane *PaneInfo `json:"pane,omitempty"`
	// ID: the pane that is gone (pane_removed), or whose state changed
	// (state).
	ID string `json:"id,omitempty"`
	// State: a terminal pane's new state, and nothing else changed
	// (state) — the common event of a busy team, kept small.
	State *PaneStatus `json:"state,omitempty"`
	// Task: a task created or moved (task).
	Task *TaskInfo `json:"task,omitempty"`
	// Summary: the task counts per master and the standing failures,
	// whenever a task changes (summary).
	Summary *TaskSummary `json:"summary,omitempty"`
	// Home: what needs a person about the home changed (home).
	Home *HomeInfo `json:"home,omitempty"`
}

// PaneStatus is a pane's state, why it has it, and since when: a state
// event's payload.
type PaneStatus struct {
	// State is starting, idle, busy, waiting, exited or error.
	State    string    `json:"state"`
	Reason   string    `json:"reason"`
	Since    time.Time `json:"since"`
	PID      int       `json:"pid,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`
}

// Snapshot is the team as it is now.
type Snapshot struct {
	Panes []PaneInfo `json:"panes"`
	// Tasks are the open tasks and the latest finished ones (RecentTasks).
	Tasks   []TaskInfo  `json:"tasks"`
	Summary TaskSummary `json:"summary"`
	// Home is what needs a person about the home as a whole.
	Home HomeInfo `json:"home"`
}

// TaskSummary is what the topology needs of all tasks.
type TaskSummary struct {
	// Counts maps a master to its tasks' counts by status.
	Counts map[string]map[string]int `json:"counts"`
	// Failed are the failures that still stand: failed tasks that are
	// their worker's latest finished task.
	Failed []topology.FailedTask `json:"failed"`
}

// RecentTasks is how many finished tasks a snapshot carries.
const RecentTasks = 50

// EventStream reads the team's events.
type EventStream struct {
	body io.ReadCloser
	dec  *json.Decoder
}

// Next returns the next event; an error when the stream ends.
func (s *EventStream) Next() (Event, error) {
	var ev Event
	err := s.dec.Decode(&ev)
	return ev, err
}

// Pending reports whether more events have arrived already: a reader can
// fold them into one update.
func (s *EventStream) Pending() bool {
	b, _ := io.ReadAll(io.LimitReader(s.dec.Buffered(), 64))
	return len(bytes.TrimSpace(b)) > 0
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }
