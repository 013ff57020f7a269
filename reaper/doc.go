// Package reaper keeps every process a command starts findable, so it can
// be ended however it tries to leave (a new session, an ignored SIGHUP, a
// double fork, a cleared environment).
//
// A command run with Start goes under this very binary run again
// (/proc/self/exe, shown as cicy-agent-reaper in ps, caught by the
// package's init before main: host.go), which makes itself a child
// subreaper, reaps its children, tells the command's exit status on a
// pipe, and on SIGTERM — also its parent-death signal — kills its whole
// tree: a supervisor killed with -9 takes every run with it (run.go; a
// cicy agent's shell tool runs each command so). A tmux pane's program,
// a child of the tmux server, is held instead by a cgroup v2 group where
// one can be made (Group, cgroup.go: list, signal, cgroup.kill, remove)
// or else by a keeper (KeeperArg, keeper.go: the binary run again as a
// subreaper of the pane's program alone). tree.go reads process trees
// from /proc (Processes, Descendants, Tree) and signals a pid only after
// its start time is checked again, so a reused pid is left alone.
package reaper
