package reaper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Spec is a command to run under a reaper.
type Spec struct {
	Argv []string
	Dir  string
	// Env is the command's environment (nil: this process's). The reaper
	// runs with it too.
	Env []string
	// Output gets the command's stdout and stderr as one stream, in the
	// order written (nil: discarded).
	Output io.Writer
	// WaitDelay bounds how long Wait waits for the output once the command
	// ended: a process it left running may hold the output open for ever.
	WaitDelay time.Duration
}

// Run is a command running under its reaper, which leads the run's
// process group.
type Run struct {
	cmd       *exec.Cmd
	out       *os.File // the output pipe's read end
	status    *os.File // the status pipe's read end
	waitDelay time.Duration
	copied    chan struct{} // the output was read to its end, or let go

	// mu is held while the run is being ended, and while the reaper is
	// reaped: its pid cannot name another process while End walks its
	// descendants.
	mu     sync.Mutex
	reaped bool
	exited chan struct{} // the reaper has exited and been reaped
}

// Start starts s.Argv under a new reaper: this very program run again
// (/proc/self/exe, the running binary even if its file was replaced).
func Start(s Spec) (*Run, error) {
	if len(s.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	if s.Dir != "" {
		if fi, err := os.Stat(s.Dir); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("working directory %s is not a directory", s.Dir)
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", Args: append([]string{hostName}, s.Argv...),
		Dir: s.Dir, Env: s.Env, Stdout: outW, Stderr: outW, ExtraFiles: []*os.File{stW},
		// A process group of its own, which the command shares (a record
		// of the run names it); SIGTERM when this process dies, even by
		// kill -9, on which the reaper ends the run.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
	}
	err = cmd.Start()
	outW.Close()
	stW.Close()
	if err != nil {
		outR.Close()
		stR.Close()
		return nil, fmt.Errorf("start the reaper: %w", err)
	}
	r := &Run{cmd: cmd, out: outR, status: stR, waitDelay: s.WaitDelay, copied: make(chan struct{}), exited: make(chan struct{})}
	go r.copy(s.Output)
	go r.wait()
	return r, nil
}

// Pid is the reaper's pid, which is also the run's process group.
func (r *Run) Pid() int { return r.cmd.Process.Pid }

// Done is closed once the reaper has exited: no process of the run is
// left (or it was ended).
func (r *Run) Done() <-chan struct{} { return r.exited }

func (r *Run) copy(w io.Writer) {
	defer close(r.copied)
	if w == nil {
		w = io.Discard
	}
	_, _ = io.Copy(w, r.out)
}

// wait reaps the reaper once it exited; until then its pid is its own.
func (r *Run) wait() {
	var info unix.Siginfo
	for errors.Is(unix.Waitid(unix.P_PID, r.Pid(), &info, unix.WEXITED|unix.WNOWAIT, nil), unix.EINTR) {
	}
	r.mu.Lock()
	_ = r.cmd.Wait()
	r.reaped = true
	r.mu.Unlock()
	close(r.exited)
}

// Wait waits for the command to end, not for what it left running, then
// for its output, at most WaitDelay more. When ctx ends first it ends the
// run (End) and returns ctx's error. Call it once.
func (r *Run) Wait(ctx context.Context) (syscall.WaitStatus, error) {
	got := make(chan statusLine, 1)
	go func() { got <- readStatus(r.status) }()
	var st statusLine
	select {
	case st = <-got:
	case <-ctx.Done():
		r.End()
		// The read ends at the reaper's end, or now if End gave up on a
		// reaper stuck in the kernel.
		r.status.Close()
		<-got
		st.err = ctx.Err()
	}
	r.status.Close()
	t := time.NewTimer(r.waitDelay)
	defer t.Stop()
	select {
	case <-r.copied:
	case <-t.C:
		// Something the command left running holds the output.
	}
	r.out.Close()
	<-r.copied
	return st.ws, st.err
}

// statusLine is what the reaper told of the command's end.
type statusLine struct {
	ws  syscall.WaitStatus
	err error
}

func readStatus(f *os.File) statusLine {
	b, err := io.ReadAll(f)
	if err != nil {
		return statusLine{err: fmt.Errorf("read the command's status: %w", err)}
	}
	line := strings.TrimSpace(string(b))
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return statusLine{err: errors.New(msg)}
	}
	if n, ok := strings.CutPrefix(line, "exit "); ok {
		if ws, err := strconv.ParseUint(n, 10, 32); err == nil {
			return statusLine{ws: syscall.WaitStatus(ws)}
		}
	}
	return statusLine{err: errors.New("the command's reaper ended before the command did")}
}

// End ends the run: every process the command started, wherever it went
// (its own session, a cleared environment), then the reaper. It returns
// once the reaper is gone, after a few seconds at most (a process stuck in
// the kernel takes its SIGKILL when it wakes).
func (r *Run) End() {
	r.mu.Lock()
	if !r.reaped {
		EndTree(r.Pid())
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
	}
	r.mu.Unlock()
	select {
	case <-r.exited:
	case <-time.After(endWait):
	}
}

// over reports whether the reaper has exited.
func (r *Run) over() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// Set holds the runs whose command ended but which may have left
// processes running (a server started in the background), until End
// ends them all. The zero Set is ready to use.
type Set struct {
	mu    sync.Mutex
	runs  []*Run
	ended bool
}

// Keep adds r to the set; a set already ended ends r at once.
func (s *Set) Keep(r *Run) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		r.End()
		return
	}
	s.runs = slices.DeleteFunc(s.runs, (*Run).over)
	if !r.over() {
		s.runs = append(s.runs, r)
	}
	s.mu.Unlock()
}

// Len is how many runs of the set still have processes.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = slices.DeleteFunc(s.runs, (*Run).over)
	return len(s.runs)
}

// End ends every run of the set, and any kept after.
func (s *Set) End() {
	s.mu.Lock()
	s.ended = true
	runs := s.runs
	s.runs = nil
	s.mu.Unlock()
	for _, r := range runs {
		r.End()
	}
}
