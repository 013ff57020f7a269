// Package pane runs one agent in a terminal and knows its state.
//
// Two backends sit behind the same methods (the supervisor's terminal
// interface): a PTY (pty.go: creack/pty, with a charmbracelet/x/vt
// emulator holding the screen), whose program ends with the supervisor,
// and a session of a tmux server private to the home (tmux.go), which
// outlives it and is adopted by the next one.
//
// A PTY pane is owned by exactly one goroutine (its loop): the terminal
// emulator holding the current screen, the state with its reason and the
// time it began, the attached viewers. Everything else talks to it through
// its methods, which send closures to the loop. Helper goroutines (the PTY
// reader, the process waiter, the input writer, the emulator's reply
// forwarder) own nothing: they only feed the loop or drain a channel, and
// each ends when the pane is closed.
//
// A tmux pane's program, screen and scrollback live in tmux: one poller
// per tmux server reads every pane's liveness and activity with a single
// `list-panes -a`, and a pane's methods ask tmux (capture-pane, send-keys,
// paste-buffer). Both report the same states (state.go) and read a CLI
// agent's screen with the same rules (rules.go) when its hooks are quiet.
package pane
