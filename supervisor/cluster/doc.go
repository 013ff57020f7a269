// Package cluster is the part of a supervisor that makes it one node of
// a cluster: several supervisors sharing one PostgreSQL database.
//
// It holds the node's lease in the nodes table (Start, a heartbeat, Close
// ending it at once), follows the other nodes' panes through their event
// streams — one peer watcher per node, which also probes the node's
// health — or shows them from their rows, unreachable, while a node does
// not answer (Panes, Info, Nodes), forwards the API's requests about
// another node's pane to the node that owns it (Forward, over the
// node's cluster API, with a deadline a late node drops: DropLate,
// TooLate), wakes the outbox on the database's task notes, and opens the
// cluster API's listener with its secret and TLS (Listen, RequireToken).
//
// It is a package of its own so that what a node needs of the rest of the
// supervisor is written down and small: the interfaces it declares —
// Store (the nodes table and the panes' rows), Panes (this node's own
// panes: which are, and how one is described), Events (where changes of
// the other nodes' panes are published) and Tasks (the outbox) — which
// the supervisor implements; this package does not import it. A SQLite
// home is one machine: its Cluster starts nothing and lists one node.
package cluster
