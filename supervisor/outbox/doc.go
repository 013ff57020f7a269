// Package outbox moves tasks from masters to workers and tells masters
// when they end.
//
// A pure decision step (Decide) turns a Snapshot — the open tasks, the
// panes' views, the progress of what is in flight and the tasks a master
// awaits — into actions of seven kinds (Op):
//
//   - move: settle a task (done, failed, back to queued), a conditional
//     update;
//   - deliver: record a queued task delivered, then hand it to its idle
//     worker;
//   - abandon: let go of a task's delivery;
//   - track: keep the delivery a pane resumed after a restart;
//   - notify: tell a master that its task ended, then record it told;
//   - resend: tell a master again, when it was recorded told but never got
//     the line (a crash);
//   - mark: record a master told when there is nobody to tell or it
//     already knows.
//
// One goroutine (Outbox.Run) reads the snapshot, asks Decide, and
// executes the actions through the Pane seam, which the supervisor's
// pane-kind adapters implement; it is woken by pane and task changes, by
// the database's task notes (Noted: a change made on any node of a
// cluster), and by one timer for the slow cases. A task on a worktree worker is committed
// (Config.Finish) on a goroutine of its own before it is recorded done.
// While a master blocks on its tasks (Await: the team tool wait), their
// notifications wait; Told records that the wait showed the result, so no
// 🔔 line follows. Every change of a task's status is the store's
// conditional update, so a task ends exactly once whoever decides it, on
// one node or several. The first step after a start settles what the
// previous supervisor left, from each pane's word (Recover, Noticed).
package outbox
