package reaper_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/reaper"
	"github.com/cicy-ai/cicy-agent/reaper/reapertest"
)

// helperEnv makes the test binary a stand-in supervisor (see TestMain).
const helperEnv = "CICY_REAPER_TEST_SUPERVISOR"

// TestMain: with helperEnv set to an argument, the binary starts a run
// that leaves `sleep <argument>` in a session of its own with an empty
// environment, prints the reaper's pid, and waits to be killed.
func TestMain(m *testing.M) {
	if arg := os.Getenv(helperEnv); arg != "" {
		os.Exit(standInSupervisor(arg))
	}
	os.Exit(m.Run())
}

func standInSupervisor(arg string) int {
	r, err := reaper.Start(reaper.Spec{Argv: []string{"sh", "-c", "env -i setsid sleep " + arg + " >/dev/null 2>&1 &"}})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	if _, err := r.Wait(context.Background()); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println(r.Pid())
	for {
		time.Sleep(time.Hour)
	}
}

// safe is an output buffer the test may read while the run writes.
type safe struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safe) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safe) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, script string, out *safe) *reaper.Run {
	t.Helper()
	r, err := reaper.Start(reaper.Spec{Argv: []string{"bash", "-c", script}, Dir: t.TempDir(), Output: out, WaitDelay: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.End)
	return r
}

// A process that left its session and cleared its environment (the ways
// out of a process group and of an environment marker) is still the run's:
// its parent ended, the reaper adopted it, and End ends it.
func TestEndEndsAProcessThatLeftItsSession(t *testing.T) {
	t.Parallel()
	arg := reapertest.Arg(t)
	out := &safe{}
	r := start(t, "env -i setsid sleep "+arg+" >/dev/null 2>&1 & echo started", out)
	ws, err := r.Wait(context.Background())
	if err != nil || ws.ExitStatus() != 0 || out.String() != "started\n" {
		t.Fatalf("Wait: %v, status %v, output %q", err, ws, out.String())
	}
	pid := reapertest.WaitAlive(t, arg)
	p, _ := reaper.Stat(pid)
	if p.PPID != r.Pid() {
		t.Fatalf("the escaped sleep's parent is %d, not the reaper %d", p.PPID, r.Pid())
	}
	select {
	case <-r.Done():
		t.Fatal("the reaper left while a process of the run still runs")
	default:
	}
	r.End()
	reapertest.WaitGone(t, arg, "after End")
	select {
	case <-r.Done():
	case <-time.After(reapertest.Wait):
		t.Fatal("the reaper is still there after End")
	}
}

// A run that leaves nothing behind ends by itself, with the command.
func TestReaperLeavesWithTheLastProcess(t *testing.T) {
	t.Parallel()
	out := &safe{}
	r := start(t, "echo one; (sleep 0.2; echo two) & exit 3", out)
	ws, err := r.Wait(context.Background())
	if err != nil || ws.ExitStatus() != 3 {
		t.Fatalf("Wait: %v, status %v", err, ws)
	}
	// The background echo holds the output: Wait waited for it.
	if out.String() != "one\ntwo\n" {
		t.Fatalf("output %q", out.String())
	}
	select {
	case <-r.Done():
	case <-time.After(reapertest.Wait):
		t.Fatal("the reaper did not leave once the run was over")
	}
}

// A cancelled Wait ends the whole run, the escaped process too.
func TestCancelledWaitEndsTheRun(t *testing.T) {
	t.Parallel()
	arg := reapertest.Arg(t)
	r := start(t, "env -i setsid sleep "+arg+" & wait", &safe{})
	reapertest.WaitAlive(t, arg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v, want context.Canceled", err)
	}
	reapertest.WaitGone(t, arg, "after the cancelled Wait")
}

// The stand-in supervisor is killed with SIGKILL, the way a crash ends
// it: its reaper gets its death signal and ends the run, the escaped
// process too.
func TestSupervisorCrashEndsTheRun(t *testing.T) {
	t.Parallel()
	arg := reapertest.Arg(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+arg)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	reaperPid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("the stand-in supervisor said %q (%v)", line, err)
	}
	reapertest.WaitAlive(t, arg)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reapertest.WaitGone(t, arg, "after the supervisor was killed")
	reapertest.PidGone(t, reaperPid, "the reaper, after the supervisor was killed")
}

func TestExitStatusAndSignal(t *testing.T) {
	t.Parallel()
	r := start(t, "kill -KILL $$", &safe{})
	ws, err := r.Wait(context.Background())
	if err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("Wait: %v, status %v", err, ws)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	if _, err := reaper.Start(reaper.Spec{Argv: []string{"true"}, Dir: "/no/such/dir"}); err == nil || !strings.Contains(err.Error(), "working directory") {
		t.Fatalf("a missing directory: %v", err)
	}
	r, err := reaper.Start(reaper.Spec{Argv: []string{"no-such-command-for-the-reaper"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "executable file not found") {
		t.Fatalf("a missing command: %v", err)
	}
	select {
	case <-r.Done():
	case <-time.After(reapertest.Wait):
		t.Fatal("the reaper of a command that did not start is still there")
	}
}

// A set ends what its runs left running; a run kept after the set ended
// is ended at once.
func TestSetEndsItsRuns(t *testing.T) {
	t.Parallel()
	a, b := reapertest.Arg(t), reapertest.Arg(t)
	var s reaper.Set
	r1 := start(t, "setsid sleep "+a+" >/dev/null 2>&1 &", &safe{})
	if _, err := r1.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Keep(r1)
	done := start(t, "true", &safe{})
	if _, err := done.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done.Done()
	s.Keep(done)
	if n := s.Len(); n != 1 {
		t.Fatalf("the set holds %d runs, want the one with a process left", n)
	}
	reapertest.WaitAlive(t, a)
	s.End()
	reapertest.WaitGone(t, a, "after the set ended")

	r2 := start(t, "sleep "+b+" >/dev/null 2>&1 &", &safe{})
	if _, err := r2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Keep(r2)
	reapertest.WaitGone(t, b, "a run kept after the set ended")
}

// A Tree remembers a process it saw, and ends it after its parent ended
// and it went to init.
func TestTreeEndsWhatItSawAfterItsParentLeft(t *testing.T) {
	t.Parallel()
	arg := reapertest.Arg(t)
	cmd := exec.Command("sh", "-c", "setsid sleep "+arg+" >/dev/null 2>&1 & read x; exit 0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	tree := reaper.NewTree(cmd.Process.Pid)
	pid := reapertest.WaitAlive(t, arg)
	tree.Look()
	stdin.Close() // sh ends; the sleep is adopted elsewhere
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if p, _ := reaper.Stat(pid); p.PPID == cmd.Process.Pid {
		t.Fatal("the sleep still has its parent")
	}
	tree.End()
	reapertest.WaitGone(t, arg, "after Tree.End")
}

func TestDescendantsOfInitAreNone(t *testing.T) {
	t.Parallel()
	if ds := reaper.Descendants(1); ds != nil {
		t.Fatalf("Descendants(1) = %d processes", len(ds))
	}
}
