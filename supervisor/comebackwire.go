package supervisor

import (
	"context"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/comeback"
	"github.com/cicy-ai/cicy-agent/supervisor/gitwork"
)

// Coming back after a reboot, a crash or an exit lives in
// supervisor/comeback (restart policies, crash loops, the returns, the
// reasons, a resumed task, a lost database, a team's left session); this
// is its wiring: the registry as comeback sees it (backPanes, backWorker)
// and what needs an entry — starting a pane again, stopping it in a crash
// loop, a killed team pane's session kept.

// checkDatabase refuses a lost database beside what it described, or
// with fresh moves that aside (comeback.CheckDatabase).
func checkDatabase(h Home, fresh bool, log *logrus.Entry) error {
	return comeback.CheckDatabase(h.Root, h.DB(), fresh, log)
}

// backPanes is the registry as the returns see it (comeback.Panes).
type backPanes struct{ s *Supervisor }

func (b backPanes) BringBack(id, why string, quick int, resume bool) {
	b.s.bringBack(id, why, quick, resume)
}

func (b backPanes) CrashLoop(id string, last pane.Status, quick int) {
	if e := b.s.liveEntry(id); e != nil {
		b.s.crashLoop(e, last, quick)
	}
}

func (b backPanes) Found(id string) comeback.Found {
	e, err := b.s.get(id)
	if err != nil {
		return comeback.Found{Removed: true}
	}
	p, stopped := e.kind().(*stopped)
	return comeback.Found{Stopped: stopped, Gone: stopped && p.gone, Back: e.cameBackAs()}
}

// backWorker is a CLI agent found gone that comes back in its session, as
// the task it was working on waits for it (comeback.Worker).
type backWorker struct{ e *entry }

func (w backWorker) Now() comeback.Now {
	k := w.e.kind()
	if p, ok := k.(*stopped); ok {
		return comeback.Now{Stopped: true, Gone: p.gone, Reason: p.st.Reason}
	}
	return comeback.Now{Back: w.e.cameBackAs(), Pane: k}
}

// exited is the restart policy's look at a terminal pane whose program
// ended (comeback.Decide): one that exited by itself (not stopped, killed
// or restarted) comes back, or stops in a crash loop.
func (s *Supervisor) exited(id string, st pane.Status) {
	e := s.liveEntry(id)
	if e == nil {
		return
	}
	quick := e.lives.Died(st.Since)
	s.back.Exited(id, st, quick, comeback.Decide(e.restart, st, quick, e.cameBackAs()))
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
	if p, ok := k.(*stopped); !(ok && (p.gone || p.cannotBack != nil)) && !ownExit(k) {
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
		err = comeback.WorkspaceGone(e.cfg.Workspace)
	} else {
		if w, ok := gitwork.Of(e.cfg); ok && (serr != nil || e.worktreeAgain.Swap(false)) {
			note = comeback.WorktreeAgain(w.Branch)
		}
		nk, err = s.launchAs(e, false, session)
	}
	if err != nil {
		full := cicy.IsDiskFull(err)
		st := pane.Status{State: pane.Error, Reason: comeback.CouldNotComeBack(id, err, full), Since: time.Now()}
		p := &stopped{cfg: e.cfg, st: st}
		if full {
			p.cannotBack = err
		}
		e.set(p)
		s.saveState(id, st)
		s.paneChanged(id)
		log.WithError(err).Error("The pane could not come back")
		if full {
			s.disk.Retry("the return of "+id, err, func() error { return s.bringBackAgain(id, why, resume) })
		}
		return
	}
	e.set(nk)
	if session != "" {
		why = comeback.Resumed(session)
	}
	why += note
	e.setCameBack(why)
	s.paneChanged(id)
	s.tasks.Kick()
	log.WithField("quick_deaths", wasQuick).Info("Pane came back: " + why)
}

// bringBackAgain is the retry of a return a full disk refused: the error
// is the new failure's (a full disk's again keeps the retry waiting), nil
// once the pane runs (or something else started or removed it meanwhile).
func (s *Supervisor) bringBackAgain(id, why string, resume bool) error {
	s.bringBack(id, why, 0, resume)
	e, err := s.get(id)
	if err != nil {
		return nil
	}
	if p, ok := e.kind().(*stopped); ok && p.cannotBack != nil {
		return p.cannotBack
	}
	return nil
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
	why := comeback.CrashLoop(e.cfg.ID, quick, last, s.scrub.String(screen))
	st := pane.Status{State: pane.Error, Reason: why, Since: time.Now(), ExitCode: last.ExitCode}
	e.set(&stopped{cfg: e.cfg, st: st})
	s.saveState(e.cfg.ID, st)
	s.paneChanged(e.cfg.ID)
	s.log.WithField("pane", e.cfg.ID).Warn("The pane is in a crash loop: not started again")
}

// saveState records a pane's state in the database (its start and end).
func (s *Supervisor) saveState(id string, st pane.Status) {
	if err := s.store.SaveRuntime(context.Background(), id, schema.RuntimeOf(st)); err != nil {
		s.log.WithError(err).WithField("pane", id).Error("Could not record the pane's state")
	}
}

// resumable is the session a CLI agent pane resumes when it starts
// again: its recorded one, when its agent resumes by id ("" otherwise).
func resumable(e *entry) string {
	k, ok := cliagent.Lookup(e.cfg.Type)
	if !ok || !k.ResumesByID() {
		return ""
	}
	id, _ := e.session.Get()
	return id
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

// noteLeft keeps what the team pane e, being killed, leaves for a later
// pane of its team and title: a CLI agent's recorded session
// (comeback.Leave).
func (s *Supervisor) noteLeft(ctx context.Context, e *entry) {
	session := resumable(e)
	if e.team == "" || session == "" || isWorktreePane(e) {
		return
	}
	l := comeback.Left{ID: e.cfg.ID, Type: e.cfg.Type, Session: session, At: time.Now()}
	if e.cfg.Workspace == s.cfg.Home.Workspace(e.cfg.ID) {
		l.Workspace = e.cfg.Workspace
	}
	if err := comeback.Leave(ctx, s.store, e.team, e.cfg.Title, l); err != nil {
		s.log.WithError(err).WithField("pane", e.cfg.ID).Warn("Could not keep the pane's session for the team's next up")
	}
}

// takeLeft is what a killed pane of req's team, title and type left for
// it (comeback.Take).
func (s *Supervisor) takeLeft(ctx context.Context, req *api.CreateRequest) *comeback.Left {
	return comeback.Take(ctx, s.store, req)
}

// resumeLeft is the session a new pane resumes: the left one's, once its
// folders are moved ("" when there is none, or they could not be).
func (s *Supervisor) resumeLeft(l *comeback.Left, row schema.Pane) string {
	if l == nil {
		return ""
	}
	if err := l.Move(s.cfg.Home.paneDir(l.ID), s.cfg.Home.paneDir(row.ID)); err != nil {
		s.log.WithError(err).WithField("pane", row.ID).Warn("Could not take over the folder of the team's earlier pane; a new conversation")
		return ""
	}
	return l.Session
}
