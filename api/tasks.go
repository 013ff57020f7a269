package api

import "time"

// TaskInfo is a task as `tasks --json` prints it (see docs/http-api.md).
type TaskInfo struct {
	ID     int64  `json:"id"`
	From   string `json:"from"`
	To     string `json:"to"`
	Text   string `json:"text"`
	Status string `json:"status"`
	Result string `json:"result"`
	Error  string `json:"error"`
	Reason string `json:"reason"`
	// Source is where the result or the error came from: gateway (the
	// agent's last model answer), hook (its own turn-end signal), screen
	// (its transcript), shell (a command's output and exit status), turn
	// (a cicy agent's turn); "" before the task ended.
	Source      string     `json:"source,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	DeliveredAt *time.Time `json:"delivered_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	NotifiedAt  *time.Time `json:"notified_at"`
	Attempts    int        `json:"attempts"`
	// ToNode and FromNode are the nodes of the worker and of the sender
	// (empty when the pane is gone or the sender is a person).
	ToNode   string `json:"to_node,omitempty"`
	FromNode string `json:"from_node,omitempty"`
	// Work is the change the task left on its worker's branch, when the
	// worker runs in a git worktree.
	Work *Work `json:"work,omitempty"`
	// Answers are what a person answered its worker's dialogs while it
	// ran (the task's notes).
	Answers []Answer `json:"answers,omitempty"`
}

// Task statuses, as the store keeps them (the one set: the store, the
// outbox and every client use these).
const (
	TaskQueued    = "queued"
	TaskDelivered = "delivered"
	TaskDone      = "done"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Ended reports whether the task's status is final: done, failed or
// cancelled.
func (t TaskInfo) Ended() bool { return Ended(t.Status) }

// Ended reports whether a task status is final: done, failed or
// cancelled.
func Ended(status string) bool {
	return status == TaskDone || status == TaskFailed || status == TaskCancelled
}

// DispatchRequest creates a task; with Wait the answer comes when it ends
// (or Timeout seconds pass).
type DispatchRequest struct {
	From    string  `json:"from"`
	To      string  `json:"to"`
	Text    string  `json:"text"`
	Wait    bool    `json:"wait"`
	Timeout float64 `json:"timeout"`
	// Caller is the pane the command runs in (CICY_PANE_ID), if any: a
	// master dispatching from its shell is the task's from.
	Caller string `json:"caller,omitempty"`
}

// TeamToolResult is a team tool's answer to a master (see
// Client.TeamTool): its text, and whether it is a refusal or failure
// the master should read as an error.
type TeamToolResult struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error"`
}
