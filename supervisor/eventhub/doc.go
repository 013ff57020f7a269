// Package eventhub is the team's event stream (GET /api/events): the hub
// the daemon publishes its changes to, and each subscriber's stream built
// from it.
//
// Publishers (pane loops, the outbox, the API) never block and never
// build documents: they mark a key dirty in every subscriber (a pane's
// state, a pane, a task, the summary, the home). Each stream's writer
// wakes, takes its dirty set, builds the current value of each key once
// and writes the batch, paced by a bucket (a burst after a quiet spell,
// then one batch per 100 ms), so a noisy pane cannot crowd out the others.
// A stream starts with the snapshot (Snapshot): the panes, the recent
// tasks, the task summary (Summary) and the home. Status, the topology
// view of status and of the notifier's needs-you, is built here too from
// the same parts and the open tasks.
// The notifier watches the same hub (Watch) for what needs you.
//
// It is a package of its own so that the stream's coalescing and pacing
// are read and tested apart from the pane registry: the supervisor builds
// one Hub in New and hands it what it needs through the small interfaces
// declared here (Team: the panes' documents and states, another node's
// pane, the home, a task's document; Store: the tasks). It does not
// import package supervisor.
package eventhub
