// Package screens is what a viewer sees of a pane and why it has its
// state: its screen as the API answers it (scrubbed of credentials whole,
// then cut to its last lines, a CLI agent's dialog read), the same with its
// colours (scrubbed run by run), the preview that follows a pane across
// restarts (a terminal's screen as it changes, a cicy pane's turn as it
// streams), the explanation's assembly (the signal behind the state, what
// a CLI agent's screen rules make of its screen), and the view
// `cicy-agent view` made on a person's own tmux server (recorded so that
// it ends with its panes).
//
// It is a package of its own so that the screens are read and tested
// apart from the pane registry: the supervisor makes one Room in New and
// hands it the Core declared here (a pane of the registry and what runs
// it, the credentials' scrubber, the recorded answers), implemented in
// the core's screenswire.go; the core's kinds satisfy Kind, and forward
// their previews to Loop and FollowTurn. The HTTP API serves its Views
// group with the Room (httpapi.Config.Views); the core's Screen forwards
// to it. It does not import package supervisor.
package screens
