// Package notifier is the home's notification service: it watches what
// needs the person (the team's needs-you, failed tasks, goals done,
// budgets reached, nodes down), turns each new episode into one event
// (coalescing a flapping pane, skipping what is muted), queues it durably
// in the store for every sink that wants it, and runs one sender per sink
// (a Telegram sink also listens to its chat: its buttons and replies
// answer the pane). It also keeps the answers given (the first answer to
// a notification is the one) and serves the /api/notify routes.
//
// It is a package of its own under notify rather than part of it: notify
// is the sinks' wire formats alone (a leaf the CLI and the fakes import,
// testable without a store or a team), while this service needs the
// store's notify_* rows, the team's status and the event stream. It
// reaches the supervisor only through the small interfaces it declares
// (Store, Team, Hub), so it does not import it.
package notifier
