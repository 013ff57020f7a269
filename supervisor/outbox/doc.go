// Package outbox moves tasks from masters to workers and tells masters
// when they end.
//
// A pure decision step (Decide) turns a Snapshot — the open tasks, the
// panes' views and the progress of what is in flight — into actions:
// move (settle a task: done, failed, back to queued), deliver, abandon a
// delivery, track one a restart resumed, notify, re-send a notification a
// crash lost, mark told. One goroutine (Outbox.Run) reads the
// snapshot, asks Decide, and executes the actions through the Pane seam,
// which the supervisor's pane-kind adapters implement; it is woken by
// pane and task changes and by one timer for the slow cases. A task on a
// worktree worker is committed (Config.Finish) on a goroutine of its own
// before it is recorded done. Every change
// of a task's status is the store's conditional update, so a task ends
// exactly once whoever decides it. The first step after a start settles
// what the previous supervisor left, from each pane's word (Recover,
// Noticed).
package outbox
