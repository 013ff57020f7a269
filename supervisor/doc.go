// Package supervisor is the daemon that owns every pane, and the client
// that talks to it.
//
// Data flow:
//
//	CLI (cmd/cicy-agent) ──HTTP/JSON over run/cicy.sock──▶ Server (api.go)
//	                                                          │
//	                                    Supervisor (registry of panes, store)
//	                                      │                         │
//	                         pane.PTY (one loop goroutine each)   schema.Store (SQLite)
//	                                      │ OnChange(status)        ▲
//	                                      └─────────────────────────┘ runtime rows
//
// One supervisor runs per CICY_HOME, guarded by a lock file; a client
// command that finds no supervisor answering starts one in the background,
// as tmux does. On start the supervisor lists every pane of the database;
// PTY panes cannot outlive it, so those that were running are shown exited
// with the reason and come back with restart.
package supervisor
