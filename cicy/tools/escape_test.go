package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/reaper"
	"github.com/cicy-ai/cicy-agent/reaper/reapertest"
)

// standInEnv makes the test binary a stand-in supervisor (see TestMain).
const standInEnv = "CICY_TOOLS_TEST_SUPERVISOR"

// TestMain: with standInEnv set to a shell command, the binary runs it as
// a cicy pane's shell call, keeps what it left running as a pane does,
// prints "ready" and waits to be killed.
func TestMain(m *testing.M) {
	if command := os.Getenv(standInEnv); command != "" {
		os.Exit(standInSupervisor(command))
	}
	os.Exit(m.Run())
}

func standInSupervisor(command string) int {
	in, _ := json.Marshal(map[string]any{"command": command})
	var kept reaper.Set
	out, isErr := ShellWatched(context.Background(), os.TempDir(), in, Watch{Keep: &kept})
	if isErr {
		fmt.Println("error", out)
		return 1
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour)
	}
}

// The supervisor dies by kill -9 after a shell call left a process
// running in a session of its own with an empty environment: the process
// ends with it.
func TestSupervisorKilledEndsWhatAShellCallLeftRunning(t *testing.T) {
	t.Parallel()
	arg := reapertest.Arg(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), standInEnv+"=env -i setsid sleep "+arg+" >/dev/null 2>&1 &", "HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the stand-in supervisor said %q (%v)", line, err)
	}
	reapertest.WaitAlive(t, arg)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reapertest.WaitGone(t, arg, "after the supervisor was killed")
}

// A timeout ends every process the command started, one that left the
// process group and the session with an empty environment too.
func TestShellTimeoutEndsAProcessThatLeftTheSession(t *testing.T) {
	isolateHome(t)
	arg := reapertest.Arg(t)
	out, isErr := Shell(context.Background(), t.TempDir(), shellIn(t, map[string]any{
		"command": "env -i setsid sleep " + arg + " & echo started; wait",
		"timeout": 1,
	}))
	if !isErr || !strings.HasPrefix(out, "error: command timed out") {
		t.Fatalf("got %q, %v", out, isErr)
	}
	reapertest.WaitGone(t, arg, "after the timeout")
}

// A call kept in a set leaves its background processes running until the
// set ends; Shell, which keeps none, ends them as it returns.
func TestShellBackgroundProcessesLiveUntilTheirSetEnds(t *testing.T) {
	isolateHome(t)
	kept, gone := reapertest.Arg(t), reapertest.Arg(t)
	var set reaper.Set
	defer set.End()
	command := func(arg string) json.RawMessage {
		return shellIn(t, map[string]any{"command": "env -i setsid sleep " + arg + " >/dev/null 2>&1 & echo started"})
	}
	if out, isErr := ShellWatched(context.Background(), t.TempDir(), command(kept), Watch{Keep: &set}); isErr || out != "started\n" {
		t.Fatalf("got %q, %v", out, isErr)
	}
	reapertest.WaitAlive(t, kept)
	if out, isErr := Shell(context.Background(), t.TempDir(), command(gone)); isErr || out != "started\n" {
		t.Fatalf("got %q, %v", out, isErr)
	}
	reapertest.WaitGone(t, gone, "after Shell returned")
	if len(reapertest.Pids(kept)) == 0 {
		t.Fatal("the kept call's process ended before its set")
	}
	set.End()
	reapertest.WaitGone(t, kept, "after the set ended")
}
