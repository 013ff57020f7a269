package reaper

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A cgroup v2 group holds every process started inside it, whatever the
// process does to escape its parent: a new session (setsid), an ignored
// SIGHUP (nohup), a double fork, a cleared environment. Ending a group
// ends all of them, which is how a pane's end takes everything it
// started (systemd ends a service the same way).

// CgroupRoots are the folders under which a program may make groups of its
// own, best first: the cgroup2 file system's root (writable by root; on a
// hybrid machine it is mounted at /sys/fs/cgroup/unified), then this
// process's own group (writable where it was delegated to the user).
// Empty when the machine has no cgroup2 file system.
func CgroupRoots() []string {
	mount := cgroup2Mount()
	if mount == "" {
		return nil
	}
	roots := []string{mount}
	if own := ownCgroup(); own != "" && own != "/" {
		roots = append(roots, filepath.Join(mount, own))
	}
	return roots
}

// cgroup2Mount is where the cgroup2 file system is mounted ("" if nowhere).
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source opts
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		rf, lf := strings.Fields(right), strings.Fields(left)
		if len(rf) > 0 && rf[0] == "cgroup2" && len(lf) >= 5 && lf[3] == "/" {
			return lf[4]
		}
	}
	return ""
}

// ownCgroup is this process's group in the cgroup2 hierarchy ("0::/path").
func ownCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p
		}
	}
	return ""
}

// Group is one cgroup v2 group: its folder.
type Group string

// Procs lists the processes in the group (none when it is gone).
func (g Group) Procs() []int {
	if g == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(string(g), "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Populated reports whether a live process is in the group (or below it).
func (g Group) Populated() bool {
	if g == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(string(g), "cgroup.events"))
	if err != nil {
		return len(g.Procs()) > 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "populated "); ok {
			return v != "0"
		}
	}
	return len(g.Procs()) > 0
}

// Signal sends sig to every process of the group but those in skip. A
// process is held by a pidfd and checked to be in the group still, so a
// pid reused since the listing is left alone. It returns how many it
// signalled.
func (g Group) Signal(sig syscall.Signal, skip ...int) int {
	n := 0
	for _, pid := range g.Procs() {
		if pid <= 1 || pid == os.Getpid() || slices.Contains(skip, pid) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if errors.Is(err, unix.ENOSYS) && syscall.Kill(pid, sig) == nil {
				n++
			}
			continue
		}
		if g.Holds(pid) && unix.PidfdSendSignal(fd, sig, nil, 0) == nil {
			n++
		}
		unix.Close(fd)
	}
	return n
}

// Holds reports whether pid is in the group now.
func (g Group) Holds(pid int) bool {
	if g == "" {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p != "/" && strings.HasSuffix(string(g), filepath.Clean(p))
		}
	}
	return false
}

// End ends every process of the group: SIGTERM (with SIGCONT, for a
// stopped one), up to grace for them to go, then SIGKILL to what is left,
// however it handles or ignores SIGTERM; then it removes the group. It
// returns once the group is empty, or after a few seconds more (a process
// stuck in the kernel takes its SIGKILL when it wakes).
func (g Group) End(grace time.Duration) {
	if _, err := os.Stat(string(g)); g == "" || err != nil {
		return
	}
	if g.Populated() {
		g.Signal(syscall.SIGTERM)
		g.Signal(syscall.SIGCONT)
		g.waitEmpty(grace)
	}
	if g.Populated() {
		g.Kill()
	}
	g.Remove()
}

// Kill sends SIGKILL to every process of the group, again until it is
// empty (a process may fork meanwhile), for at most endWait: cgroup.kill
// does it in one write where the kernel has it (Linux 5.14).
func (g Group) Kill() {
	deadline := time.Now().Add(endWait)
	for g.Populated() {
		if err := os.WriteFile(filepath.Join(string(g), "cgroup.kill"), []byte("1"), 0); err != nil {
			g.Signal(syscall.SIGKILL)
		}
		if !g.waitEmpty(100*time.Millisecond) && time.Now().After(deadline) {
			return
		}
	}
}

// waitEmpty waits up to d for the group to be empty; it reports whether
// it is.
func (g Group) waitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for g.Populated() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Remove removes the group's folder if it is empty: a dead process leaves
// its group a moment after its end.
func (g Group) Remove() {
	if g == "" {
		return
	}
	for i := 0; i < 50; i++ {
		err := unix.Rmdir(string(g))
		if err == nil || errors.Is(err, unix.ENOENT) || !errors.Is(err, unix.EBUSY) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
