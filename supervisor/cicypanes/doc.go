// Package cicypanes is what the API asks of a pane's turn loop and files:
// a cicy pane's running turn cancelled, its /compact and /clear, its
// events, its memories (listed, read, archived, reindexed, flushed), the
// message sent to it, the ledger its model calls are recorded in, the
// warning of a new one that cannot make a model call; the outbox's side
// of a cicy worker (Worker: a task is a message to its turn loop, whose
// answer is the result; after a restart it is followed or read from the
// history); and any pane's guidance file (AGENTS.md, CLAUDE.md: a cicy
// pane's <role> block).
//
// It is a package of its own so that the cicy panes' API is read and
// tested apart from the pane registry: the supervisor makes one Panes in
// New and hands it the Core declared here (a pane's turn loop, a pane's
// guidance file), implemented in the core's cicywire.go; the HTTP API
// serves its CicyPanes group with it (httpapi.Config.Cicy). It does not
// import package supervisor.
package cicypanes
