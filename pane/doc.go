// Package pane runs one agent in a terminal and knows its state.
//
// Two backends sit behind the same methods (the supervisor's terminal
// interface): a PTY (pty.go: creack/pty, with a charmbracelet/x/vt
// emulator holding the screen), whose program ends with the supervisor,
// and a session of a tmux server private to the home (tmux.go), which
// outlives it and is adopted by the next one.
//
// Both decide a pane's state with the same state machine (machine.go):
// output quiet for the settle time makes a pane idle; an agent's hook
// stands over its screen rules (rules.go) for the hook-quiet time; a model
// request of an agent in flight through the gateway (RequestsChanged)
// keeps it busy, second to its hooks and over its screen; typed input
// makes a pane busy, and the screen rules wait a moment after it. The
// machine counts the disagreements between an agent's three signals.
// Each state carries a reason for people and a Cause for code (state.go).
// Each backend publishes a copy of the status on every change, so Status
// never waits for the pane's owner.
//
// A PTY pane is owned by exactly one goroutine (its loop): the terminal
// emulator holding the current screen, the state machine, the attached
// viewers. Everything else talks to it through its methods, which send
// closures to the loop. Helper goroutines (the PTY reader, the process
// waiter, the input writer, the emulator's reply forwarder) own nothing:
// they only feed the loop or drain a channel, and each ends when the pane
// is closed.
//
// A tmux pane's program, screen and scrollback live in tmux: one poller
// per tmux server follows every pane's output through a control-mode
// client's events (tmuxctl.go), reads liveness with a single
// `list-panes -a` when tmux reports a change (and slowly as a safety net),
// and a pane's methods ask tmux (capture-pane, send-keys,
// paste-buffer). Its state machine is guarded by a mutex held only while
// the machine moves.
//
// Every tmux command run as a process of its own (new-session,
// send-keys, capture-pane, list-panes, link-window, kill-session, …) goes
// through a TmuxRunner (tmuxrun.go), which gives it a deadline and names
// the command that failed. The control-mode client does not: it is one
// long-lived `tmux -C attach-session` started directly (startCtl), and
// the few commands the poller writes to its input (refresh-client to
// subscribe to dying panes, and to pause and continue a pane that floods
// output) have no deadline of their own. When the client ends, the poller
// follows the panes by its sweeps and starts it again with a backoff.
package pane
