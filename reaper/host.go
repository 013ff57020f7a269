package reaper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hostName is the reaper's argv[0]: what ps shows, and how this package's
// init knows that the program was started as a reaper.
const hostName = "cicy-agent-reaper"

// statusFD is the pipe on which the reaper tells how the command ended:
// "exit <wait status>" or "error <why it did not start>".
const statusFD = 3

// init turns the program into a reaper when Start ran it as one
// (/proc/self/exe under hostName). It is an init, not a call in main, so
// every binary that can start a reaper (tests included) is one, and none
// can start itself by mistake. The reaper's whole life is here: main never
// runs.
func init() {
	if len(os.Args) < 2 || os.Args[0] != hostName {
		return
	}
	os.Exit(host(os.Args[1:]))
}

// reaped is one child the reaper waited for.
type reaped struct {
	pid    int
	status unix.WaitStatus
}

// host runs argv as its child and stays until no process of the run is
// left: the command's children whose parent ended are adopted here. When
// the supervisor dies (its death signal is SIGTERM) or asks (SIGTERM,
// SIGHUP, SIGINT), it ends every process of the run, then itself.
func host(argv []string) int {
	// The command must not hold the status pipe: its end is how the
	// supervisor learns that the reaper is gone.
	unix.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")
	// Caught, not ignored: a caught signal is back to its default in the
	// command, an ignored one would stay ignored.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	// Every process of the run whose parent ends is adopted here rather
	// than by init, whatever session, group or environment it has.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(status, "error cannot become a subreaper: %v\n", err)
		return 1
	}
	pid, err := startCommand(argv)
	if err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		return 1
	}
	// The output pipe is the command's: the reaper lets go of it, so its
	// reader sees the end once the command and what it started close it.
	if err := releaseOutput(); err != nil {
		fmt.Fprintf(status, "error %v\n", err)
		EndTree(os.Getpid())
		return 1
	}
	children := make(chan reaped, 16)
	go reapAll(children)
	h := &hostState{cmd: pid, status: status}
	for {
		select {
		case c, ok := <-children:
			if !ok {
				return 0 // no process of the run is left
			}
			h.reaped(c)
		case <-sigs:
			EndTree(os.Getpid())
			drain(children, h.reaped)
			return 0
		}
	}
}

// hostState is what host tracks: the command's pid, and the pipe for its
// end until that is told.
type hostState struct {
	cmd    int
	status *os.File
}

func (h *hostState) reaped(c reaped) {
	if c.pid != h.cmd || h.status == nil {
		return
	}
	fmt.Fprintf(h.status, "exit %d\n", uint32(c.status))
	_ = h.status.Close()
	h.status = nil
}

// drain reaps what was just killed, so nothing is left a zombie for init
// (a container's init may not reap), for at most endWait, handing each
// child reaped to f.
func drain(children <-chan reaped, f func(reaped)) {
	t := time.NewTimer(endWait)
	defer t.Stop()
	for {
		select {
		case c, ok := <-children:
			if !ok {
				return
			}
			f(c)
		case <-t.C:
			return
		}
	}
}

// startCommand starts argv with the reaper's files, directory and
// environment; if the reaper dies, so does the command.
func startCommand(argv []string) (int, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return 0, err
	}
	p, err := os.StartProcess(path, argv, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return 0, err
	}
	pid := p.Pid
	// Waited for by reapAll, never through p.
	_ = p.Release()
	return pid, nil
}

// releaseOutput points the reaper's stdout and stderr at /dev/null.
func releaseOutput() error {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	for _, fd := range []int{1, 2} {
		if err := unix.Dup3(int(null.Fd()), fd, 0); err != nil {
			return fmt.Errorf("release the output: %w", err)
		}
	}
	return nil
}

// reapAll waits for every child, the command and the adopted ones, and
// closes out once none is left.
func reapAll(out chan<- reaped) {
	defer close(out)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: no child left
		}
		out <- reaped{pid: pid, status: ws}
	}
}
