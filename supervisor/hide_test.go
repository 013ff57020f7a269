package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func dumpable() uintptr {
	r, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
	return r
}

// TestHideEnvironment runs itself in a child (the flag is the whole
// process's): after HideEnvironment the process is not dumpable.
func TestHideEnvironment(t *testing.T) {
	t.Parallel()
	if os.Getenv("CICY_TEST_HIDE_CHILD") == "1" {
		if err := HideEnvironment(); err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("dumpable=%d\n", dumpable())
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHideEnvironment$")
	cmd.Env = append(os.Environ(), "CICY_TEST_HIDE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "dumpable=0\n") {
		t.Fatalf("child said: %s", out)
	}
}
