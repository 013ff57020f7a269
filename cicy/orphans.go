package cicy

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cicy-ai/cicy-agent/reaper"
)

// A running shell tool is recorded in .cicy/history/tool.pgid as
// "<pgid> <leader start time> <marker>". The leader is the run's reaper
// (package reaper), a subreaper that every process of the run stays a
// descendant of, and which ends them all itself when the supervisor dies,
// even by kill -9. The record is for what that leaves: the next start
// kills the reaper's whole tree if the reaper still runs, the recorded
// group, and every process carrying the marker, a random value the
// command and every process it starts inherit in their environment
// (CICY_TOOL_RUN=<marker>). A pid or group is killed only while it is
// still the run's (the leader's start time matches, or a process of it
// still carries the marker), so a reused pid is left alone.

// ToolMarkerVar names the environment variable that marks a tool's
// processes.
const ToolMarkerVar = "CICY_TOOL_RUN"

func toolGroupFile(dir string) string { return filepath.Join(dir, "tool.pgid") }

// toolRun is one run of the shell tool, recorded while it runs.
type toolRun struct {
	dir    string
	marker string
}

// newToolRun records a run about to start (pgid 0: not started yet), so a
// crash between the start and the record still leaves the marker behind.
func newToolRun(dir string) *toolRun {
	var b [16]byte
	_, _ = rand.Read(b[:])
	r := &toolRun{dir: dir, marker: hex.EncodeToString(b[:])}
	r.write(0)
	return r
}

// env is what the command's environment gets on top of its own.
func (r *toolRun) env() []string { return []string{ToolMarkerVar + "=" + r.marker} }

// started records the command's process group.
func (r *toolRun) started(pgid int) { r.write(pgid) }

func (r *toolRun) write(pgid int) {
	st := "-"
	if pgid > 0 {
		st = procStartTime(pgid)
	}
	_ = os.WriteFile(toolGroupFile(r.dir), []byte(fmt.Sprintf("%d %s %s\n", pgid, st, r.marker)), 0o600)
}

// done removes the record: the run ended while the supervisor lived.
func (r *toolRun) done() { clearToolGroup(r.dir) }

func clearToolGroup(dir string) { _ = os.Remove(toolGroupFile(dir)) }

// killLeftoverToolGroup kills what a tool run that a crashed supervisor
// left behind still runs; it reports whether it killed anything.
func killLeftoverToolGroup(dir string) bool {
	b, err := os.ReadFile(toolGroupFile(dir))
	if err != nil {
		return false
	}
	defer clearToolGroup(dir)
	f := strings.Fields(string(b))
	if len(f) != 2 && len(f) != 3 {
		return false
	}
	pgid, err := strconv.Atoi(f[0])
	if err != nil || pgid < 0 || pgid == 1 {
		return false
	}
	leaderOurs := pgid > 1 && procStartTime(pgid) == f[1]
	killed := leaderOurs && reaper.EndTree(pgid) > 0
	if len(f) == 2 {
		// A record from before markers: only a live leader proves the
		// group is ours.
		groupKilled := leaderOurs && syscall.Kill(-pgid, syscall.SIGKILL) == nil
		return killed || groupKilled
	}
	marker := ToolMarkerVar + "=" + f[2] + "\x00"
	// Killing takes a moment and a process may fork meanwhile: repeat
	// until no process carries the marker (bounded).
	for range 50 {
		pids, groupOurs := markedProcesses(marker, pgid)
		groupOurs = groupOurs || leaderOurs
		leaderOurs = false
		if groupOurs && syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			killed = true
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = true
			}
		}
		if len(pids) == 0 && !groupOurs {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return killed
}

// markedProcesses lists the live processes whose environment holds marker
// (NAME=VALUE\x00), and whether one of them is in process group pgid.
func markedProcesses(marker string, pgid int) (pids []int, inGroup bool) {
	environs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range environs {
		b, err := os.ReadFile(p)
		// The marker is compared whole: at the start or after a NUL.
		if err != nil || !(strings.HasPrefix(string(b), marker) || strings.Contains(string(b), "\x00"+marker)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		pids = append(pids, pid)
		if pgid > 1 && procGroup(pid) == pgid {
			inGroup = true
		}
	}
	return pids, inGroup
}

// procStat returns the fields of /proc/<pid>/stat after the command name
// (which may hold spaces), or nil when the process is gone.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return nil
	}
	return f
}

// procStartTime is field 22 of /proc/<pid>/stat (start time in ticks since
// boot), or "" when the process is gone.
func procStartTime(pid int) string {
	if f := procStat(pid); f != nil {
		return f[19]
	}
	return ""
}

// procGroup is field 5 of /proc/<pid>/stat (the process group), or 0.
func procGroup(pid int) int {
	if f := procStat(pid); f != nil {
		n, _ := strconv.Atoi(f[2])
		return n
	}
	return 0
}
