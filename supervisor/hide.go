package supervisor

import (
	"fmt"
	"syscall"
)

// HideEnvironment makes the supervisor process not dumpable: its memory
// and /proc/<pid>/environ, which hold the provider keys, can then be read
// only by root, not by the programs of its panes and tools, which run as
// the same user (a tool's parent is the supervisor: `cat
// /proc/$PPID/environ` would otherwise read the keys back). A child gets
// its own dumpable flag back when it execs a program. The cost: no core
// dump, and a debugger attaches only as root.
func HideEnvironment() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", e)
	}
	return nil
}
