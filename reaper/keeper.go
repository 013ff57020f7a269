package reaper

import (
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// KeeperArg, as the first argument of a program that imports this
// package, makes it a pane keeper of the rest of its arguments: a
// subreaper that runs the command on the terminal it was given, and
// outlives it only to end what it left running. A tmux pane without a
// cgroup runs its program under one: a process that escapes the program
// (setsid, nohup, a double fork) is adopted by the keeper when its parent
// ends, so it stays in the pane's process tree, where a stop and the
// supervisor's looks find it.
const KeeperArg = "--cicy-agent-pane-keeper"

// KeeperGraceEnv is the keeper's grace, in milliseconds, between SIGTERM
// and SIGKILL for what the program left running (default 3 s); the
// program does not see it.
const KeeperGraceEnv = "CICY_KEEPER_GRACE_MS"

func init() {
	if len(os.Args) < 3 || os.Args[1] != KeeperArg {
		return
	}
	os.Exit(keep(os.Args[2:]))
}

// keep runs argv and returns its exit status (128+n for signal n, as a
// shell says). When the command ends, or the terminal hangs up (SIGHUP:
// the pane, or its whole tmux server, is gone), every process it left is
// sent SIGTERM, then SIGKILL after the grace.
func keep(argv []string) int {
	grace := 3 * time.Second
	if ms, err := strconv.Atoi(os.Getenv(KeeperGraceEnv)); err == nil && ms >= 0 {
		grace = time.Duration(ms) * time.Millisecond
	}
	_ = os.Unsetenv(KeeperGraceEnv)
	// Caught, not ignored: the command gets the default. The signals a
	// terminal sends its foreground group reach the command too.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
	subreaper := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil
	path, err := exec.LookPath(argv[0])
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 127
	}
	p, err := os.StartProcess(path, argv, &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 126
	}
	cmd := p.Pid
	_ = p.Release()
	children := make(chan reaped, 16)
	go reapAll(children)
	code, ended := -1, false
	for !ended {
		select {
		case c, ok := <-children:
			if !ok {
				return max(code, 0)
			}
			if c.pid == cmd {
				code, ended = exitCode(c.status), true
			}
		case sig := <-sigs:
			ended = sig == syscall.SIGHUP
		}
	}
	if subreaper {
		endRest(os.Getpid(), grace)
	}
	// Reap what was ended, the command too if it is still to come.
	drain(children, func(c reaped) {
		if c.pid == cmd {
			code = exitCode(c.status)
		}
	})
	return max(code, 0)
}

func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// endRest sends SIGTERM to every descendant of root, waits up to grace for
// them to go, then kills what is left (EndTree).
func endRest(root int, grace time.Duration) {
	for _, d := range Descendants(root) {
		Kill(d, syscall.SIGTERM)
		Kill(d, syscall.SIGCONT)
	}
	deadline := time.Now().Add(grace)
	for len(Descendants(root)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	EndTree(root)
}
