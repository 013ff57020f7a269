package pane

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cicy-ai/cicy-agent/reaper"
)

// Each tmux pane's program runs in a cgroup v2 group of its own where the
// machine lets this process make one (root, or a delegated group): the
// pane's wrapper sh moves itself into the group before it starts the
// program, so every process the program starts is in it, whatever it
// does to escape (setsid, nohup, a double fork, a cleared environment).
// When the pane ends — a stop, the program's exit, its session or the
// whole tmux server gone, or found so by the next supervisor — what is
// left in its group gets SIGTERM, then SIGKILL after the grace period.
//
// A group is <base>/<session>.<start>: a pane restarted under the same
// name gets a new group, so the end of the old one cannot touch it. The
// groups outlive the supervisor (they are folders of the cgroup file
// system), which is how the next one finds those of panes that ended
// while none ran.

// DefaultGrace is how long what a pane left running has between SIGTERM and
// SIGKILL when the pane ends other than by a stop (which has its own).
const DefaultGrace = 3 * time.Second

// groupBases are the folders that may hold this server's groups, best
// first (see reaper.CgroupRoots).
func (s *TmuxServer) groupBases() []string {
	if s.noGroups {
		return nil
	}
	var bases []string
	for i, root := range reaper.CgroupRoots() {
		if i == 0 {
			bases = append(bases, filepath.Join(root, "cicy-agent", s.Socket))
		} else {
			bases = append(bases, filepath.Join(root, "cicy-agent-"+s.Socket))
		}
	}
	return bases
}

// newGroup makes the group of a pane that starts now; "" when the machine
// gives none (the pane's process tree is then all that ends it).
func (s *TmuxServer) newGroup(name string) reaper.Group {
	for _, base := range s.groupBases() {
		if err := os.MkdirAll(base, 0o755); err != nil {
			continue
		}
		dir := filepath.Join(base, name+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
		if err := os.Mkdir(dir, 0o755); err == nil {
			return reaper.Group(dir)
		}
	}
	return ""
}

// NewGroup makes a group for a PTY pane of this home (Options.Group); ""
// when the machine gives none. Its leftovers are ended by EndLeftovers
// like a tmux pane's.
func (s *TmuxServer) NewGroup(name string) reaper.Group {
	endGroups(s.groups(name), s.grace())
	return s.newGroup(name)
}

// groups lists this server's groups (of every pane when name is "").
func (s *TmuxServer) groups(name string) []reaper.Group {
	var out []reaper.Group
	for _, base := range s.groupBases() {
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			n, _, ok := strings.Cut(e.Name(), ".")
			if e.IsDir() && ok && (name == "" || n == name) {
				out = append(out, reaper.Group(filepath.Join(base, e.Name())))
			}
		}
	}
	return out
}

// grace is the time a pane's leftovers get between SIGTERM and SIGKILL.
func (s *TmuxServer) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return DefaultGrace
}

// endGroups ends the groups (in parallel) and waits.
func endGroups(gs []reaper.Group, grace time.Duration) {
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.End(grace)
		}()
	}
	wg.Wait()
}

// EndLeftovers ends every process left by a pane of this server that is
// not running now: those of panes whose session ended (a killed tmux
// server) while no supervisor watched. A supervisor calls it once it has
// adopted the running panes.
func (s *TmuxServer) EndLeftovers() int {
	s.mu.Lock()
	owned := map[reaper.Group]bool{}
	running := map[string]bool{}
	for _, p := range s.panes {
		if p.Status().Running() {
			owned[p.group] = true
			running[p.name] = true
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, name := range s.recordedNames() {
		if !running[name] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.endRecorded(name, s.grace())
			}()
		}
	}
	defer wg.Wait()
	var left []reaper.Group
	for _, g := range s.groups("") {
		if !owned[g] {
			left = append(left, g)
		}
	}
	n := 0
	for _, g := range left {
		n += len(g.Procs())
	}
	if n > 0 {
		s.log.WithField("processes", n).Info("Ending what panes that ended left running")
	}
	endGroups(left, s.grace())
	s.removeBases()
	return n
}

// removeBases removes this server's group folders once they are empty.
func (s *TmuxServer) removeBases() {
	for _, base := range s.groupBases() {
		_ = os.Remove(base)
	}
}

// ownGroup finds, among the groups of an adopted pane's name, the one
// that holds its wrapper; the others are left from earlier starts.
func (s *TmuxServer) ownGroup(name string, pid int) reaper.Group {
	if pid <= 1 {
		return ""
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	for _, g := range s.groups(name) {
		for _, l := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(l, "0::"); ok && p != "/" && strings.HasSuffix(string(g), p) {
				return g
			}
		}
	}
	return ""
}

// endGroup ends what the pane's program left running, once; the channel
// is closed when that is done.
func (p *TmuxPane) endGroup(grace time.Duration) <-chan struct{} {
	p.groupOnce.Do(func() {
		go func() {
			defer close(p.groupDone)
			if p.group != "" {
				p.group.End(grace)
			}
			p.srv.endRecorded(p.name, grace)
		}()
	})
	return p.groupDone
}

// Where the machine gives no cgroup, a pane's program runs under a keeper
// (see reaper.KeeperArg), a subreaper that keeps what escapes the program
// in the pane's process tree and ends it when the program ends or the
// terminal hangs up; and the poller records the pane's processes (pid and
// start time) in a file beside its exit status, so that what outlives the
// keeper too (a kill -9) is ended by the next supervisor.

// recordEvery is how often the poller looks at the process trees of the
// panes without a cgroup (a look reads /proc/*/stat).
const recordEvery = 2 * time.Second

// maxRecorded is how many processes a pane's record holds before those
// that ended are dropped from it.
const maxRecorded = 1000

// procsFile is where the processes of a pane without a group are recorded.
func (s *TmuxServer) procsFile(name string) string {
	return filepath.Join(s.home, "run", "tmux", name+".procs")
}

// recording reports whether a registered pane has no group (or its
// wrapper could not move into it).
func (s *TmuxServer) recording() bool {
	for _, p := range s.registered() {
		if p.ungrouped() {
			return true
		}
	}
	return false
}

// ungrouped reports whether the pane's processes are not known to be in its
// group: it has none, or its wrapper could not move into it (looked at
// once, by the poller, when the wrapper runs).
func (p *TmuxPane) ungrouped() bool {
	if p.group == "" || p.outside.Load() {
		return true
	}
	if p.joined.Load() {
		return false
	}
	pid := p.Status().PID
	if pid <= 1 {
		return false // not started yet
	}
	if p.group.Holds(pid) {
		p.joined.Store(true)
		return false
	}
	// Once the wrapper runs the program, it has tried.
	if w, ok := reaper.Stat(pid); ok && w.Alive() && len(reaper.Descendants(pid)) > 0 && !p.group.Holds(pid) {
		p.outside.Store(true)
		return true
	}
	return false
}

// record adds the processes now in the trees of the running panes without
// a group to their files. Only the poller calls it.
func (s *TmuxServer) record() {
	var ps []reaper.Proc
	for _, p := range s.registered() {
		st := p.Status()
		if !p.ungrouped() || !st.Running() || st.PID <= 1 {
			continue
		}
		if ps == nil {
			ps = reaper.Processes()
		}
		var add []reaper.Proc
		for _, d := range reaper.DescendantsIn(ps, st.PID) {
			if old, ok := p.seen[d.PID]; !ok || old.Start != d.Start {
				p.seen[d.PID] = d
				add = append(add, d)
			}
		}
		if len(add) == 0 {
			continue
		}
		flags := os.O_CREATE | os.O_APPEND | os.O_WRONLY
		if len(p.seen) > maxRecorded {
			// A shell runs many short commands: the file keeps the live.
			add = add[:0]
			for pid, d := range p.seen {
				if reaper.Same(d) {
					add = append(add, d)
				} else {
					delete(p.seen, pid)
				}
			}
			flags = os.O_CREATE | os.O_TRUNC | os.O_WRONLY
		}
		var b strings.Builder
		for _, d := range add {
			fmt.Fprintf(&b, "%d %d\n", d.PID, d.Start)
		}
		f, err := os.OpenFile(s.procsFile(p.name), flags, 0o600)
		if err == nil {
			_, err = f.WriteString(b.String())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			p.opts.Log.WithError(err).Warn("Could not record the pane's processes")
		}
	}
}

// endRecorded ends the recorded processes of the pane name that still run
// (the same pid and start time), and forgets them.
func (s *TmuxServer) endRecorded(name string, grace time.Duration) {
	path := s.procsFile(name)
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var ps []reaper.Proc
	for _, l := range strings.Split(string(b), "\n") {
		var p reaper.Proc
		if _, err := fmt.Sscanf(l, "%d %d", &p.PID, &p.Start); err == nil && p.PID > 1 {
			ps = append(ps, p)
		}
	}
	reaper.EndProcs(ps, grace)
	_ = os.Remove(path)
}

// recordedNames lists the panes with a file of recorded processes.
func (s *TmuxServer) recordedNames() []string {
	matches, _ := filepath.Glob(filepath.Join(s.home, "run", "tmux", "*.procs"))
	names := make([]string, 0, len(matches))
	for _, m := range matches {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".procs"))
	}
	return names
}

// keeperEnv tells a pane's wrapper how to run its program under a keeper
// (this very program) with the server's grace, when the pane has no group
// or the wrapper could not move into it; none when this program cannot be
// found.
func (s *TmuxServer) keeperEnv() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{"CICY_KEEPER=" + exe, reaper.KeeperGraceEnv + "=" + strconv.FormatInt(s.grace().Milliseconds(), 10)}
}

// SocketPath is where tmux puts this server's socket: the tmux socket
// folder ($TMUX_TMPDIR, else /tmp, then tmux-<uid>) and the -L name.
func (s *TmuxServer) SocketPath() string {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, "tmux-"+strconv.Itoa(os.Getuid()), s.Socket)
}

// RemoveDeadSocket removes the server's socket when no server listens on
// it: tmux leaves its socket behind when it exits. A server on its way out
// may still answer for a moment: it waits up to wait for it to be gone. It
// reports whether it removed the socket.
func (s *TmuxServer) RemoveDeadSocket(wait time.Duration) bool {
	path := s.SocketPath()
	deadline := time.Now().Add(wait)
	for {
		if _, err := os.Lstat(path); err != nil {
			return false
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err != nil {
			// Only a socket known dead: not a server too busy, nor a folder
			// that is not ours.
			return errors.Is(err, syscall.ECONNREFUSED) && os.Remove(path) == nil
		}
		c.Close()
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
