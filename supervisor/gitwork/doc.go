// Package gitwork keeps the workers' git work, as the daemon sees it: a
// worker's worktree made at create --worktree (from a spare checked out
// ahead, spares.go), checked out again when its folder was deleted,
// removed or kept when the pane is killed; what a crash cut short,
// cleaned at the start; each task's work committed and recorded at its
// end (Finish, the outbox's last step); what ls and `worktrees` show of
// them; and diff, merge and a conflict sent back to its worker.
//
// It is a package of its own beside supervisor/worktree, not a layer
// inside it: worktree is the git layer (git commands on a checkout,
// standard library only, nothing of panes), while this one speaks the
// daemon's terms — panes' rows and configs, tasks, the store, the API's
// documents and errors. The name says "the git work of the workers", not
// "a worktree", so the two are not confused. It knows the supervisor
// only through the small interfaces it declares (Panes, Tasks, Store)
// and never imports it.
package gitwork
