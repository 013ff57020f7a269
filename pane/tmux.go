package pane

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/reaper"
)

// The tmux backend: each pane is a session w-N (window "main") on a tmux
// server private to one CICY_HOME (its own socket, never the user's
// default server), so panes outlive the supervisor and are re-adopted by
// the next one. One poller per server moves the panes' machines as a
// control-mode client reports their output (see tmuxctl.go) and reads
// every pane's liveness with a single `list-panes -a` when tmux reports a
// change, slowly otherwise; while that client is down it polls as before.

// ErrNoSession is returned when adopting a session that is gone.
var ErrNoSession = errors.New("the tmux session is gone")

// TmuxAvailable reports whether tmux 3.0 or newer is on PATH (asked once).
func TmuxAvailable() bool {
	tmuxOnce.Do(func() { tmuxOK = tmuxVersionOK() })
	return tmuxOK
}

var (
	tmuxOnce sync.Once
	tmuxOK   bool
)

func tmuxVersionOK() bool {
	out, err := TmuxRunner{}.Run(context.Background(), nil, "-V")
	if err != nil {
		return false
	}
	m := regexp.MustCompile(`(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	return major >= 3
}

// TmuxServer is the private tmux server of one home.
type TmuxServer struct {
	Socket string // the -L name
	// Grace is how long what a pane left running has between SIGTERM and
	// SIGKILL when the pane ends other than by a stop (default
	// DefaultGrace).
	Grace time.Duration
	log   *logrus.Entry
	home  string
	// noGroups: the panes get no cgroup even where the machine has them
	// (tests of what ends them without one).
	noGroups bool
	// failJoin: the wrapper is told a group it cannot move into (tests of
	// a kernel that will not populate the pane's group).
	failJoin bool

	mu    sync.Mutex
	panes map[string]*TmuxPane
	ids   map[string]*TmuxPane // by tmux pane id
	wake  chan struct{}
	// live: the control client is attached, and its events follow the
	// panes whose windows are linked to its session.
	live   atomic.Bool
	ctlPID atomic.Int64 // the control client's process, for tests
	// connecting is held by the poller while a control client connects:
	// tmux 3.3a crashes (a NULL control state in control_write) if a
	// notification, such as a session created by another command, comes
	// between the client's identification and its start in control mode.
	// Every tmux command of this program waits meanwhile; a person's
	// command at that very moment still could crash the server.
	connecting sync.RWMutex
	safety     time.Duration // see safetySweep
	pauseFor   time.Duration // see floodPause
	pauses     atomic.Int64  // panes paused for flooding, for tests
	// life ends when the server object is closed: it cuts short the
	// poller's tmux call.
	life  context.Context
	end   context.CancelFunc
	done  chan struct{}
	start sync.Once
}

// NewTmuxServer names the server of home: cicy-<hash of the home path>.
func NewTmuxServer(home string, log *logrus.Entry) *TmuxServer {
	sum := sha1.Sum([]byte(home))
	life, end := context.WithCancel(context.Background())
	return &TmuxServer{
		Socket: "cicy-" + hex.EncodeToString(sum[:4]), log: log, home: home,
		panes: map[string]*TmuxPane{}, ids: map[string]*TmuxPane{}, safety: safetySweep, pauseFor: floodPause, wake: make(chan struct{}, 1), life: life, end: end, done: make(chan struct{}),
	}
}

// statusFile is where a pane's wrapper writes its program's exit status.
func (s *TmuxServer) statusFile(name string) string {
	return filepath.Join(s.home, "run", "tmux", name+".exit")
}

// envFile is where a pane's environment waits for its wrapper.
func (s *TmuxServer) envFile(name string) string {
	return filepath.Join(s.home, "run", "tmux", name+".env")
}

// AttachCommand is how a person attaches to a pane's session.
func (s *TmuxServer) AttachCommand(name string) []string {
	return []string{"tmux", "-L", s.Socket, "attach", "-t", "=" + name}
}

// base are the arguments of every tmux call: this home's server, no user
// configuration, and UTF-8 whatever the locale (without -u tmux turns a
// tab or an emoji into "_" when LANG is unset).
func (s *TmuxServer) base() []string { return []string{"-u", "-L", s.Socket, "-f", "/dev/null"} }

// tmux runs the commands of this server, in the environment clientEnv
// leaves.
func (s *TmuxServer) tmux() TmuxRunner {
	return TmuxRunner{Args: s.base(), Env: clientEnv(os.Environ())}
}

// run runs one tmux command on this server.
func (s *TmuxServer) run(ctx context.Context, args ...string) ([]byte, error) {
	return s.runIn(ctx, nil, args...)
}

// runIn runs one tmux command with stdin as its input. It waits while the
// control client connects (see TmuxServer.connecting).
func (s *TmuxServer) runIn(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	s.connecting.RLock()
	defer s.connecting.RUnlock()
	return s.tmux().Run(ctx, stdin, args...)
}

// noServer reports whether err says that the server is not running.
func noServer(err error) bool {
	return strings.Contains(err.Error(), "no server running") || strings.Contains(err.Error(), "error connecting")
}

// clientEnv is the environment of our tmux calls: what tmux needs (its
// socket folder, the locale) and nothing else. The call that starts the
// server makes its environment the server's global one, which every
// session inherits; the supervisor's own may hold secrets. A pane gets its
// environment from Options.Env instead (see Start).
func clientEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH", name == "HOME", name == "USER", name == "LOGNAME", name == "SHELL",
			name == "LANG", strings.HasPrefix(name, "LC_"), name == "TZ", name == "TMPDIR", name == "TMUX_TMPDIR":
			env = append(env, kv)
		}
	}
	return env
}

// shellName is a variable name sh can export.
var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// writeEnvFile writes env as sh export lines to a file only the user can
// read, for a session's wrapper to source and remove. Variables sh sets
// itself (or that a bash as sh holds read-only) are left out.
func (s *TmuxServer) writeEnvFile(name string, env []string) (string, error) {
	var b strings.Builder
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !shellName.MatchString(k) {
			continue
		}
		switch k {
		case "PWD", "OLDPWD", "SHLVL", "_", "PPID", "UID", "EUID", "SHELLOPTS", "BASHOPTS", "BASH_VERSINFO", "IFS":
			continue
		}
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	path := s.envFile(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	_ = os.Remove(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("write the environment of %s: %w", name, err)
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("write the environment of %s: %w", name, err)
	}
	return path, nil
}

// ForgetGlobal removes names from the global environment of the server
// if one runs (one an older version started with the supervisor's whole
// environment), so the sessions it starts from now on do not inherit them.
func (s *TmuxServer) ForgetGlobal(names ...string) error {
	var args []string
	for _, n := range names {
		if len(args) > 0 {
			args = append(args, ";")
		}
		args = append(args, "set-environment", "-g", "-u", n)
	}
	if len(args) == 0 {
		return nil
	}
	_, err := s.run(context.Background(), args...)
	if err != nil && noServer(err) {
		return nil
	}
	return err
}

// paneInfo is one line of the poller's list-panes.
type paneInfo struct {
	id         string // the pane id, %N
	watched    bool   // its window is linked into the watching session
	pid        int
	dead       bool
	deadStatus int
	deadSignal int
	// statusKnown: tmux may mark a pane dead at the end of its output
	// before it has reaped the process; the exit status comes a moment
	// later.
	statusKnown bool
	activity    time.Time
}

// listFormat is a line of list-panes: the session, the pane's liveness,
// exit status and last activity, and where its window is linked.
const listFormat = "#{session_name}|#{pane_pid}|#{pane_dead}|#{pane_dead_status}|#{window_activity}|#{pane_dead_signal}|#{pane_id}|#{window_id}|#{window_linked_sessions}|#{window_name}"

func parsePaneInfo(f []string) paneInfo {
	pid, _ := strconv.Atoi(f[1])
	status, _ := strconv.Atoi(f[3])
	act, _ := strconv.ParseInt(f[4], 10, 64)
	sig, _ := strconv.Atoi(f[5])
	return paneInfo{id: f[6], pid: pid, dead: f[2] == "1", deadStatus: status, deadSignal: sig, activity: time.Unix(act, 0),
		statusKnown: f[3] != "" || f[5] != ""}
}

// list reads every session's pane: liveness, exit status, last activity.
func (s *TmuxServer) list(ctx context.Context) (map[string]paneInfo, error) {
	l, err := s.listAll(ctx)
	return l.panes, err
}

// listAll reads every pane of the server, and the watching session's.
func (s *TmuxServer) listAll(ctx context.Context) (listing, error) {
	out, err := s.run(ctx, "list-panes", "-a", "-F", listFormat)
	if err != nil {
		if noServer(err) {
			return parseListing(""), nil
		}
		return listing{}, err
	}
	return parseListing(string(out)), nil
}

// Sessions lists the sessions the server runs now.
func (s *TmuxServer) Sessions() (map[string]bool, error) {
	infos, err := s.list(context.Background())
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for name := range infos {
		out[name] = true
	}
	return out, nil
}

// safetySweep is how often the poller sweeps while the control client
// follows every pane and none needs looking at.
const safetySweep = 30 * time.Second

// poll runs while the server has panes. It owns the panes' machines as
// output and quiet move them (input methods move them too, under each
// pane's mutex) and the control client (see tmuxctl.go): its events move
// the panes, its timer makes them idle once quiet, and it sweeps every
// pane with list-panes when told to, when tmux reports a change, and
// otherwise slowly (fast when the control client is down).
func (s *TmuxServer) poll() {
	defer close(s.done)
	f := &follower{s: s, events: make(chan ctlEvent, 64)}
	defer f.stop()
	t := time.NewTimer(0)
	defer t.Stop()
	sweepAt := time.Now()
	var recordAt time.Time
	for {
		select {
		case <-s.life.Done():
			return
		case <-s.wake:
			sweepAt = time.Now()
		case ev := <-f.events:
			if ev.kind == ctlOutput {
				f.output(ev, time.Now())
				if p := s.byID(ev.pane); p != nil {
					if after := p.sawOutput(ev.at); after > 0 {
						// An agent's screen may have changed: look soon.
						sweepAt = minTime(sweepAt, time.Now().Add(after))
					}
				}
			} else if f.event(ev, time.Now()) {
				sweepAt = time.Now()
			}
		case <-t.C:
		}
		now := time.Now()
		resumed, resumeAt := f.resume(now)
		for _, id := range resumed {
			if p := s.byID(id); p != nil {
				p.sawOutput(now) // it may have printed while paused
			}
		}
		if f.c == nil && !f.retryAt.IsZero() && !now.Before(f.retryAt) {
			sweepAt = now // the control client's backoff is over: start it
		}
		if f.up && s.quietDue(now, f.paused) {
			// A pane about to be idle is swept first: a program that
			// ended right after its last output is then seen exited, not
			// idle (tmux reports a pane's death to the client only within
			// a second). One list-panes per pane going idle.
			sweepAt = now
		}
		if !now.Before(sweepAt) {
			var l listing
			w := s.sweep(func() (map[string]paneInfo, error) {
				var err error
				l, err = s.listAll(s.life)
				return l.panes, err
			})
			if l.panes != nil {
				f.ensure(l, s.registered(), now)
			}
			sweepAt = now.Add(s.sweepEvery(f.up, w))
		}
		recording := s.recording()
		if recording && !now.Before(recordAt) {
			s.record()
			recordAt = now.Add(recordEvery)
		}
		next := sweepAt
		if recording {
			next = minTime(next, recordAt)
		}
		if f.up {
			next = minTime(next, s.settleQuiet(now, f.paused))
		}
		if !resumeAt.IsZero() {
			next = minTime(next, resumeAt)
		}
		if !f.up && f.c == nil && !f.retryAt.IsZero() {
			next = minTime(next, f.retryAt)
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(max(0, time.Until(next)))
	}
}

// sweepEvery is the time to the next sweep: confirmLook while a screen
// verdict of waiting waits for its second look (a dialog drawn is a person waited
// for: it is told within a second of being drawn); 500 ms while an
// agent's screen needs watching (its turn may end at any moment); 1 s
// while a pane wants fast polls (busy, and an agent's or not followed:
// see observe); else the safety sweep while the control client runs, 5 s
// while it is down (a tmux fork per second costs CPU that an idle team
// should not pay).
func (s *TmuxServer) sweepEvery(live bool, w sweepWants) time.Duration {
	switch {
	case w.confirm:
		return confirmLook
	case w.watch:
		return 500 * time.Millisecond
	case w.busy:
		return time.Second
	case live:
		return s.safety
	}
	return 5 * time.Second
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// registered is the panes of the server now.
func (s *TmuxServer) registered() []*TmuxPane {
	s.mu.Lock()
	defer s.mu.Unlock()
	panes := make([]*TmuxPane, 0, len(s.panes))
	for _, p := range s.panes {
		panes = append(panes, p)
	}
	return panes
}

// byID is the pane whose tmux pane id is id, or nil.
func (s *TmuxServer) byID(id string) *TmuxPane {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

// quietDue reports whether a followed pane's output has been quiet for
// its settle time and the pane is not idle yet. A paused pane (see
// follower.output) is not quiet: it may be printing.
func (s *TmuxServer) quietDue(now time.Time, paused func(id string) bool) bool {
	for _, p := range s.registered() {
		if paused(p.tid) {
			continue
		}
		p.mu.Lock()
		due := p.followed && p.m.settling() && p.m.quietLeft(now) == 0
		p.mu.Unlock()
		if due {
			return true
		}
	}
	return false
}

// settleQuiet makes idle the followed panes whose output has been quiet
// for the settle time, paused panes left out; it returns when the next one
// will be.
func (s *TmuxServer) settleQuiet(now time.Time, paused func(id string) bool) time.Time {
	next := now.Add(24 * time.Hour)
	for _, p := range s.registered() {
		if paused(p.tid) {
			continue
		}
		if left := p.settleQuiet(now); left > 0 {
			next = minTime(next, now.Add(left))
		}
	}
	return next
}

// sweepWants is what the panes of a sweep want of the next one.
type sweepWants struct {
	busy    bool // a pane wants fast polls (busy and not followed by the control client)
	watch   bool // an agent's screen rules need watching
	confirm bool // a screen verdict of waiting waits for its second look
}

// confirmLook is how soon a screen verdict of waiting (a dialog) gets its
// second look: long enough for a redraw caught halfway to be finished,
// short enough that a dialog is told well within a second of being drawn.
// Other verdicts keep the sweep's pace: an idle prompt an agent shows for
// a moment between two steps of its turn must not end the turn.
const confirmLook = 150 * time.Millisecond

// sweep reads every session with list and hands each pane its own. The
// panes are taken first, then the sessions: a pane registers after its
// session exists, so every pane taken is in the list. (The other way
// round, a pane created between the two was missing from the list, and
// declared gone.) It reports what the panes want of the next sweep.
func (s *TmuxServer) sweep(list func() (map[string]paneInfo, error)) sweepWants {
	var w sweepWants
	panes := s.registered()
	infos, err := list()
	if err != nil {
		return w
	}
	for _, p := range panes {
		info, ok := infos[p.name]
		if p.observe(info, ok) {
			w.busy = true
		}
		watch, pending := p.classify()
		w.watch = w.watch || watch
		w.confirm = w.confirm || pending
	}
	return w
}

func (s *TmuxServer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close stops the poller; the sessions keep running.
func (s *TmuxServer) Close() {
	// A poller that never started cannot close done itself.
	started := true
	s.start.Do(func() { started = false; close(s.done) })
	s.end()
	<-s.done
	wait := time.Duration(0)
	if started {
		// The last panes may have gone since the poller's last sweep.
		ctx, cancel := context.WithTimeout(context.Background(), DefaultTmuxTimeout)
		defer cancel()
		if l, err := s.listAll(ctx); err == nil {
			s.endWatch(ctx, l)
			if len(l.panes) == 0 {
				wait = 2 * time.Second // the server has gone, or is going
			}
		}
	}
	// A server that exited left its socket behind.
	s.RemoveDeadSocket(wait)
}

func (s *TmuxServer) register(p *TmuxPane) {
	s.mu.Lock()
	s.panes[p.name] = p
	if p.tid != "" {
		s.ids[p.tid] = p
	}
	s.mu.Unlock()
	s.start.Do(func() { go s.poll() })
	s.poke()
}

func (s *TmuxServer) unregister(p *TmuxPane) {
	s.mu.Lock()
	if s.panes[p.name] == p {
		delete(s.panes, p.name)
	}
	if s.ids[p.tid] == p {
		delete(s.ids, p.tid)
	}
	s.mu.Unlock()
	s.poke() // the last pane gone may end the watching session
}

// TmuxPane is a pane whose program runs in a session of the private tmux
// server. Its state machine is guarded by mu, which no one holds across a
// tmux call or a wait: it is moved by the poller (one goroutine) and by
// input methods. Readers take the copy published on every change.
type TmuxPane struct {
	srv  *TmuxServer
	name string
	tid  string // tmux's pane id, %N
	opts Options

	mu           sync.Mutex
	m            machine
	pubRev       uint64    // the machine's rev last published
	lastActivity time.Time // tmux's last activity of the pane
	// followed: the control client's events tell the pane's output (the
	// last sweep found it linked to the client's session).
	followed bool
	// outputAt is the last output seen (an event's time, or tmux's
	// activity when polled); classifiedAt the one an agent's screen rules
	// last looked at.
	outputAt, classifiedAt time.Time
	stopWhy                string

	status   atomic.Pointer[Status]
	exited   chan struct{}
	exitOnce sync.Once

	// group is the pane's cgroup ("" if it has none): see tmuxgroups.go.
	// seen are the processes of a pane without one the poller recorded.
	group reaper.Group
	seen  map[int]reaper.Proc
	// joined, outside: the wrapper was seen in the group, or running its
	// program outside it (see ungrouped).
	joined, outside atomic.Bool
	groupOnce       sync.Once
	groupDone       chan struct{}
}

// Start creates the session running opts.Argv in opts.Dir.
func (s *TmuxServer) Start(name string, opts Options) (*TmuxPane, error) {
	if len(opts.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	if opts.Rows == 0 || opts.Cols == 0 {
		opts.Rows, opts.Cols = 40, 120
	}
	args := []string{"new-session", "-d", "-P", "-F", "#{pane_id}", "-s", name, "-n", "main", "-x", strconv.Itoa(int(opts.Cols)), "-y", strconv.Itoa(int(opts.Rows)), "-c", opts.Dir}
	// The program runs under sh, which writes its exit status to a file
	// when it ends, since tmux does not always keep it. sh catches the
	// signals a typed Ctrl-C or a stop sends to the whole group (a caught
	// signal, unlike an ignored one, is back to default in the program), so
	// it outlives the program and the program gets its grace period; a
	// stop's SIGHUP goes to the program, not to sh (Stop). sh does not
	// catch SIGHUP: when the pane goes (kill-pane, kill-session,
	// kill-server, a crashed server) the terminal hangs up, the kernel
	// sends SIGHUP to sh, the session's leader, and sh's end sends it on to
	// the program's group, as a closed terminal does. A sh that caught it
	// lived on with the program, both orphans.
	//
	// The pane's environment may hold secrets (a key a CLI agent needs), so
	// it is not given as -e arguments, which every user sees in ps (the
	// server's own arguments are those of the call that started it): sh
	// reads it from a file only we can read, removes it, then runs the
	// program.
	//
	// Where the pane has a cgroup, sh moves itself into it before it runs
	// the program, so that all the program starts is in it. Where it has
	// none, or the move fails (a group the kernel will not populate), the
	// program runs under a keeper (see tmuxgroups.go).
	status := s.statusFile(name)
	_ = os.MkdirAll(filepath.Dir(status), 0o700)
	_ = os.Remove(status)
	// What an earlier pane of this name left ends first.
	endGroups(s.groups(name), s.grace())
	s.endRecorded(name, s.grace())
	group := s.newGroup(name)
	env := append(append(slices.Clip(opts.Env), "CICY_EXIT_FILE="+status), s.keeperEnv()...)
	if group != "" {
		join := string(group)
		if s.failJoin {
			join += "/none"
		}
		env = append(env, "CICY_CGROUP="+join)
	}
	envFile, err := s.writeEnvFile(name, env)
	if err != nil {
		group.Remove()
		return nil, err
	}
	args = append(args, "--", "sh", "-c", `trap : INT QUIT TERM; . "$1" && rm -f "$1" && shift && `+
		`{ g=${CICY_CGROUP:-} k=${CICY_KEEPER:-}; unset CICY_CGROUP CICY_KEEPER; `+
		`if [ -n "$g" ] && { echo $$ > "$g/cgroup.procs"; } 2>/dev/null; then "$@"; `+
		`elif [ -n "$k" ]; then "$k" `+reaper.KeeperArg+` "$@"; else "$@"; fi; }; `+
		`s=$?; printf '%s' "$s" > "$CICY_EXIT_FILE"; exit "$s"`, "sh", envFile)
	args = append(args, opts.Argv...)
	// In one tmux call, before the session exists: keep dead panes, so an
	// exit status stays readable however fast the program ends, and let
	// Ctrl-Q detach a person attached with tmux attach, as in cicy-agent
	// attach.
	setup := []string{"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"bind-key", "-n", "C-q", "detach-client", ";"}
	out, err := s.run(context.Background(), append(setup, args...)...)
	// The server on its way out (its last session just ended: a restart of
	// its only pane) takes the command and exits under it: once it is
	// gone, a new one starts.
	for try := 0; err != nil && strings.Contains(err.Error(), "server exited unexpectedly") && try < 20; try++ {
		time.Sleep(50 * time.Millisecond)
		out, err = s.run(context.Background(), append(setup, args...)...)
	}
	if err != nil {
		_ = os.Remove(envFile)
		group.Remove()
		return nil, err
	}
	p := s.newPane(name, strings.TrimSpace(string(out)), group, opts, Status{State: Starting, Cause: CauseStarted, Reason: "started in tmux session " + name, Since: time.Now()})
	return p, nil
}

// Adopt takes over a session a previous supervisor started.
func (s *TmuxServer) Adopt(name string, opts Options) (*TmuxPane, error) {
	infos, err := s.list(context.Background())
	if err != nil {
		return nil, err
	}
	info, ok := infos[name]
	if !ok {
		return nil, ErrNoSession
	}
	st := Status{State: Idle, Cause: CauseAdopted, Reason: "re-adopted after a supervisor restart", Since: time.Now(), PID: info.pid}
	var group reaper.Group
	if !info.dead {
		group = s.ownGroup(name, info.pid)
	}
	for _, g := range s.groups(name) {
		if g != group {
			go g.End(s.grace()) // left by an earlier start of this name
		}
	}
	p := s.newPane(name, info.id, group, opts, st)
	p.observe(info, true)
	return p, nil
}

func (s *TmuxServer) newPane(name, tid string, group reaper.Group, opts Options, st Status) *TmuxPane {
	if opts.Settle <= 0 {
		opts.Settle = time.Second
	}
	if opts.Log == nil {
		opts.Log = s.log
	}
	p := &TmuxPane{srv: s, name: name, tid: tid, opts: opts, exited: make(chan struct{}), group: group, groupDone: make(chan struct{}), seen: map[int]reaper.Proc{},
		m: newMachine(st, pollSettle(opts.Settle), opts.Rules != nil, opts.hookQuiet(), time.Now())}
	p.status.Store(&st)
	s.register(p)
	if opts.OnChange != nil {
		opts.OnChange(st)
	}
	return p
}

// publish stores a copy of the machine's status for Status if it changed.
// Called with mu held.
func (p *TmuxPane) publish() {
	if p.pubRev != p.m.rev {
		st := p.m.status
		p.status.Store(&st)
		p.pubRev = p.m.rev
	}
}

// announce tells OnChange of a new state. Called without mu.
func (p *TmuxPane) announce(st Status) {
	if p.opts.OnChange != nil {
		p.opts.OnChange(st)
	}
}

// pollSettle is the settle time of a polled pane: at least a second,
// since tmux reports activity to the second.
func pollSettle(settle time.Duration) time.Duration { return max(settle, time.Second) }

// observe applies one poll; it reports whether the pane wants fast polls
// (it is starting or busy and is an agent's or not followed by the control
// client, or a screen verdict waits for its second look).
func (p *TmuxPane) observe(info paneInfo, ok bool) bool {
	var end paneEnd
	if ok && info.dead && p.Status().Running() {
		end = p.ending(info) // reads the exit status file: not under mu
	}
	now := time.Now()
	p.mu.Lock()
	var changed bool
	switch {
	case !ok:
		cause := CauseExit
		if p.stopWhy != "" {
			cause = CauseStop
		}
		changed = p.m.exit(now, cause, "its tmux session is gone", nil)
	case info.dead:
		if end.reason != "" {
			changed = p.m.exit(now, end.cause, end.reason, end.code)
		}
	case p.m.running():
		p.m.setPID(info.pid)
		p.follow(info.watched && p.srv.live.Load())
		changed = p.sawActivity(now, info.activity)
		p.m.judge(now) // a disagreement of an agent's signals may have lasted
	}
	p.publish()
	st, followed := p.m.status, p.followed
	p.mu.Unlock()
	if !st.Running() {
		// What the program left running ends with it (its grace runs
		// beside the poller).
		p.endGroup(p.srv.grace())
		p.exitOnce.Do(func() { close(p.exited) })
	}
	if changed {
		p.announce(st)
	}
	// An agent's state does not follow its output: while it is busy its
	// signals are judged and its screen looked at on each sweep, as before.
	fast := !followed || p.opts.Rules != nil
	return (fast && (st.State == Starting || st.State == Busy)) || st.Pending != ""
}

// follow records whether the control client's events follow the pane's
// output; a followed pane settles after its own settle time, a polled one
// after at least a second. Called with mu held.
func (p *TmuxPane) follow(on bool) {
	p.followed = on
	p.m.settle = p.opts.Settle
	if !on {
		p.m.settle = pollSettle(p.opts.Settle)
	}
}

// sawOutput applies output the control client reported at at. It returns
// how soon the screen is to be looked at: an agent's may have changed
// (zero for a pane without screen rules).
func (p *TmuxPane) sawOutput(at time.Time) time.Duration {
	grace := false
	p.move(func() bool {
		p.outputAt = at
		grace = at.Sub(p.m.inputAt) < inputGrace
		return p.m.output(at)
	})
	switch {
	case p.opts.Rules == nil:
		return 0
	case grace:
		// Right after typed input a busy look may last only a moment (a
		// short turn of an agent without hooks): look at once.
		return outputLookSoon
	}
	return outputLook
}

// outputLook is how soon an agent's screen is looked at after its output;
// outputLookSoon, after its output right after typed input.
const (
	outputLook     = 500 * time.Millisecond
	outputLookSoon = 50 * time.Millisecond
)

// move runs f, which moves the pane's machine and reports whether its
// state changed, under mu; it publishes the status and announces a
// change (without mu), and returns the status.
func (p *TmuxPane) move(f func() bool) Status {
	p.mu.Lock()
	changed := f()
	p.publish()
	st := p.m.status
	p.mu.Unlock()
	if changed {
		p.announce(st)
	}
	return st
}

// settleQuiet makes a followed pane idle once its output has been quiet
// for the settle time; it returns how much longer it waits for quiet
// (zero when it waits for nothing).
func (p *TmuxPane) settleQuiet(now time.Time) time.Duration {
	var left time.Duration
	p.move(func() bool {
		if !p.followed {
			return false
		}
		changed := p.m.quiet(now)
		left = p.m.quietLeft(now)
		return changed
	})
	return left
}

// sawActivity applies tmux's last activity of the running pane: output
// since the last poll, or quiet for the settle time. The first activity
// seen is not output: it is from before. A followed pane's output and
// quiet come from the control client's events and the poller's settle
// timer (tmux's activity, to the second, would move its last output late;
// a pane paused for flooding is not quiet): only the activity is noted.
// Called with mu held.
func (p *TmuxPane) sawActivity(now, activity time.Time) bool {
	changed := false
	if p.followed {
		p.lastActivity = maxTime(p.lastActivity, activity)
		return false
	}
	if activity.After(p.lastActivity) {
		p.outputAt = activity
		if p.lastActivity.IsZero() {
			p.m.activity(now)
		} else {
			changed = p.m.output(now)
		}
		p.lastActivity = activity
	}
	if p.m.quiet(now) {
		changed = true
	}
	return changed
}

// paneEnd is how a pane's program ended.
type paneEnd struct {
	cause  Cause
	reason string
	code   *int
}

// ending describes the end of a program tmux reports dead.
func (p *TmuxPane) ending(info paneInfo) paneEnd {
	code, known := p.exitStatus(info)
	end := paneEnd{cause: CauseExit, reason: "exited (its exit status is unknown)"}
	switch {
	case info.deadSignal > 0:
		end.reason = "killed by signal " + signalName(syscall.Signal(info.deadSignal))
	case known:
		end.reason = fmt.Sprintf("exited with code %d", code)
	}
	if known {
		end.code = &code
	}
	p.mu.Lock()
	why := p.stopWhy
	p.mu.Unlock()
	if why != "" {
		end.cause, end.reason = CauseStop, why+": "+end.reason
	}
	return end
}

// classify applies the screen rules of an agent pane when its hooks have
// been quiet for a while and its screen may have changed (new activity,
// or a state that does not last) or a verdict waits for its second look.
// It reports whether the pane wants fast polls: while it is not idle
// (waiting included: a person's answer may close its dialog with no
// output after the input's own redraw, which came within the input grace
// when the rules did not decide yet) or a verdict waits for its second
// look; and whether a verdict of waiting does (pending).
func (p *TmuxPane) classify() (watch, pending bool) {
	if p.opts.Rules == nil {
		return false, false
	}
	p.mu.Lock()
	look, retry := p.m.mayLook(time.Now())
	outputAt := p.outputAt
	// Right after typed input only a busy look counts (machine.screen).
	look = (look || retry > 0) && (outputAt.After(p.classifiedAt) || p.m.status.State != Idle || p.m.waitsLook())
	p.mu.Unlock()
	if !look {
		return false, false
	}
	v, _ := p.opts.Rules.Classify(NewLayout(p.screen(p.srv.life), p.opts.Layout)) // a zero verdict when no rule matches
	st := p.move(func() bool {
		p.classifiedAt = outputAt
		return p.m.screen(time.Now(), v)
	})
	pending = st.Pending == Waiting
	return st.State == Starting || st.State == Busy || st.State == Waiting || st.Pending != "", pending
}

// SetState records what an agent's own hook says of it (see docs/hooks.md): it
// stands over the screen rules for the hook-quiet time. A pane whose
// program ended keeps its exit.
func (p *TmuxPane) SetState(s State, reason string) {
	p.change(func(now time.Time) bool { return p.m.hook(now, s, reason) })
}

// change applies f to the machine of a pane whose program runs, under the
// pane's lock, publishes the status (and announces it when f says it
// changed) and pokes the server; false when the program has ended.
func (p *TmuxPane) change(f func(now time.Time) bool) bool {
	p.mu.Lock()
	if !p.m.running() {
		p.mu.Unlock()
		return false
	}
	changed := f(time.Now())
	p.publish()
	st := p.m.status
	p.mu.Unlock()
	if changed {
		p.announce(st)
	}
	p.srv.poke()
	return true
}

// RequestsChanged tells the pane that its count of model requests in
// flight (Options.InFlight) changed; it holds the pane's mutex only while
// the machine moves. The poller is woken: a busy agent is polled fast, and
// its screen looked at once the last request ended.
func (p *TmuxPane) RequestsChanged() {
	if p.opts.InFlight == nil {
		return
	}
	p.move(func() bool { return p.m.requests(time.Now(), p.opts.InFlight()) })
	p.srv.poke()
}

// exitStatus is the program's exit status: the file its wrapper wrote,
// else tmux's (tmux 3.3 marks a pane dead at the end of its output and
// does not always record the status of the process it reaps after).
func (p *TmuxPane) exitStatus(info paneInfo) (int, bool) {
	if b, err := os.ReadFile(p.srv.statusFile(p.name)); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n, true
		}
	}
	if info.deadSignal > 0 {
		return 128 + info.deadSignal, true
	}
	return info.deadStatus, info.statusKnown
}

// Name is the session's name.
func (p *TmuxPane) Name() string { return p.name }

// Exited is closed once the program has ended.
func (p *TmuxPane) Exited() <-chan struct{} { return p.exited }

// Status returns the pane's state, without waiting for anyone.
func (p *TmuxPane) Status() Status { return *p.status.Load() }

func (p *TmuxPane) target() string { return "=" + p.name + ":main.0" }

// Screen returns the visible screen, trailing blank lines removed.
func (p *TmuxPane) Screen() string { return p.screen(context.Background()) }

func (p *TmuxPane) screen(ctx context.Context) string {
	out, err := p.srv.run(ctx, "capture-pane", "-p", "-t", p.target())
	if err != nil {
		return ""
	}
	lines := strings.Split(string(out), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n ")
}

// StyledScreen returns the visible screen with its colours, read from
// tmux's capture with its SGR sequences (capture-pane -e).
func (p *TmuxPane) StyledScreen() []StyledLine {
	out, err := p.srv.run(context.Background(), "capture-pane", "-p", "-e", "-t", p.target())
	if err != nil {
		return nil
	}
	return ParseStyled(string(out))
}

// input marks the pane busy: the program has work.
func (p *TmuxPane) input() error {
	if !p.change(func(now time.Time) bool { return p.m.input(now) }) {
		return ErrExited
	}
	return nil
}

// SendText types text: a bracketed paste (tmux sends the markers only if
// the program asked for them) for several lines, literal keys otherwise;
// then Enter after the enter delay.
func (p *TmuxPane) SendText(text string, enter bool) error {
	if err := p.input(); err != nil {
		return err
	}
	ctx := context.Background()
	if text != "" {
		if strings.Contains(text, "\n") {
			buf := "cicy-" + p.name
			if _, err := p.srv.runIn(ctx, strings.NewReader(text), "load-buffer", "-b", buf, "-"); err != nil {
				return err
			}
			if _, err := p.srv.run(ctx, "paste-buffer", "-p", "-d", "-b", buf, "-t", p.target()); err != nil {
				return err
			}
		} else if _, err := p.srv.run(ctx, "send-keys", "-l", "-t", p.target(), "--", text); err != nil {
			return err
		}
	}
	if !enter {
		return nil
	}
	if text != "" && p.opts.EnterDelay > 0 {
		time.Sleep(p.opts.EnterDelay)
	}
	_, err := p.srv.run(ctx, "send-keys", "-t", p.target(), "Enter")
	return err
}

// SendKeys sends raw key bytes.
func (p *TmuxPane) SendKeys(b []byte) error {
	if err := p.input(); err != nil {
		return err
	}
	args := []string{"send-keys", "-t", p.target(), "-H"}
	for _, c := range b {
		args = append(args, fmt.Sprintf("%02x", c))
	}
	_, err := p.srv.run(context.Background(), args...)
	return err
}

// Resize sets the session's window size.
func (p *TmuxPane) Resize(rows, cols uint16) error {
	_, err := p.srv.run(context.Background(), "resize-window", "-t", "="+p.name+":main", "-x", strconv.Itoa(int(cols)), "-y", strconv.Itoa(int(rows)))
	return err
}

// Stop ends the program and removes the session: SIGHUP to the processes
// of its group but the wrapper sh (the hangup a closing terminal would
// send), SIGTERM to the group (the polite request), SIGKILL after grace;
// then every process the program started that still runs, even one that
// left the group or the session, is killed: the pane's process tree is
// looked at while the program stops, so one that its parent's end left
// to init is still known. It holds mu only to read and write the state,
// never across a signal's wait or a tmux call.
func (p *TmuxPane) Stop(grace time.Duration, why string) {
	p.mu.Lock()
	pid, running := p.m.status.PID, p.m.running()
	if p.stopWhy == "" {
		p.stopWhy = why
	}
	p.mu.Unlock()
	deadline := time.Now().Add(grace)
	if running && pid > 1 {
		p.endProgram(pid, grace)
	}
	// What is left in the pane's group has had its SIGTERM with the
	// program's; the rest of the grace, then SIGKILL.
	<-p.endGroup(max(0, time.Until(deadline)))
	if _, err := p.srv.run(context.Background(), "kill-session", "-t", "="+p.name); err != nil {
		p.opts.Log.WithError(err).Debug("Kill the pane's session")
	}
	if p.tid != "" {
		// Its window, linked into the watching session, outlives it.
		if _, err := p.srv.run(context.Background(), "kill-window", "-t", p.tid); err != nil {
			p.opts.Log.WithError(err).Debug("Kill the pane's window")
		}
	}
	_ = os.Remove(p.srv.envFile(p.name)) // a program that never started
	p.mu.Lock()
	p.m.exit(time.Now(), CauseStop, why+": session killed", nil)
	p.publish()
	p.mu.Unlock()
	p.exitOnce.Do(func() { close(p.exited) })
}

// endProgram signals the pane's program (its wrapper is pid), waits up to
// grace for it to end, then kills what is left of its process tree.
func (p *TmuxPane) endProgram(pid int, grace time.Duration) {
	tree := reaper.NewTree(pid)
	tree.Look()
	hangUp(pid)
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	// And what left the group, in the pane's cgroup (the wrapper sh
	// excepted: it waits for the program).
	p.group.Signal(syscall.SIGTERM, pid)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	p.waitDead(ctx, lookEvery(tree, treeLook))
	cancel()
	// The tree first, while the wrapper still holds what it holds.
	tree.End()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	p.waitDead(ctx, nil)
	cancel()
}

// treeLook is how often a stop looks at the stopping program's process
// tree (a look reads /proc/*/stat).
const treeLook = 200 * time.Millisecond

// lookEvery returns a look at tree that looks at most once per every.
func lookEvery(tree *reaper.Tree, every time.Duration) func() {
	var last time.Time
	return func() {
		if time.Since(last) >= every {
			tree.Look()
			last = time.Now()
		}
	}
}

// hangUp sends SIGHUP to the processes of the wrapper's group but the
// wrapper, which would end at once on it and leave its program no grace.
func hangUp(wrapper int) {
	for _, proc := range reaper.Processes() {
		if proc.PGID == wrapper && proc.PID != wrapper && proc.Alive() {
			reaper.Kill(proc, syscall.SIGHUP)
		}
	}
}

// waitDead polls the pane until its program is dead or ctx ends, calling
// look (when not nil) at each poll.
func (p *TmuxPane) waitDead(ctx context.Context, look func()) {
	for {
		if look != nil {
			look()
		}
		infos, err := p.srv.list(context.Background())
		if err == nil {
			info, ok := infos[p.name]
			p.observe(info, ok)
			if !ok || info.dead {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close forgets the pane; its session keeps running (it outlives the
// supervisor).
func (p *TmuxPane) Close() { p.srv.unregister(p) }

// KillServer ends this home's tmux server and every session in it, with
// what their programs left running; a server that is not running is not
// an error.
func (s *TmuxServer) KillServer() error {
	if _, err := s.run(context.Background(), "kill-server"); err != nil && !noServer(err) {
		return err
	}
	endGroups(s.groups(""), s.grace())
	s.removeBases()
	for _, name := range s.recordedNames() {
		s.endRecorded(name, s.grace())
	}
	s.RemoveDeadSocket(2 * time.Second)
	return nil
}
