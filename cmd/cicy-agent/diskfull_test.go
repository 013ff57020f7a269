package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// canMountTmpfs reports whether this process may mount a tmpfs (root,
// with the right to mount): the [tmpfs] condition of the scripts that
// need a tiny real disk.
var canMountTmpfs = sync.OnceValue(func() bool {
	if os.Geteuid() != 0 {
		return false
	}
	dir, err := os.MkdirTemp("", "cicy-tmpfs-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k") != nil {
		return false
	}
	return syscall.Unmount(dir, syscall.MNT_DETACH) == nil
})

// tinyhome SIZE mounts a tmpfs of SIZE bytes as the script's home
// ($CICY_HOME, which must not exist yet). At the end of the script the
// home's supervisor is stopped, then the disk unmounted.
func cmdTinyHome(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tinyhome <size in bytes>")
	}
	size, err := strconv.Atoi(args[0])
	ts.Check(err)
	home := ts.Getenv("CICY_HOME")
	ts.Check(os.Mkdir(home, 0o700))
	ts.Check(syscall.Mount("tmpfs", home, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)))
	ts.Defer(func() {
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "--home", home, "shutdown")
		cmd.Env = os.Environ()
		_ = cmd.Run()
		if err := syscall.Unmount(home, syscall.MNT_DETACH); err != nil {
			ts.Logf("unmount %s: %v", home, err)
		}
	})
}
