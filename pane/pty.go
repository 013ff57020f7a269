package pane

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cicy-ai/cicy-agent/reaper"
)

// ErrExited is returned for input sent to a pane whose process has ended.
var ErrExited = errors.New("the pane's process has exited")

// Options describe the process a PTY pane runs.
type Options struct {
	Argv []string
	Dir  string
	// Group, if set, is the cgroup v2 group a PTY pane's program starts in
	// (TmuxServer.NewGroup): what the program starts, wherever it goes, is
	// ended with the pane. A tmux pane gets one of its server's own.
	Group reaper.Group
	Env   []string // full environment of the process
	Rows  uint16
	Cols  uint16
	// Settle is how long output must stay quiet before a busy pane is idle.
	Settle time.Duration
	// EnterDelay separates a paste from the Enter that submits it; some
	// programs drop an Enter that arrives in the same read as the paste.
	EnterDelay time.Duration
	Log        *logrus.Entry
	// OnChange is called from the pane's loop on every state change. It
	// must return quickly.
	OnChange func(Status)
	// Rules, when set, make this an agent pane: its state comes from its
	// hooks (SetState) and, when no hook has spoken for HookQuiet, from
	// these screen rules, instead of from output quiet.
	Rules Rules
	// Layout, for an agent pane, finds the parts of its screen that its
	// rules look at (see Rule.Part).
	Layout    Parser
	HookQuiet time.Duration
	// InFlight, for an agent pane, is how many of its main-loop model
	// requests are in flight (the gateway's count); RequestsChanged says
	// that it changed. It must return quickly and may be called from any
	// goroutine.
	InFlight func() int
}

// inputGrace is how long after typed input the screen rules wait: the
// agent has not redrawn yet, and its old idle prompt would undo the busy
// state the input set.
const inputGrace = time.Second

// hookQuiet is how long a hook's word stands before screen rules may
// overrule it.
func (o Options) hookQuiet() time.Duration {
	if o.HookQuiet > 0 {
		return o.HookQuiet
	}
	return DefaultHookQuiet
}

// DefaultHookQuiet is how long a hook stands by default before screen
// rules may overrule it.
const DefaultHookQuiet = 10 * time.Second

// PTY is a pane whose process runs on a pseudo-terminal of ours.
type PTY struct {
	opts   Options
	pid    int
	ptmx   *os.File
	cmds   chan func(*ptyState)
	writes chan []byte
	exited chan struct{} // closed once the process has been reaped
	// groupDone is closed once what the program left in its group ended;
	// graceNs is the stop's grace plus one (0: no stop).
	groupDone chan struct{}
	graceNs   atomic.Int64
	quit      chan struct{} // closed by Close
	loopDone  chan struct{}
	stopOnce  sync.Once
	closeMu   sync.Once
	stopping  chan struct{} // closed when Stop began; tells the loop why the process ended
	stopWhy   string        // written before stopping is closed
	// requests wakes the loop to read Options.InFlight (RequestsChanged).
	requests chan struct{}
	// status is the loop's latest copy of the pane's status: readers take
	// it without waiting for the loop.
	status atomic.Pointer[Status]
}

// ptyState is everything the loop owns.
type ptyState struct {
	m      machine
	pubRev uint64 // the machine's rev last published
	scr    *screen
	paste  pasteModeTracker
	subs   map[chan []byte]struct{}
	// watchers hear that the screen changed (Watch).
	watchers map[chan struct{}]struct{}
	eof      bool // the PTY gave its last byte
	// classifiedAt is when the screen rules of an agent pane last looked.
	classifiedAt time.Time
	// quiet fires when output may have been quiet for the settle time, or
	// when an agent's screen should be looked at again.
	quiet *time.Timer
	// feed fires feedDelay after output was queued for the emulator.
	feed      *time.Timer
	feedArmed bool
	// judge fires when a disagreement of an agent's signals may have
	// lasted long enough to count.
	judge *time.Timer
}

type waitResult struct {
	state *os.ProcessState
	err   error
}

// StartPTY starts argv on a new PTY and returns the running pane.
func StartPTY(opts Options) (*PTY, error) {
	if len(opts.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	if opts.Rows == 0 || opts.Cols == 0 {
		opts.Rows, opts.Cols = 40, 120
	}
	if opts.Settle <= 0 {
		opts.Settle = 500 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = logrus.NewEntry(logrus.New())
	}
	cmd := exec.Command(opts.Argv[0], opts.Argv[1:]...)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	// pty sets Setsid and Setctty, so the child leads its own session and
	// process group (pgid = pid); Setpgid must not be added (creack/pty#35).
	// Pdeathsig takes the child down if the supervisor is killed.
	attrs := &syscall.SysProcAttr{Setsid: true, Setctty: true, Pdeathsig: syscall.SIGKILL}
	// Started inside its group (clone3's CLONE_INTO_CGROUP): no moment
	// outside it. A kernel or a group that refuses: started without.
	if dir, err := os.Open(string(opts.Group)); opts.Group != "" && err == nil {
		defer dir.Close()
		attrs.UseCgroupFD, attrs.CgroupFD = true, int(dir.Fd())
	}
	ptmx, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: opts.Rows, Cols: opts.Cols}, attrs)
	if err != nil && attrs.UseCgroupFD {
		opts.Log.WithError(err).Debug("Start the pane outside its cgroup")
		opts.Group.Remove()
		opts.Group, attrs.UseCgroupFD = "", false
		cmd = exec.Command(opts.Argv[0], opts.Argv[1:]...)
		cmd.Dir, cmd.Env = opts.Dir, opts.Env
		ptmx, err = pty.StartWithAttrs(cmd, &pty.Winsize{Rows: opts.Rows, Cols: opts.Cols}, attrs)
	}
	if err != nil {
		opts.Group.Remove()
		return nil, fmt.Errorf("start %s: %w", opts.Argv[0], err)
	}
	if ptmx, err = pollable(ptmx); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("start %s: %w", opts.Argv[0], err)
	}
	p := &PTY{
		opts:      opts,
		pid:       cmd.Process.Pid,
		ptmx:      ptmx,
		cmds:      make(chan func(*ptyState)),
		writes:    make(chan []byte, 256),
		exited:    make(chan struct{}),
		quit:      make(chan struct{}),
		loopDone:  make(chan struct{}),
		stopping:  make(chan struct{}),
		requests:  make(chan struct{}, 1),
		groupDone: make(chan struct{}),
	}
	now := time.Now()
	st := &ptyState{
		m: newMachine(Status{State: Starting, Cause: CauseStarted, Reason: fmt.Sprintf("started pid %d", p.pid), Since: now, PID: p.pid},
			opts.Settle, opts.Rules != nil, opts.hookQuiet(), now),
		scr:      newScreen(int(opts.Cols), int(opts.Rows)),
		subs:     map[chan []byte]struct{}{},
		watchers: map[chan struct{}]struct{}{},
		quiet:    time.NewTimer(opts.Settle),
		feed:     time.NewTimer(time.Hour),
		judge:    time.NewTimer(time.Hour),
	}
	st.feed.Stop()
	st.judge.Stop()
	first := st.m.status
	p.status.Store(&first)
	out := make(chan []byte, 64)
	waited := make(chan waitResult, 1)
	go p.readOutput(out)
	go func() { err := cmd.Wait(); waited <- waitResult{cmd.ProcessState, err} }()
	go p.writeInput()
	go p.forwardReplies(st.scr.emu)
	// The start is announced before the loop owns st: the loop's own
	// changes (an exit at once) must come after it, never before.
	if opts.OnChange != nil {
		opts.OnChange(st.m.status)
	}
	go p.loop(st, out, waited)
	opts.Log.WithField("pid", p.pid).Info("Pane started")
	return p, nil
}

// pollable returns the terminal's master side as a file Go's poller
// reads. creack/pty leaves it in blocking mode (its ioctls call Fd), so
// each read would hold an OS thread, and each return from one wake the
// runtime's monitor thread: with 50 chatty panes that cost more CPU than
// all the rest of the supervisor. The duplicate shares the open file,
// now non-blocking; the original descriptor is closed.
func pollable(f *os.File) (*os.File, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dup the terminal: %w", err)
	}
	f.Close()
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("make the terminal non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// readOutput feeds the loop with what the program prints. It ends at EOF
// (EIO on Linux once the last holder of the terminal is gone) or when the
// pane is closed.
func (p *PTY) readOutput(out chan<- []byte) {
	defer close(out)
	buf := make([]byte, 32*1024)
	for {
		n, err := p.ptmx.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			select {
			case out <- chunk:
			case <-p.quit:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// writeInput is the only writer of the terminal's input side, so keys from
// different senders never interleave within one write.
func (p *PTY) writeInput() {
	for {
		select {
		case b := <-p.writes:
			if _, err := p.ptmx.Write(b); err != nil {
				p.opts.Log.WithError(err).Debug("Pane input write failed")
			}
		case <-p.quit:
			return
		}
	}
}

// replyStop is written into the emulator's reply pipe by the loop to end
// forwardReplies. vt.Emulator.Close writes a field that Read reads without a
// lock, so the forwarder must have left Read for good before Close is
// called; a pipe Read returns the bytes of exactly one Write, so the
// sentinel arrives whole.
const replyStop = "\x00\x00cicy-pane-closed"

// forwardReplies sends the emulator's answers to terminal queries (cursor
// position, device attributes) back to the program. It drops a reply rather
// than block the loop when input is backed up.
func (p *PTY) forwardReplies(emu *vt.Emulator) {
	buf := make([]byte, 256)
	for {
		n, err := emu.Read(buf)
		if string(buf[:n]) == replyStop {
			return
		}
		if n > 0 {
			select {
			case p.writes <- append([]byte(nil), buf[:n]...):
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *PTY) loop(st *ptyState, out <-chan []byte, waited <-chan waitResult) {
	defer close(p.loopDone)
	for {
		select {
		case chunk, ok := <-out:
			var ended bool
			if ok {
				chunk, ended = gather(chunk, out)
				p.onOutput(st, chunk)
			}
			if !ok || ended {
				out = nil
				st.eof = true
				for ch := range st.subs {
					close(ch)
				}
				clear(st.subs)
				for ch := range st.watchers {
					close(ch)
				}
				clear(st.watchers)
			}
		case <-st.feed.C:
			st.feedArmed = false
			st.scr.flush()
		case <-st.quiet.C:
			st.scr.release()
			p.onQuiet(st, time.Now())
		case <-p.requests:
			p.onRequests(st, time.Now())
		case <-st.judge.C:
			st.m.judge(time.Now())
			p.changed(st, false)
		case w := <-waited:
			waited = nil
			p.onExit(st, w)
		case f := <-p.cmds:
			f(st)
		case <-p.quit:
			st.quiet.Stop()
			st.feed.Stop()
			st.judge.Stop()
			st.scr.emu.SendText(replyStop) // returns once the forwarder has read it
			st.scr.emu.Close()
			p.ptmx.Close()
			for ch := range st.subs {
				close(ch)
			}
			for ch := range st.watchers {
				close(ch)
			}
			return
		}
	}
}

// maxBatch bounds how much output the loop takes in one go: the viewers
// get it as one write, and an attach queue of 1024 batches holds no more
// than 1024 reads could (32 MB).
const maxBatch = 32 << 10

// feedDelay is the longest output waits before the emulator sees it
// unasked (a program's terminal query is answered by then); Screen and the
// screen rules feed it first.
const feedDelay = 20 * time.Millisecond

// gather joins to first the output already waiting behind it, up to
// maxBatch; ended reports that the output ended meanwhile.
func gather(first []byte, out <-chan []byte) (batch []byte, ended bool) {
	batch = first
	for len(batch) < maxBatch {
		select {
		case more, ok := <-out:
			if !ok {
				return batch, true
			}
			batch = append(batch[:len(batch):len(batch)], more...)
		default:
			return batch, false
		}
	}
	return batch, false
}

func (p *PTY) onOutput(st *ptyState, chunk []byte) {
	if st.scr.add(chunk) && !st.feedArmed {
		st.feed.Reset(feedDelay)
		st.feedArmed = true
	}
	st.paste.feed(chunk)
	for ch := range st.subs {
		select {
		case ch <- chunk:
		default: // a viewer too slow to keep up is dropped, not waited for
			close(ch)
			delete(st.subs, ch)
		}
	}
	for ch := range st.watchers {
		select {
		case ch <- struct{}{}:
		default: // one change is already waiting to be seen
		}
	}
	if !st.m.running() {
		return
	}
	now := time.Now()
	st.quiet.Reset(p.opts.Settle)
	changed := st.m.output(now)
	// An agent redraws its screen all the time; its rules decide, at most
	// a few times a second and once more when it is quiet.
	// A screen held back by that limit is looked at when it is up: no
	// screen that lasts that long is missed (a short turn's busy look).
	if p.opts.Rules != nil {
		if wait := classifyEvery - now.Sub(st.classifiedAt); wait <= 0 {
			p.classify(st, now)
		} else {
			st.quiet.Reset(wait)
		}
	}
	p.changed(st, changed)
}

// onQuiet runs when the quiet timer fires: an agent's screen is looked
// at, another pane settles.
func (p *PTY) onQuiet(st *ptyState, now time.Time) {
	if p.opts.Rules != nil {
		p.classify(st, now)
		return
	}
	changed := st.m.quiet(now)
	if left := st.m.quietLeft(now); left > 0 {
		st.quiet.Reset(left)
	}
	p.changed(st, changed)
}

// classifyEvery is how often, at most, an agent's screen rules look
// while it prints.
const classifyEvery = 250 * time.Millisecond

// classify applies the screen rules if they may decide now, and looks
// again soon while their verdict waits for its second look. Right after
// typed input they look too, but only a busy look counts (see
// machine.screen).
func (p *PTY) classify(st *ptyState, now time.Time) {
	st.classifiedAt = now
	look, retry := st.m.mayLook(now)
	if retry > 0 {
		st.quiet.Reset(min(retry, classifyEvery))
	}
	if !look && retry == 0 {
		return
	}
	v, _ := p.opts.Rules.Classify(NewLayout(st.scr.view().String(), p.opts.Layout)) // a zero verdict when no rule matches
	changed := st.m.screen(now, v)
	if st.m.waitsLook() {
		// A verdict applies at its second look: take it once the screen
		// has been quiet for the settle time, or sooner on output; a
		// dialog's sooner still (see confirmLook in tmux.go).
		wait := p.opts.Settle
		if st.m.status.Pending == Waiting {
			wait = min(wait, confirmLook)
		}
		st.quiet.Reset(wait)
	}
	p.changed(st, changed)
}

// RequestsChanged tells the pane that its count of model requests in
// flight (Options.InFlight) changed. It never blocks: the loop reads the
// latest count when it gets to it.
func (p *PTY) RequestsChanged() {
	select {
	case p.requests <- struct{}{}:
	default: // a wake-up is already waiting
	}
}

// onRequests applies the count of requests in flight. Once the last one
// ended the screen is looked at, in case it decides now.
func (p *PTY) onRequests(st *ptyState, now time.Time) {
	if p.opts.InFlight == nil {
		return
	}
	n := p.opts.InFlight()
	p.changed(st, st.m.requests(now, n))
	if n == 0 && p.opts.Rules != nil && st.m.running() {
		p.classify(st, now)
	}
}

// SetState records what an agent's own hook says of it (see docs/hooks.md): it
// stands over the screen rules for the hook-quiet time.
func (p *PTY) SetState(s State, reason string) {
	p.do(func(st *ptyState) { p.changed(st, st.m.hook(time.Now(), s, reason)) })
}

func (p *PTY) onExit(st *ptyState, w waitResult) {
	reason, cause := describeExit(w.state, w.err), CauseExit
	select {
	case <-p.stopping:
		reason, cause = p.stopWhy+": "+reason, CauseStop
	default:
	}
	st.quiet.Stop()
	p.changed(st, st.m.exit(time.Now(), cause, reason, exitCode(w.state)))
	// What the program left running ends with it (a stop waits for that).
	go func() {
		defer close(p.groupDone)
		p.opts.Group.End(p.groupGrace())
	}()
	close(p.exited)
	p.opts.Log.WithField("pid", p.pid).Infof("Pane %s", reason)
}

// changed publishes the machine's status if it changed, then announces a
// change of state: a reader told of it finds it published.
func (p *PTY) changed(st *ptyState, announce bool) {
	if p.opts.Rules != nil {
		if left := st.m.judgeLeft(time.Now()); left > 0 {
			st.judge.Reset(left)
		}
	}
	p.publish(st)
	if announce && p.opts.OnChange != nil {
		p.opts.OnChange(st.m.status)
	}
}

// publish stores a copy of the machine's status for Status if it changed.
func (p *PTY) publish(st *ptyState) {
	if st.pubRev == st.m.rev {
		return
	}
	s := st.m.status
	p.status.Store(&s)
	st.pubRev = st.m.rev
}

func describeExit(ps *os.ProcessState, err error) string {
	if ps == nil {
		return fmt.Sprintf("wait failed: %v", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %s", signalName(ws.Signal()))
	}
	return fmt.Sprintf("exited with code %d", ps.ExitCode())
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL",
	syscall.SIGTERM: "SIGTERM", syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGQUIT: "SIGQUIT",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return s.String()
}

func exitCode(ps *os.ProcessState) *int {
	if ps == nil {
		return nil
	}
	c := ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		c = 128 + int(ws.Signal())
	}
	return &c
}

// do runs f on the loop and waits for it; false when the pane is closed.
func (p *PTY) do(f func(*ptyState)) bool {
	done := make(chan struct{})
	select {
	case p.cmds <- func(st *ptyState) { f(st); close(done) }:
		<-done
		return true
	case <-p.loopDone:
		return false
	}
}

// PID is the process id of the pane's program (also its process group).
func (p *PTY) PID() int { return p.pid }

// Exited is closed once the program has ended and been reaped.
func (p *PTY) Exited() <-chan struct{} { return p.exited }

// Status returns the pane's state. It does not wait for the pane's loop:
// the loop publishes a copy on every change.
func (p *PTY) Status() Status {
	select {
	case <-p.loopDone:
		return Status{State: Exited, Cause: CauseClosed, Reason: "closed", Since: time.Now()}
	default:
		return *p.status.Load()
	}
}

// Screen returns the visible screen as text, trailing spaces and blank
// lines removed.
func (p *PTY) Screen() string {
	var s string
	p.do(func(st *ptyState) { s = st.scr.view().String() })
	return strings.TrimRight(s, "\n ")
}

// StyledScreen returns the visible screen with its colours, read from the
// emulator's cells; trailing blanks are dropped as Screen drops them.
func (p *PTY) StyledScreen() []StyledLine {
	var lines []StyledLine
	p.do(func(st *ptyState) { lines = styledScreen(st.scr.view()) })
	return lines
}

// SendText delivers text as typed input: as a bracketed paste when the
// program asked for bracketed paste, literally otherwise, then Enter after
// the enter delay when enter is true.
func (p *PTY) SendText(text string, enter bool) error {
	var paste bool
	if !p.do(func(st *ptyState) { paste = st.paste.on }) {
		return ErrExited
	}
	if text != "" {
		b := text
		if paste {
			b = pasteStart + strings.ReplaceAll(text, pasteEnd, "") + pasteEnd
		}
		if err := p.write([]byte(b)); err != nil {
			return err
		}
	}
	if !enter {
		return nil
	}
	if text != "" && p.opts.EnterDelay > 0 {
		select {
		case <-time.After(p.opts.EnterDelay):
		case <-p.quit:
			return ErrExited
		}
	}
	return p.write([]byte("\r"))
}

// SendKeys delivers raw key bytes (see KeyBytes).
func (p *PTY) SendKeys(b []byte) error { return p.write(b) }

// write queues input for the program. Input makes a starting or idle pane
// busy: the program has work, whether or not it echoes anything.
func (p *PTY) write(b []byte) error {
	select {
	case <-p.exited:
		return ErrExited
	default:
	}
	p.do(func(st *ptyState) {
		changed := st.m.input(time.Now())
		if st.m.running() {
			st.quiet.Reset(p.opts.Settle)
		}
		p.changed(st, changed)
	})
	select {
	case p.writes <- b:
		return nil
	case <-p.quit:
		return ErrExited
	}
}

// Resize changes the terminal size seen by the program and the emulator.
func (p *PTY) Resize(rows, cols uint16) error {
	if rows == 0 || cols == 0 {
		return fmt.Errorf("bad size %dx%d", cols, rows)
	}
	var err error
	p.do(func(st *ptyState) {
		if st.scr.emu.Width() == int(cols) && st.scr.emu.Height() == int(rows) {
			return
		}
		// Through the raw descriptor: pty.Setsize would call Fd, which
		// puts the file back in blocking mode.
		rc, cerr := p.ptmx.SyscallConn()
		if cerr != nil {
			err = cerr
			return
		}
		if cerr = rc.Control(func(fd uintptr) {
			err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
		}); cerr != nil {
			err = cerr
		}
		st.scr.resize(int(cols), int(rows))
	})
	if err != nil {
		return fmt.Errorf("resize: %w", err)
	}
	return nil
}

// Attach subscribes a viewer: it returns the escape sequence that paints
// the current screen and a channel of everything printed from then on. The
// channel closes when the program's output ends, the viewer falls too far
// behind, or detach is called.
func (p *PTY) Attach() (repaint []byte, output <-chan []byte, detach func(), err error) {
	ch := make(chan []byte, 1024)
	ok := p.do(func(st *ptyState) {
		if st.eof {
			err = ErrExited
			return
		}
		repaint = paintScreen(st.scr.view())
		st.subs[ch] = struct{}{}
	})
	if !ok {
		err = ErrExited
	}
	if err != nil {
		return nil, nil, nil, err
	}
	detach = func() {
		p.do(func(st *ptyState) {
			if _, ok := st.subs[ch]; ok {
				delete(st.subs, ch)
				close(ch)
			}
		})
	}
	return repaint, ch, detach, nil
}

// Watch tells the caller when the screen changes: the channel holds at
// most one pending change, so a flood is one wake-up per look, not one per
// read, and a watcher is never dropped. It is closed when the program's
// output ends or the pane closes; stop ends the watch.
func (p *PTY) Watch() (changed <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	ok := p.do(func(st *ptyState) {
		if st.eof {
			close(ch)
			return
		}
		st.watchers[ch] = struct{}{}
	})
	if !ok {
		close(ch)
	}
	stop = func() {
		p.do(func(st *ptyState) {
			if _, ok := st.watchers[ch]; ok {
				delete(st.watchers, ch)
				close(ch)
			}
		})
	}
	return ch, stop
}

// paintScreen renders the emulator's screen as bytes that redraw it on a
// real terminal: clear, the styled lines, the cursor position.
func paintScreen(emu *vt.Emulator) []byte {
	var b strings.Builder
	b.WriteString("\x1b[0m\x1b[H\x1b[2J")
	b.WriteString(strings.ReplaceAll(emu.Render(), "\n", "\r\n"))
	pos := emu.CursorPosition()
	fmt.Fprintf(&b, "\x1b[0m\x1b[%d;%dH", pos.Y+1, pos.X+1)
	if emu.CursorHidden() {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}

// Stop ends the program, why saying for the exit reason: SIGHUP and
// SIGTERM to its process group (the hangup a closing terminal would send,
// and the polite request), then SIGKILL to the group if it has not ended
// within grace; then every process the program started that still runs,
// even one that left the group or the session, is killed (the process
// tree is looked at while the program stops, so one that its parent's end
// left to init is still known). It returns once the process has been
// reaped, or after a bounded wait if even SIGKILL does not reap it (a
// process stuck in the kernel).
func (p *PTY) Stop(grace time.Duration, why string) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.stopOnce.Do(func() { p.stopWhy = why; close(p.stopping) })
	p.graceNs.Store(int64(grace) + 1)
	tree := reaper.NewTree(p.pid)
	tree.Look()
	_ = syscall.Kill(-p.pid, syscall.SIGHUP)
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	p.opts.Group.Signal(syscall.SIGTERM) // what left the group, in the pane's cgroup
	exited := p.waitExit(grace, tree)
	// The tree before the program, while the program still holds what it
	// holds.
	tree.End()
	if exited {
		<-p.groupDone
		return
	}
	p.opts.Log.WithField("pid", p.pid).Warnf("Pane did not stop within %s; sending SIGKILL", grace)
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	select {
	case <-p.exited:
		<-p.groupDone
	case <-time.After(5 * time.Second):
		p.opts.Log.WithField("pid", p.pid).Error("Pane process not reaped 5s after SIGKILL")
	}
}

// groupGrace is what the program's leftovers get between SIGTERM and
// SIGKILL: the stop's grace, else DefaultGrace.
func (p *PTY) groupGrace() time.Duration {
	if g := p.graceNs.Load(); g > 0 {
		return time.Duration(g - 1)
	}
	return DefaultGrace
}

// waitExit waits up to grace for the program to end, looking at its
// process tree meanwhile; it reports whether the program ended.
func (p *PTY) waitExit(grace time.Duration, tree *reaper.Tree) bool {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	look := time.NewTicker(treeLook)
	defer look.Stop()
	for {
		select {
		case <-p.exited:
			return true
		case <-deadline.C:
			return false
		case <-look.C:
			tree.Look()
		}
	}
}

// Close stops the program if it still runs and ends every goroutine of the
// pane. The last screen is gone afterwards.
func (p *PTY) Close() {
	p.Stop(0, "closed")
	p.closeMu.Do(func() { close(p.quit) })
	<-p.loopDone
}
