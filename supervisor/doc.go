// Package supervisor is the daemon that owns every pane. Its clients speak
// to it through package api, which holds the wire contract and Client.
//
// Data flow:
//
//	requests   CLI, dashboard ──api.Client: HTTP/JSON over run/cicy.sock──▶ API (package httpapi,
//	           wired in serve.go and apiview.go: the Daemon it declares is *Supervisor; the
//	           rooms serve groups of their own: spend, cicypanes, screens)
//	           ──▶ registry (supervisor.go): id → entry{config, one pane-kind value}
//	           ──▶ the pane's kind adapter (kind*.go): cicyKind, shellKind, cliKind, stopped
//	           ──▶ its backend: pane.PTY or a session of the private tmux server (pane.TmuxPane),
//	               or a cicy.Agent turn loop in this process; rows ⇄ schema.Store (SQLite or PostgreSQL)
//	           create (package newpane checks the request by the topology spec rules and makes its
//	           folders; Create registers it) and restart build the adapter (launch);
//	           stop, restart and kill swap it under the entry's op lock while readers load it freely
//
//	state      pane loops, turn loops, hooks (package signals, cliagent; agentwire.go wires them), the
//	           gateway's requests in flight (signals.Requests: gateway.Activity ──▶ the entry's count
//	           ──▶ its pane's owner), the outbox
//	           ──mark key dirty──▶ hub (package eventhub, eventwire.go) ──one line per dirty key per batch──▶
//	           GET /api/events clients (dashboard, status --watch)
//
//	tasks      POST /api/tasks, a master's dispatch tool ──▶ task rows ──▶ outbox (package outbox):
//	           Decide(open tasks, the panes' views, deliveries in flight) ──▶ actions, executed through
//	           the adapters (outbox.Pane): a cicy worker gets a 📮 message, a shell or CLI agent worker
//	           has it typed; the adapter's delivery says when it ended and with what result: a cicy
//	           turn's reply; a CLI agent's last model answer as the gateway saw it (signals.Verdict),
//	           else its hook's last message, else its screen; a POSIX shell's exit status and
//	           output (package shelltask: each task runs through a small script of ours); 🔔 to the
//	           master the same way
//
//	models     CLI agents reach their model through the gateway (package gateway, gateway.go):
//	           a token per pane, the real keys added there, usage and cost into the ledger
//	           (package spend: rows the database refuses wait in memory and are written again),
//	           budgets held per request (spend.Accounts.Reserve); CLI masters lead through the team tools
//	           (package teamtools, wired in teamwire.go: dispatch, workers, task_status, diff, merge, and wait), which
//	           `cicy-agent mcp` serves them over MCP; cicy agents call their provider in process
//
//	agents     what differs between the CLI agents is in package cliagent,
//	           one file per agent (`cicy-agent agents` lists them): its config folder seeded with its native completion signals
//	           wired to `cicy-agent hook`, what each signal means, the model APIs it speaks
//	           through the gateway, its screen rules; package agentpane finds a CLI agent's program,
//	           prepares its start and answers its dialogs (`cicy-agent answer`)
//
//	nodes      with PostgreSQL (serve --db) the supervisor is one node of a cluster (package
//	           cluster, wired in nodes.go): it holds its node on the database, owns the panes it
//	           started, renews its lease, follows the other nodes' panes through their event
//	           streams, forwards requests about their panes over the cluster API (serve
//	           --listen, a bearer secret, TLS when given a certificate); its outbox sees its own
//	           workers' and masters' tasks (schema.Store.ForNode) and is woken by the database's
//	           task notes
//
//	work       a --worktree worker runs in a git worktree of its own on its own branch
//	           (package gitwork, on the git layer of package worktree; trees.go wires it), made
//	           from a spare checked out ahead when there is one; each task it ends done is a
//	           commit, recorded with the task; diff and merge
//
//	return     a pane found gone at a start, or whose program exits by itself, comes back by its
//	           restart policy, a CLI agent in its own session (a task it was on told so, or failed
//	           as interrupted); three quick deaths in a row are a crash loop, not started again; a
//	           team's agent killed by down leaves its session to the next up (package comeback,
//	           wired in comebackwire.go)
//
// One supervisor runs per CICY_HOME, guarded by a lock file; a client
// command that finds no supervisor answering starts one in the background,
// as tmux does. Its socket answers at once: while the panes are restored,
// a gate (httpapi.Gate) answers GET /api/health saying it is starting and how
// far the restore is, and holds every other request until the supervisor
// is ready or could not start. A SQLite database that is missing or empty
// while the home still holds its panes' folders or tmux sessions is
// refused unless serve --fresh (package comeback). On start the supervisor lists
// the panes of its node: a tmux pane's session outlived it and is adopted;
// a PTY pane could not, so one that was running is shown exited with the
// reason and comes back with restart; a cicy pane is listed at once,
// dormant (kind_dormant.go), and starts again from its history on disk on
// its first input or in the background after the start, the panes whose
// turn was cut short first.
//
// A stop ends a pane's whole process tree, read from /proc while the
// program stops (package reaper), so a child that outlived its parent is
// ended too; a cicy agent's shell tool runs each command under a reaper
// process. A write the home's disk refused for lack of space (the
// ledger's, a cicy pane's history) makes the home need a person until
// that writer's next write succeeds (package diskwatch, diskwire.go).
package supervisor
