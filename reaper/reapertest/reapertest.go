// Package reapertest finds the processes a test started by a unique
// argument, waits for them to be gone, and kills whatever is left when
// the test ends, passed or failed.
package reapertest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/reaper"
)

// Wait is how long WaitGone and WaitAlive wait.
const Wait = 15 * time.Second

// Arg returns an argument no other process has, for `sleep`: a number of
// seconds (about eleven days) with a random fraction. Every process that
// has it in its command line is killed when the test ends.
func Arg(t testing.TB) string {
	t.Helper()
	arg := fmt.Sprintf("987654.%09d", rand.IntN(1e9))
	t.Cleanup(func() {
		for _, pid := range Pids(arg) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return arg
}

// Pids lists the live processes (zombies left out) with arg as one of
// their arguments.
func Pids(arg string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(append([]byte{0}, b...), []byte("\x00"+arg+"\x00")) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if p, ok := reaper.Stat(pid); ok && p.Alive() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WaitAlive waits until `sleep` runs with arg and returns its pid: not
// a program on its way to it (`env … setsid sleep arg` has arg too, and
// has not left its session yet).
func WaitAlive(t testing.TB, arg string) int {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for {
		for _, pid := range Pids(arg) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); string(bytes.TrimSpace(comm)) == "sleep" {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process with argument %s started", arg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitGone waits until no process with arg runs; what describes the moment
// for the failure message.
func WaitGone(t testing.TB, arg, what string) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for {
		pids := Pids(arg)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still running: %s", what, describe(pids))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// PidGone waits until pid has ended (gone or a zombie).
func PidGone(t testing.TB, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for {
		if p, ok := reaper.Stat(pid); !ok || !p.Alive() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still running: %s", what, describe([]int{pid}))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func describe(pids []int) string {
	var b bytes.Buffer
	for _, pid := range pids {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		p, _ := reaper.Stat(pid)
		fmt.Fprintf(&b, "\n  pid %d (parent %d, group %d): %s", pid, p.PPID, p.PGID, bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '}))
	}
	return b.String()
}
