// Package supervisor is the daemon that owns every pane. Its clients speak
// to it through package api, which holds the wire contract and Client.
//
// Data flow:
//
//	requests   CLI, dashboard (cmd/cicy-agent) ──HTTP/JSON over run/cicy.sock──▶ API (server.go, api.go)
//	                                                                              │
//	           Supervisor: registry of panes (supervisor.go) ◀─────────────────────┘
//	             │ create (create.go: normalize, with the topology rules) or restart starts the pane:
//	             ├─▶ terminal pane: pane.PTY, or a session of the private tmux server (pane.TmuxPane)
//	             └─▶ cicy pane: cicy.Agent, its turn loop in the supervisor (cicypane.go)
//	             rows ⇄ schema.Store (SQLite): panes, runtime, tasks, usage
//
//	state      pane loops, cicy turns, the outbox, the API ──mark key dirty──▶ hub (events.go)
//	           hub ──one line per dirty key per batch──▶ GET /api/events clients (dashboard, status --watch)
//
//	tasks      POST /api/tasks, a cicy master's dispatch tool ──▶ outbox (tasks.go, rows in SQLite)
//	           ──when the worker is idle──▶ a cicy worker's queue (📮 message) or a terminal worker's screen (typed);
//	           its end ──▶ 🔔 to the master, the same way
//
// One supervisor runs per CICY_HOME, guarded by a lock file; a client
// command that finds no supervisor answering starts one in the background,
// as tmux does. On start the supervisor lists every pane of the database:
// a tmux pane's session outlived it and is adopted; a PTY pane could not,
// so one that was running is shown exited with the reason and comes back
// with restart; a cicy pane starts again from its history on disk.
package supervisor
