package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/gitwork"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Coming back: a pane whose process is gone is brought back by its
// restart policy (topology.RestartPolicies). At a start, one that was
// running when the machine or the supervisor went down comes back unless
// its policy is never; while the supervisor runs, one whose program
// exits by itself comes back when its policy is always (or on-failure
// and the exit was a failure). Three deaths in a row within quickDeath
// of starting stop it: a crash loop, under needs-you.
const (
	// quickDeath: a pane that dies this soon after it started died at
	// once (its program cannot run, its session cannot be resumed).
	quickDeath = 10 * time.Second
	// loopDeaths quick deaths in a row make a crash loop.
	loopDeaths = 3
	// comeBackFirst is the wait before the first restart of a pane that
	// exited; each quick death in a row doubles it.
	comeBackFirst = 500 * time.Millisecond
)

// Reasons a pane came back with.
const (
	cameBackReboot = "restarted after a reboot or crash"
	cameBackExit   = "restarted by its restart policy"
	crashLoopWhy   = topology.NeedCrashLoop
	// resumedAs starts the reason of a CLI agent that came back in its
	// own recorded session.
	resumedAs = "resumed "
)

// lives is what the restart policy knows of a pane's starts and deaths.
type lives struct {
	mu      sync.Mutex
	started time.Time
	quick   int       // quick deaths in a row
	last    time.Time // the last death counted (one end may be told twice)
}

// start notes a start of the pane's program.
func (l *lives) start(at time.Time) {
	l.mu.Lock()
	l.started = at
	l.mu.Unlock()
}

// died notes a death at at and returns the quick deaths in a row so far.
func (l *lives) died(at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.Equal(l.last) {
		return l.quick
	}
	l.last = at
	if !l.started.IsZero() && at.Sub(l.started) < quickDeath {
		l.quick++
	} else {
		l.quick = 0
	}
	return l.quick
}

// reset forgets the deaths (a start by hand).
func (l *lives) reset() {
	l.mu.Lock()
	l.quick = 0
	l.mu.Unlock()
}

// policyOf is a pane's restart policy ("" for the default).
func policyOf(e *entry) string { return e.restart }

// comesBackAtStart reports whether a pane found gone at a start comes
// back: every policy but never.
func comesBackAtStart(e *entry) bool { return policyOf(e) != topology.RestartNever }

// comesBackAfterExit reports whether a pane whose program exited by
// itself with st comes back.
func comesBackAfterExit(e *entry, st pane.Status) bool {
	switch policyOf(e) {
	case topology.RestartAlways:
		return true
	case topology.RestartOnFailure:
		return st.ExitCode == nil || *st.ExitCode != 0
	}
	return false
}

// bringBackAll brings back, each on a goroutine of its own, the panes
// found gone at the start; it runs once the outbox has settled their
// tasks (a task a pane that cannot resume was working on failed as
// interrupted by a restart).
func (s *Supervisor) bringBackAll() {
	s.mu.Lock()
	ids := s.gone
	s.gone = nil
	s.mu.Unlock()
	for _, id := range ids {
		s.goBack(func() { s.bringBack(id, cameBackReboot, 0, true) })
	}
}

// goBack runs f on a goroutine the supervisor's Close waits for.
func (s *Supervisor) goBack(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	s.comeBacks.Add(1)
	go func() {
		defer s.comeBacks.Done()
		f()
	}()
}

// exited is the restart policy's look at a terminal pane whose program
// ended: one that exited by itself (not stopped, killed or restarted)
// comes back by its policy, after a wait that doubles with each quick
// death, or stops in a crash loop.
func (s *Supervisor) exited(id string, st pane.Status) {
	e := s.liveEntry(id)
	if e == nil {
		return
	}
	quick := e.lives.died(st.Since)
	if quick > 0 && strings.HasPrefix(e.cameBackAs(), resumedAs) {
		// Its session could not be resumed (its file deleted, a CLI that
		// refuses an older one): a new conversation, said so.
		why := fmt.Sprintf("restarted as a new conversation: resuming its session died at once (%s)", deathOf(st))
		s.goBack(func() { s.bringBack(id, why, quick, false) })
		return
	}
	if !comesBackAfterExit(e, st) {
		return
	}
	s.goBack(func() {
		if quick >= loopDeaths {
			s.crashLoop(e, st, quick)
			return
		}
		wait := comeBackFirst << max(quick-1, 0)
		select {
		case <-time.After(wait):
		case <-s.quit:
			return
		}
		s.bringBack(id, cameBackExit, quick, true)
	})
}

// ownExit reports whether k, what runs for e, is a terminal whose program
// ended by itself: a stop, kill or restart set another kind first.
func ownExit(k kind) bool {
	if _, ok := k.(*stopped); ok {
		return false
	}
	return !k.Status().Running()
}

// bringBack starts pane id's program again in its workspace, unless
// something else started, stopped or removed it meanwhile (wasQuick: the
// quick deaths in a row before it, for the log). A CLI agent resumes its
// recorded session when resume is set and it has one.
func (s *Supervisor) bringBack(id, why string, wasQuick int, resume bool) {
	e, err := s.get(id)
	if err != nil {
		return
	}
	e.op.Lock()
	defer e.op.Unlock()
	k := e.kind()
	if p, ok := k.(*stopped); !(ok && (p.gone || p.cannotBack)) && !ownExit(k) {
		return // started, stopped by hand or replaced meanwhile
	}
	if ownExit(k) {
		k.Stop(s.cfg.StopGrace, why) // its ended session, kept for its screen
	}
	log := s.log.WithField("pane", id)
	session := ""
	if resume {
		session = resumable(e)
	}
	var nk kind
	note := ""
	_, serr := os.Stat(e.cfg.Workspace)
	if serr != nil && !isWorktreePane(e) {
		// its program would start elsewhere (tmux: in the home folder)
		err = fmt.Errorf("its workspace %s is gone (deleted while it was down?)", e.cfg.Workspace)
	} else {
		if w, ok := gitwork.Of(e.cfg); ok && (serr != nil || e.worktreeAgain.Swap(false)) {
			note = "; its worktree was gone: " + w.Branch + " checked out there again (what was not committed is lost)"
		}
		nk, err = s.launchAs(e, false, session)
	}
	if err != nil {
		full := cicy.IsDiskFull(err)
		again := "; 'cicy-agent restart " + id + "' tries again"
		if full {
			again = "; it is tried again once the disk has room"
		}
		st := pane.Status{State: pane.Error, Reason: "could not come back: " + err.Error() + again, Since: time.Now()}
		e.set(&stopped{cfg: e.cfg, st: st, cannotBack: full})
		s.saveState(id, st)
		s.paneChanged(id)
		log.WithError(err).Error("The pane could not come back")
		if full {
			s.disk.retry("the return of "+id, err, func() error { return s.bringBackAgain(id, why, resume) })
		}
		return
	}
	e.set(nk)
	if session != "" {
		why = resumedAs + session
	}
	why += note
	e.setCameBack(why)
	s.paneChanged(id)
	s.tasks.Kick()
	log.WithField("quick_deaths", wasQuick).Info("Pane came back: " + why)
}

// resumable is the session a CLI agent pane resumes when it starts
// again: its recorded one, when its agent resumes by id ("" otherwise).
func resumable(e *entry) string {
	k, ok := cliagent.Lookup(e.cfg.Type)
	if !ok || !k.ResumesByID() {
		return ""
	}
	id, _ := e.session.get()
	return id
}

// crashLoop stops bringing pane e back: its state says so, with the end
// of its last screen, under needs-you (crash-loop).
func (s *Supervisor) crashLoop(e *entry, last pane.Status, quick int) {
	e.op.Lock()
	defer e.op.Unlock()
	k := e.kind()
	if !ownExit(k) {
		return
	}
	screen, _ := k.Screen()
	why := fmt.Sprintf("%s: its program died within %s of starting %d times in a row (%s), so it is not started again; 'cicy-agent restart %s' tries once more",
		crashLoopWhy, quickDeath, quick, deathOf(last), e.cfg.ID)
	if tail := screenTail(s.scrub.String(screen), 3); tail != "" {
		why += "; its last screen ends: " + tail
	}
	st := pane.Status{State: pane.Error, Reason: why, Since: time.Now(), ExitCode: last.ExitCode}
	e.set(&stopped{cfg: e.cfg, st: st})
	s.saveState(e.cfg.ID, st)
	s.paneChanged(e.cfg.ID)
	s.log.WithField("pane", e.cfg.ID).Warn("The pane is in a crash loop: not started again")
}

// deathOf says how a program ended.
func deathOf(st pane.Status) string {
	if st.ExitCode != nil {
		return fmt.Sprintf("last exit code %d", *st.ExitCode)
	}
	if st.Reason != "" {
		return "last: " + st.Reason
	}
	return "last: ended"
}

// screenTail is the last n non-blank lines of a screen, joined with " ⏎ ".
func screenTail(screen string, n int) string {
	var out []string
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "Pane is dead") { // tmux's own line
			out = append([]string{l}, out...)
		}
	}
	return strings.Join(out, " ⏎ ")
}

// saveState records a pane's state in the database (its start and end).
func (s *Supervisor) saveState(id string, st pane.Status) {
	if err := s.store.SaveRuntime(context.Background(), id, runtimeOf(st)); err != nil {
		s.log.WithError(err).WithField("pane", id).Error("Could not record the pane's state")
	}
}

// restartLine is what a CLI agent that came back in its own session is
// told of the task it was working on when the machine went down.
const restartLine = "the machine restarted while you were working on this task, and you are back in the same conversation: check what is already done, finish the task, and answer as you would have"

// resumedTask is a task delivered to a CLI agent that was gone at the
// start and comes back resuming its session: once it is back and idle it
// is told, in one line, that the machine restarted while it worked on the
// task, and the task ends with that turn as usual. One that does not come
// back in that session fails, interrupted by the restart.
type resumedTask struct {
	e     *entry
	t     schema.Task
	wake  func()
	inner outbox.Delivery
}

// comeBackLook is how often a task waiting for its worker to come back
// looks again.
const comeBackLook = 500 * time.Millisecond

func (d *resumedTask) Check(now time.Time) outbox.Progress {
	if d.inner != nil {
		return d.inner.Check(now)
	}
	failed := func(why string) outbox.Progress {
		return outbox.Progress{Ended: true, Failed: true, Error: "interrupted by a restart: " + why, How: "its worker did not come back in its session"}
	}
	k := d.e.kind()
	if p, ok := k.(*stopped); ok {
		if p.gone {
			return outbox.Progress{Next: now.Add(comeBackLook)}
		}
		return failed("the worker did not come back (" + p.st.Reason + ")")
	}
	if back := d.e.cameBackAs(); !strings.HasPrefix(back, resumedAs) {
		return failed("the worker came back in a new conversation, which does not know the task (" + back + ")")
	}
	v := k.View()
	switch {
	case !v.Running:
		return failed("the worker's process ended (" + v.Reason + ")")
	case !v.Idle:
		return outbox.Progress{Next: now.Add(comeBackLook)}
	}
	told := d.t
	told.Text = restartLine
	inner, err := k.Deliver(told, d.wake)
	if err != nil {
		return failed("could not tell the worker: " + err.Error())
	}
	d.inner = inner
	return inner.Check(now)
}

func (d *resumedTask) Abandon() {
	if d.inner != nil {
		d.inner.Abandon()
	}
}

// cameBackFor is how long status sums up how the panes came back.
const cameBackFor = time.Hour

// cameBack sums up how the panes found gone at the start came back; nil
// when none was, or cameBackFor after the start.
func (s *Supervisor) cameBack() *topology.CameBack {
	if len(s.goneAtStart) == 0 || time.Since(s.startedAt) > cameBackFor {
		return nil
	}
	c := &topology.CameBack{At: s.startedAt, Gone: len(s.goneAtStart)}
	for _, id := range s.goneAtStart {
		e, err := s.get(id)
		if err != nil {
			c.Gone-- // removed since
			continue
		}
		p, stopped := e.kind().(*stopped)
		switch back := e.cameBackAs(); {
		case stopped && p.gone:
			c.Waiting++
		case stopped && back == "":
			c.Failed++
		case strings.HasPrefix(back, resumedAs):
			c.Resumed++
		default:
			c.Restarted++
		}
	}
	return c
}

// isWorktreePane reports whether e runs in a git worktree of its own
// (made again from its branch when its folder is gone).
func isWorktreePane(e *entry) bool { _, ok := gitwork.Of(e.cfg); return ok }

// tookWork notes that pane id was busy: its reason no longer says how it
// came back (explain still does).
func (s *Supervisor) tookWork(id string) {
	if e := s.liveEntry(id); e != nil {
		e.backFresh.Store(false)
	}
}

// liveEntry is this node's entry of pane id, registered or still being
// created (its program may report before Create is done); nil when none.
func (s *Supervisor) liveEntry(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.panes[id]; ok {
		return e
	}
	return s.starting[id]
}

// bringBackAgain is the retry of a return a full disk refused: the error
// is the new failure's, nil once the pane runs (or something else started
// or removed it meanwhile).
func (s *Supervisor) bringBackAgain(id, why string, resume bool) error {
	s.bringBack(id, why, 0, resume)
	e, err := s.get(id)
	if err != nil {
		return nil
	}
	if p, ok := e.kind().(*stopped); ok && p.cannotBack {
		return errors.New(p.st.Reason)
	}
	return nil
}
