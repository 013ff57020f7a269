package reaper

import (
	"os/exec"
	"testing"
)

// A Tree whose root ended leaves alone the process its pid names now, and
// that process's descendants: the tree's root is recorded with another
// start time, as after a reuse of its pid.
func TestTreeOfAnEndedRootKillsNoStranger(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", "sleep 300 & echo started; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { EndTree(cmd.Process.Pid); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := out.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	root, ok := Stat(cmd.Process.Pid)
	if !ok {
		t.Fatal("sh is not running")
	}
	root.Start++
	stale := &Tree{root: root, seen: map[int]Proc{}}
	stale.Look()
	// A wrong kill would be over: EndTree returns once what it killed is
	// dead.
	stale.End()
	if len(Descendants(cmd.Process.Pid)) == 0 {
		t.Fatal("a tree whose root ended killed what the pid's new owner runs")
	}
}
