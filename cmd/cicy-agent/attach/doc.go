// Package attach is the use of a pane from the user's terminal through
// the supervisor's API, as cicy-agent attach (and a view's tile) runs it:
// Terminal, a terminal pane's PTY in raw mode (Ctrl-Q detaches); Tmux,
// a tmux pane through tmux attach on the home's private server; and
// Chat, a cicy pane's streaming chat (each line a message, the events as
// they come; Ctrl-D detaches), which follows the pane through the
// supervisor's restarts.
//
// It is a package of its own because these are long-running sessions
// with their own goroutines and terminal handling, not the command line:
// cicy-agent attach finds the pane and chooses the session, this package
// runs it.
package attach
