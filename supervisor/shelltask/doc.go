// Package shelltask runs a shell worker's tasks when its program is a
// POSIX shell (Wraps): each task goes through a small script of ours, so
// that the task's end, exit status and whole output come from the shell
// itself, not from its screen going quiet (docs/panes-and-tasks.md,
// "Tasks of a shell worker"). The pane's shell sources the script, which
//
//   - marks the task started,
//   - runs the task's text — a file of its own, sourced in the shell
//     itself, so `cd` and variables stay as if typed — with its output and
//     errors going through a FIFO to tee, which shows them on the pane and
//     keeps them in a file,
//   - writes the exit status to a file once the task ends (tee marks its
//     own end: output a background child of the task keeps writing is not
//     waited for long).
//
// All of it lives in the pane's folder under the home (tasks/), mode 0600
// in a 0700 folder; a task's files are removed when the pane's next task
// starts or the pane is killed. A run's Delivery (Watch) watches its files
// for the outbox until they say the task ended, and makes its result.
//
// A shell worker whose program is not a POSIX shell has its task typed
// and watched on its screen (Typed): verified once its first line shows,
// done once the output after it is quiet for the settle time, its result
// the screen after the typed text (OutputAfter, which a terminal pane's
// send --wait and a CLI agent's transcript use too).
//
// The supervisor's shell kind (kind_shell.go) types the line Prepare
// returns and hands the outbox the Delivery; this package knows the pane
// only as a Shell (its status, its keyboard) and never imports the
// supervisor.
package shelltask
