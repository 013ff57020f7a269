// Package httpapi is the supervisor's HTTP API, the control socket's (and
// the cluster API's) routes: the panes, their screens, previews, attach
// streams and events, the team's tasks, status and event stream, the
// cicy panes' memories, the worktrees, budgets and usage, and the gate
// that answers health while the supervisor restores its panes.
//
// It holds the HTTP side alone — decoding requests, the JSON and NDJSON
// answers, the status of each error kind, the rules every request passes
// (no "." or ".." in a path, a bounded body) — and asks the daemon for
// everything else through Daemon, the API's view of the supervisor, which
// this package declares and package supervisor implements. The rooms that
// have routes of their own (the notifications, the web page's management)
// mount them through Config.Rooms with this package's Decode and Respond,
// so the API answers theirs as it answers its own. It imports nothing of
// the supervisor: the supervisor wires it (newAPI) and serves it.
package httpapi
