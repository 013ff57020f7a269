package pane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// How tmux panes are followed: one control-mode client (tmux -C) per
// server, attached to a watching session (watchSession) into which every
// pane's window is linked, since a control client hears %output only for
// the windows of its session. Its reader goroutine turns notifications
// into ctlEvents for the poller, which owns the panes' machines: output
// makes a pane busy at once, and the poller's timer makes it idle exactly
// the settle time after the last output. Sessions created or closed,
// windows closed and panes dying (a subscription to #{pane_dead}, which
// tmux checks once a second) make the poller sweep at once. While the
// client runs, quiet panes cost nothing but a slow safety sweep; when it
// dies the poller sweeps as before (activity to the second) and restarts
// it with a backoff.
//
// One client for all panes, rather than one per session: measured with 50
// idle bash sessions (tmux 3.3a), both use no CPU while idle, but 50
// clients take 21 MB of memory (PSS) and 3.4 MB more in the server, one
// client 0.8 MB; and a client per session marks every pane session
// "(attached)" to people and tools that look (tmux ls, #{session_attached}),
// where the watching session is the only one attached. The client is
// attached with ignore-size, so it never changes a window's size.

// watchSession is the session of the control client; its first window
// (named the same) is a placeholder that runs nothing.
const watchSession = "cicy-watch"

// subscription reports panes dying, at most once a second.
const deadSub = "cicy-dead"

// ctlKind is what a control client's notification means to the poller.
type ctlKind int

const (
	ctlOutput ctlKind = iota // a pane printed
	ctlChange                // a session or window came or went, or a pane died: sweep
	ctlUp                    // the client is attached
	ctlDown                  // the client ended
)

// ctlEvent is one notification of a control client.
type ctlEvent struct {
	kind  ctlKind
	pane  string // the pane id (%N) of an output
	bytes int    // how much of the pane's output the batch held (escaped)
	at    time.Time
	gen   int // which client
}

// ctlClient is a running control-mode client.
type ctlClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	gen   int
	quit  chan struct{} // closed by stop: the reader sends nothing more
	done  chan struct{} // closed when the reader ended
}

// startCtl starts a control client attached to the watching session; its
// reader sends events on events until the client ends or stop.
func (s *TmuxServer) startCtl(gen int, events chan<- ctlEvent) (*ctlClient, error) {
	cmd := exec.Command("tmux", append(s.base(), "-C", "attach-session", "-f", "ignore-size", "-t", "="+watchSession)...)
	cmd.Env = clientEnv(os.Environ())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("tmux control client: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("tmux control client: %w", err)
	}
	s.connecting.Lock()
	defer s.connecting.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the tmux control client: %w", err)
	}
	c := &ctlClient{cmd: cmd, stdin: stdin, gen: gen, quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(c.done)
		readCtl(stdout, gen, events, c.quit, ready)
	}()
	// Its first line (the attach command's %begin) comes once the server
	// started it in control mode.
	select {
	case <-ready:
	case <-c.done:
	case <-time.After(DefaultTmuxTimeout):
	}
	return c, nil
}

// send writes one command line to the client.
func (c *ctlClient) send(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// stop ends the client: its input closed (a control client exits then),
// killed if it lingers; it waits for the reader and the process.
func (c *ctlClient) stop() {
	close(c.quit)
	_ = c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	_ = c.cmd.Wait()
}

// readCtl reads a control client's notifications until it ends. It decodes
// nothing of an output but its pane id, and sends one output event per
// pane for each batch of lines it reads without waiting (a pane flooding
// output costs one event per read, not one per line), stamped when the
// batch was read, with the bytes the pane's lines held. The last event is
// ctlDown. ready is closed at the first line.
func readCtl(r io.Reader, gen int, events chan<- ctlEvent, quit <-chan struct{}, ready chan<- struct{}) {
	send := func(ev ctlEvent) bool {
		ev.gen = gen
		select {
		case events <- ev:
			return true
		case <-quit:
			return false
		}
	}
	defer send(ctlEvent{kind: ctlDown})
	br := bufio.NewReaderSize(r, 64<<10)
	type printed struct {
		id    string
		bytes int
	}
	var seen []printed // panes that printed in this batch
	inBlock, midLine := false, false
	outID := -1 // the pane of the long output line being read, in seen
	for {
		line, err := br.ReadSlice('\n')
		if ready != nil && len(line) > 0 {
			close(ready)
			ready = nil
		}
		switch {
		case len(line) > 0 && midLine:
			if outID >= 0 {
				seen[outID].bytes += len(line)
			}
		case len(line) > 0:
			outID = -1
			kind, id := ctlLine(line, &inBlock)
			switch {
			case kind == ctlOutput:
				outID = slices.IndexFunc(seen, func(p printed) bool { return p.id == string(id) })
				if outID < 0 {
					seen = append(seen, printed{id: string(id)})
					outID = len(seen) - 1
				}
				seen[outID].bytes += len(line)
			case kind >= 0:
				if !send(ctlEvent{kind: kind, at: time.Now()}) {
					return
				}
			}
		}
		midLine = errors.Is(err, bufio.ErrBufferFull) // the rest of a long line follows
		if err != nil && !midLine {
			return
		}
		if br.Buffered() == 0 && len(seen) > 0 && !midLine {
			now := time.Now()
			for _, p := range seen {
				if !send(ctlEvent{kind: ctlOutput, pane: p.id, bytes: p.bytes, at: now}) {
					return
				}
			}
			seen = seen[:0]
		}
	}
}

// ctlLine reads one line of a control client: its kind (-1 for one that
// means nothing here) and, for an output, the pane id. inBlock tracks the
// output blocks of commands, whose lines are not notifications.
func ctlLine(line []byte, inBlock *bool) (ctlKind, []byte) {
	word, rest, _ := bytes.Cut(line, []byte{' '})
	word = bytes.TrimRight(word, "\r\n")
	if *inBlock {
		*inBlock = !(string(word) == "%end" || string(word) == "%error")
		return -1, nil
	}
	switch string(word) {
	case "%begin":
		*inBlock = true
	case "%output", "%extended-output":
		id, _, _ := bytes.Cut(rest, []byte{' '})
		return ctlOutput, id
	case "%session-changed":
		return ctlUp, nil
	case "%window-close", "%unlinked-window-close", "%sessions-changed", "%subscription-changed", "%window-add":
		return ctlChange, nil
	case "%exit":
		return ctlDown, nil
	}
	return -1, nil
}

// follower is the poller's side of the control client: it keeps the
// watching session's links and the client running. Only the poller uses
// it.
type follower struct {
	s       *TmuxServer
	events  chan ctlEvent
	c       *ctlClient
	gen     int
	up      bool
	fails   int
	retryAt time.Time
	warned  bool
	flows   map[string]*flow // by pane id, for the running client
}

// Flow control: a pane printing more than floodBytes of control output
// (tmux escapes it, about three bytes per byte printed) within floodWindow
// is paused for floodPause (refresh-client -A '%N:pause': tmux drops its
// output for this client meanwhile), then continued. Reading every byte a
// pane floods costs a sixth of a core and slows the pane; following it
// needs only to know that it still prints. A paused pane counts as
// printing until it is continued, so its idle may come up to floodPause
// late, never early. Screen redraws and typing stay well under the limit.
const (
	floodWindow = 100 * time.Millisecond
	floodBytes  = 64 << 10
	floodPause  = 100 * time.Millisecond
)

// flow is one pane's output in the current window, and its pause.
type flow struct {
	start  time.Time
	bytes  int
	resume time.Time // when a paused pane is continued; zero when not paused
}

// output counts a pane's output and pauses it if it floods.
func (f *follower) output(ev ctlEvent, now time.Time) {
	if f.c == nil || !f.up || ev.gen != f.gen {
		return
	}
	if f.flows == nil {
		f.flows = map[string]*flow{}
	}
	fl := f.flows[ev.pane]
	if fl == nil {
		fl = &flow{start: now}
		f.flows[ev.pane] = fl
	}
	if !fl.resume.IsZero() {
		return // output tmux queued before it took the pause
	}
	if now.Sub(fl.start) > floodWindow {
		fl.start, fl.bytes = now, 0
	}
	fl.bytes += ev.bytes
	if fl.bytes <= floodBytes {
		return
	}
	if err := f.c.send("refresh-client -A '" + ev.pane + ":pause'"); err != nil {
		f.down(now, err)
		return
	}
	fl.resume = now.Add(f.s.pauseFor)
	f.s.pauses.Add(1)
}

// paused reports whether the pane whose id is id is paused.
func (f *follower) paused(id string) bool {
	fl := f.flows[id]
	return fl != nil && !fl.resume.IsZero()
}

// resume continues the paused panes whose pause is over; it returns their
// ids (each may have printed while paused) and when the next is due (zero
// if none is paused).
func (f *follower) resume(now time.Time) (ids []string, next time.Time) {
	for id, fl := range f.flows {
		switch {
		case fl.resume.IsZero():
			if now.Sub(fl.start) > floodWindow {
				delete(f.flows, id)
			}
		case !now.Before(fl.resume):
			if err := f.c.send("refresh-client -A '" + id + ":continue'"); err != nil {
				f.down(now, err)
				return ids, time.Time{}
			}
			ids = append(ids, id)
			delete(f.flows, id)
		case next.IsZero() || fl.resume.Before(next):
			next = fl.resume
		}
	}
	return ids, next
}

// ensure links into the watching session the windows of the panes it
// lacks (creating it if need be), closes the windows left only in it (a
// pane session killed from outside: its program would run on), and starts
// the client if it is not running and its backoff has passed.
func (f *follower) ensure(l listing, panes []*TmuxPane, now time.Time) {
	if len(panes) == 0 && l.watch && len(l.panes) == 0 {
		// No pane is left: the client stops before its session goes (so
		// its end is no outage), and the server then exits.
		f.stop()
		f.s.endWatch(f.s.life, l)
		return
	}
	var args []string
	add := func(a ...string) {
		if len(args) > 0 {
			args = append(args, ";")
		}
		args = append(args, a...)
	}
	if !l.watch && len(panes) > 0 {
		add("new-session", "-d", "-s", watchSession, "-n", watchSession, "true")
	}
	for _, p := range panes {
		if info, ok := l.panes[p.name]; ok && info.id != "" && !l.watched[info.id] {
			add("link-window", "-d", "-s", info.id, "-t", "="+watchSession+":")
		}
	}
	for _, w := range l.orphans {
		add("kill-window", "-t", w)
	}
	if len(args) > 0 {
		if _, err := f.s.run(f.s.life, args...); err != nil {
			f.s.log.WithError(err).Debug("Link the panes' windows into the watching session")
		}
	}
	if f.c != nil || len(panes) == 0 || now.Before(f.retryAt) {
		return
	}
	f.gen++
	c, err := f.s.startCtl(f.gen, f.events)
	if err != nil {
		f.down(now, err)
		return
	}
	f.c = c
	f.s.ctlPID.Store(int64(c.cmd.Process.Pid))
}

// endWatch kills the watching session when the server has no pane
// session left (l): alone, it would keep the tmux server running after
// the last pane is gone. It reports whether it did.
func (s *TmuxServer) endWatch(ctx context.Context, l listing) bool {
	if !l.watch || len(l.panes) > 0 {
		return false
	}
	if _, err := s.run(ctx, "kill-session", "-t", "="+watchSession); err != nil && !noServer(err) {
		s.log.WithError(err).Debug("End the watching session")
	}
	return true
}

// event applies a control client's event other than an output; it
// reports whether the poller should sweep now.
func (f *follower) event(ev ctlEvent, now time.Time) bool {
	if f.c == nil || ev.gen != f.gen {
		return false // from a client already stopped
	}
	switch ev.kind {
	case ctlUp:
		if err := f.c.send("refresh-client -B '" + deadSub + ":%*:#{pane_dead}'"); err != nil {
			f.down(now, err)
			return true
		}
		f.up, f.fails = true, 0
		f.s.live.Store(true)
		if f.warned {
			f.s.log.Info("The tmux control client runs again: panes are followed by events")
			f.warned = false
		}
	case ctlDown:
		f.down(now, errors.New("it ended"))
	}
	return true
}

// down stops the client after it ended or failed and sets when to start
// the next; the panes are polled meanwhile. It warns once per outage.
func (f *follower) down(now time.Time, why error) {
	f.stop()
	f.retryAt = now.Add(min(30*time.Second, time.Second<<min(f.fails, 5)))
	f.fails++
	if !f.warned {
		f.s.log.WithError(why).Warn("The tmux control client is down: polling the panes until it restarts")
		f.warned = true
	}
}

// stop ends the client if one runs; its pauses end with it.
func (f *follower) stop() {
	f.up = false
	f.flows = nil
	f.s.live.Store(false)
	if f.c != nil {
		f.c.stop()
		f.c = nil
	}
}

// listing is one list-panes sweep of the server.
type listing struct {
	panes   map[string]paneInfo // by session, the watching session left out
	watch   bool                // the watching session exists
	watched map[string]bool     // pane ids linked into it
	orphans []string            // windows left only in it
}

// parseListing reads list-panes lines (see listFormat).
func parseListing(out string) listing {
	l := listing{panes: map[string]paneInfo{}, watched: map[string]bool{}}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 10 {
			continue
		}
		if f[0] == watchSession {
			l.watch = true
			l.watched[f[6]] = true
			if f[8] == "1" && f[9] != watchSession {
				l.orphans = append(l.orphans, f[7])
			}
			continue
		}
		l.panes[f[0]] = parsePaneInfo(f)
	}
	for name, info := range l.panes {
		info.watched = l.watched[info.id]
		l.panes[name] = info
	}
	return l
}
