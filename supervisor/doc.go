// Package supervisor is the daemon that owns every pane. Its clients speak
// to it through package api, which holds the wire contract and Client.
//
// Data flow:
//
//	requests   CLI, dashboard ──api.Client: HTTP/JSON over run/cicy.sock──▶ API (server.go, api.go)
//	           ──▶ registry (supervisor.go): id → entry{config, one pane-kind value}
//	           ──▶ the pane's kind adapter (kind*.go): cicyKind, shellKind, cliKind, stopped
//	           ──▶ its backend: pane.PTY or a session of the private tmux server (pane.TmuxPane),
//	               or a cicy.Agent turn loop in this process; rows ⇄ schema.Store (SQLite or PostgreSQL)
//	           create (create.go: the topology spec rules) and restart build the adapter (launch);
//	           stop, restart and kill swap it under the entry's op lock while readers load it freely
//
//	state      pane loops, turn loops, hooks (hooks.go, cliagent), the gateway's requests in
//	           flight (signals.go: gateway.Activity ──▶ the entry's count ──▶ its pane's owner), the outbox
//	           ──mark key dirty──▶ hub (events.go) ──one line per dirty key per batch──▶
//	           GET /api/events clients (dashboard, status --watch)
//
//	tasks      POST /api/tasks, a cicy master's dispatch tool ──▶ task rows ──▶ outbox (package outbox):
//	           Decide(open tasks, the panes' views, deliveries in flight) ──▶ actions, executed through
//	           the adapters (outbox.Pane): a cicy worker gets a 📮 message, a shell or CLI agent worker
//	           has it typed; the adapter's delivery says when it ended; 🔔 to the master the same way
//
//	models     CLI agents reach their model through the gateway (package gateway, gateway.go):
//	           a token per pane, the real keys added there, usage and cost into the ledger,
//	           budgets held per request (budget.go); CLI masters lead through the team tools
//	           (teamtools.go), which `cicy-agent mcp` serves them over MCP; cicy agents call
//	           their provider in process
//
//	nodes      with PostgreSQL the supervisor is one node of a cluster (cluster.go, peer.go):
//	           it renews its lease, follows the other nodes' panes through their event streams,
//	           forwards requests about their panes (forward.go) over the cluster API (listen.go)
//
//	work       a --worktree worker runs in a git worktree of its own (worktrees.go, spares.go,
//	           package worktree); each task it ends done is a commit; diff and merge (worktreeapi.go)
//
// One supervisor runs per CICY_HOME, guarded by a lock file; a client
// command that finds no supervisor answering starts one in the background,
// as tmux does. On start the supervisor lists every pane of the database:
// a tmux pane's session outlived it and is adopted; a PTY pane could not,
// so one that was running is shown exited with the reason and comes back
// with restart; a cicy pane starts again from its history on disk.
package supervisor
