package reaper

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Proc is one process as /proc shows it.
type Proc struct {
	PID, PPID, PGID int
	// Start is the start time in clock ticks since boot: a pid and its
	// start time name one process, even after the pid is reused.
	Start uint64
	// State is the state letter: R, S, D, Z (zombie)…
	State byte
}

// Alive reports whether the process runs (a zombie has ended).
func (p Proc) Alive() bool { return p.State != 'Z' && p.State != 'X' }

// Stat reads /proc/<pid>/stat; ok is false when the process is gone.
func Stat(pid int) (Proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	return parseStat(pid, string(b))
}

// parseStat reads the fields after the command name, which may hold
// spaces and parentheses: it ends at the last ')'.
func parseStat(pid int, s string) (Proc, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Proc{}, false
	}
	return Proc{PID: pid, PPID: ppid, PGID: pgid, Start: start, State: f[0][0]}, true
}

// Processes lists every process of the machine (of this pid namespace).
func Processes() []Proc {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	ps := make([]Proc, 0, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if p, ok := Stat(pid); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// Descendants lists the live processes whose chain of parents reaches
// root (root itself not included). A process whose parent ended was
// adopted by the nearest subreaper above it, or by init: it is a
// descendant of root only if root is that subreaper or above it. Init
// (and pid 0) has no descendants here: they would be every process.
func Descendants(root int) []Proc {
	if root <= 1 {
		return nil
	}
	return DescendantsIn(Processes(), root)
}

// Kill sends sig to p if p is still the process that was listed: the pid
// is held by a pidfd and its start time checked again, so a pid reused
// since the listing is left alone. It reports whether the signal went.
func Kill(p Proc, sig syscall.Signal) bool {
	fd, err := unix.PidfdOpen(p.PID, 0)
	if errors.Is(err, unix.ENOSYS) {
		// A kernel older than 5.3: check and kill, with the small race
		// pidfds close.
		if cur, ok := Stat(p.PID); !ok || cur.Start != p.Start {
			return false
		}
		return syscall.Kill(p.PID, sig) == nil
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if cur, ok := Stat(p.PID); !ok || cur.Start != p.Start || !cur.Alive() {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// endWait bounds how long EndTree keeps killing: a process stuck in the
// kernel (state D) takes its SIGKILL only when it wakes.
const endWait = 5 * time.Second

// EndTree kills (SIGKILL) every descendant of root, again and again until
// none is left alive, for at most endWait: a process may fork while its
// siblings are being killed, and a killed process's children are adopted
// by the subreaper (root, when root is one) only once it is dead. root
// itself is not signalled. It returns how many processes it killed.
func EndTree(root int) int {
	killed := map[Proc]bool{}
	deadline := time.Now().Add(endWait)
	for {
		ds := Descendants(root)
		if len(ds) == 0 {
			return len(killed)
		}
		// One killed a moment ago may still be listed (a signal is taken
		// on the way back to user space): killing it again is harmless.
		for _, d := range ds {
			if Kill(d, syscall.SIGKILL) {
				killed[d] = true
			}
		}
		if time.Now().After(deadline) {
			return len(killed)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Tree remembers the descendants of a process seen across several looks,
// so those that outlive the process (adopted by init once it ended) can
// still be ended: a pane's stop looks while it waits for the program.
type Tree struct {
	root Proc // as it was when the tree began; PID 0 if it had ended
	seen map[int]Proc
}

// NewTree starts remembering the descendants of root.
func NewTree(root int) *Tree {
	p, ok := Stat(root)
	if !ok || !p.Alive() {
		p = Proc{}
	}
	return &Tree{root: p, seen: map[int]Proc{}}
}

// same reports whether p still names the process it named (the same pid
// and start time), alive.
func same(p Proc) bool {
	cur, ok := Stat(p.PID)
	return ok && cur.Start == p.Start && cur.Alive()
}

// Look adds the descendants of root alive now.
func (t *Tree) Look() {
	if t.root.PID == 0 || !same(t.root) {
		return // once root ended, its pid may name another process
	}
	for _, d := range Descendants(t.root.PID) {
		t.seen[d.PID] = d
	}
}

// End kills every process the looks saw that still runs (the same pid and
// start time), with its own descendants, and what root still has.
func (t *Tree) End() {
	t.Look()
	if t.root.PID != 0 && same(t.root) {
		EndTree(t.root.PID)
	}
	for _, p := range t.seen {
		if !same(p) {
			continue // gone, or its pid now names another process
		}
		// Its descendants first, while it still holds them.
		EndTree(p.PID)
		Kill(p, syscall.SIGKILL)
	}
}

// DescendantsIn is Descendants from a listing already made (Processes),
// for looking at several trees with one read of /proc.
func DescendantsIn(ps []Proc, root int) []Proc {
	if root <= 1 {
		return nil
	}
	children := map[int][]Proc{}
	for _, p := range ps {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []Proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			queue = append(queue, c.PID)
			if c.Alive() {
				out = append(out, c)
			}
		}
	}
	return out
}

// Same reports whether p still names the process it named (the same pid
// and start time), alive.
func Same(p Proc) bool { return same(p) }

// EndProcs ends the processes (those still the ones listed) and all they
// started that is still in their trees: SIGTERM, up to grace for them to
// go, then SIGKILL, however they handle SIGTERM.
func EndProcs(ps []Proc, grace time.Duration) {
	live := func() []Proc {
		var out []Proc
		for _, p := range ps {
			if same(p) {
				out = append(out, p)
			}
		}
		return out
	}
	for _, p := range live() {
		for _, d := range Descendants(p.PID) {
			Kill(d, syscall.SIGTERM)
			Kill(d, syscall.SIGCONT)
		}
		Kill(p, syscall.SIGTERM)
		Kill(p, syscall.SIGCONT)
	}
	deadline := time.Now().Add(grace)
	for len(live()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range live() {
		EndTree(p.PID)
		Kill(p, syscall.SIGKILL)
	}
}
