// Package topology is the master/worker model read from agent_config.role:
// which panes are masters, which workers report to which master, which
// panes are untracked labels, and the status view built from them. It also
// holds the rules every pane spec follows (spec.go: types, limits, names,
// the links between role, master, command and env), which both
// `cicy-agent create` and team files check, and reads team files
// (team.go; LoadTeam is its only I/O). Tasks and their completion are the
// supervisor's outbox.
package topology
