// Package diskwatch is the home's disk-full watch: whether the home's
// writes fail for lack of space, the sentence that says so (the home's
// disk-full need), and the retries of the writes that are made again only
// when asked.
//
// Each writer (the ledger, a cicy pane's history, the database) says how
// its last write went (Note); one that failed because the disk is full
// stands until a write of the same writer succeeds. A writer that writes
// again only when asked (a dispatch the database refused, a cicy pane that
// could not be restored, a pane's return) gives a retry (Retry), run on a
// timer (one second, doubling up to five) and at once when another
// writer's write succeeds, until it does.
//
// It is a package of its own so that the watch is read and tested apart
// from the pane registry: the supervisor makes one Watch in New, tells it
// its writers' writes and asks it the home's reason (diskwire.go). It
// imports none of the daemon.
package diskwatch
