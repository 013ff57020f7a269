package cicy

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A running shell tool's process group is recorded in
// .cicy/history/tool.pgid ("<pgid> <start time>"). The tool runs in its own
// group, so when the supervisor is killed (kill -9) that group outlives it;
// the next start kills it (checking the start time, so a reused pid is
// left alone).

func toolGroupFile(dir string) string { return filepath.Join(dir, "tool.pgid") }

func recordToolGroup(dir string, pgid int) {
	st := procStartTime(pgid)
	_ = os.WriteFile(toolGroupFile(dir), []byte(fmt.Sprintf("%d %s\n", pgid, st)), 0o644)
}

func clearToolGroup(dir string) { _ = os.Remove(toolGroupFile(dir)) }

// killLeftoverToolGroup kills the group a crashed supervisor left running.
func killLeftoverToolGroup(dir string) bool {
	b, err := os.ReadFile(toolGroupFile(dir))
	if err != nil {
		return false
	}
	defer clearToolGroup(dir)
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false
	}
	pgid, err := strconv.Atoi(f[0])
	if err != nil || pgid <= 1 || procStartTime(pgid) != f[1] {
		return false
	}
	return syscall.Kill(-pgid, syscall.SIGKILL) == nil
}

// procStartTime is field 22 of /proc/<pid>/stat (start time in ticks since
// boot), or "" when the process is gone.
func procStartTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields count from after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
