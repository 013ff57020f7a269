// Package pane runs one agent in a terminal and knows its state.
//
// A pane is owned by exactly one goroutine (its loop): the terminal
// emulator holding the current screen, the state with its reason and the
// time it began, the attached viewers. Everything else talks to it through
// its methods, which send closures to the loop. Helper goroutines (the PTY
// reader, the process waiter, the input writer, the emulator's reply
// forwarder) own nothing: they only feed the loop or drain a channel, and
// each ends when the pane is closed.
//
// This backend is a PTY (creack/pty) with a charmbracelet/x/vt
// emulator for the screen; the tmux backend comes later behind the same
// methods.
package pane
