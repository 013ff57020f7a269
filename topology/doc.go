// Package topology is the master/worker model read from agent_config.role:
// which panes are masters, which workers report to which master, which
// panes are untracked labels, and the status view built from them. It is
// pure data and validation, no I/O; tasks and completion tracking join it
// in a later issue.
package topology
