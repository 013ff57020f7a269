package comeback

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Coming back: a pane whose process is gone is brought back by its
// restart policy (topology.RestartPolicies). At a start, one that was
// running when the machine or the supervisor went down comes back unless
// its policy is never; while the supervisor runs, one whose program
// exits by itself comes back when its policy is always (or on-failure
// and the exit was a failure). Three deaths in a row within QuickDeath
// of starting stop it: a crash loop, under needs-you.
const (
	// QuickDeath: a pane that dies this soon after it started died at
	// once (its program cannot run, its session cannot be resumed).
	QuickDeath = 10 * time.Second
	// LoopDeaths quick deaths in a row make a crash loop.
	LoopDeaths = 3
	// FirstWait is the wait before the first restart of a pane that
	// exited; each quick death in a row doubles it.
	FirstWait = 500 * time.Millisecond
)

// Reasons a pane came back with.
const (
	// Reboot: found gone at a start, it came back.
	Reboot = "restarted after a reboot or crash"
	// ByPolicy: its program exited by itself and it came back.
	ByPolicy = "restarted by its restart policy"
	// resumedAs starts the reason of a CLI agent that came back in its
	// own recorded session.
	resumedAs = "resumed "
)

// Resumed is the reason of a CLI agent that came back in its recorded
// session.
func Resumed(session string) string { return resumedAs + session }

// ResumedTeams is the reason of a team's new CLI agent that took over the
// session its team's earlier pane of the same title left (see Take).
func ResumedTeams(session string) string {
	return resumedAs + session + " (the session of the team's earlier pane)"
}

// IsResumed reports whether why, how a pane came back, says it resumed
// its session.
func IsResumed(why string) bool { return strings.HasPrefix(why, resumedAs) }

// The reasons of a pane found ended at a restart: it ended while no
// supervisor watched, so its state's time is when it was found so, not
// when it ended (explain says which).
const (
	LostTmux = "its tmux session is gone"
	LostDied = "lost when the supervisor died (crash or kill -9)"
)

// FoundAtRestart reports whether st is a pane's end found at a restart.
func FoundAtRestart(st pane.Status) bool {
	return !st.Running() && (strings.HasPrefix(st.Reason, LostTmux) || strings.HasPrefix(st.Reason, LostDied))
}

// FoundGone decides for pane id, with restart policy policy, found gone
// at a start (lost says how): whether it comes back, and the reason its
// state says meanwhile.
func FoundGone(id, policy, lost string) (back bool, reason string) {
	if AtStart(policy) {
		return true, lost + "; it comes back by its restart policy"
	}
	return false, lost + "; 'cicy-agent restart " + id + "' starts it again (its restart policy is never)"
}

// AtStart reports whether a pane with restart policy policy ("" for the
// default) found gone at a start comes back: every policy but never.
func AtStart(policy string) bool { return policy != topology.RestartNever }

// AfterExit reports whether a pane with restart policy policy whose
// program exited by itself with st comes back.
func AfterExit(policy string, st pane.Status) bool {
	switch policy {
	case topology.RestartAlways:
		return true
	case topology.RestartOnFailure:
		return st.ExitCode == nil || *st.ExitCode != 0
	}
	return false
}

// Lives is what the restart policy knows of a pane's starts and deaths.
// Its zero value is ready.
type Lives struct {
	mu      sync.Mutex
	started time.Time
	quick   int       // quick deaths in a row
	last    time.Time // the last death counted (one end may be told twice)
}

// Start notes a start of the pane's program.
func (l *Lives) Start(at time.Time) {
	l.mu.Lock()
	l.started = at
	l.mu.Unlock()
}

// Died notes a death at at and returns the quick deaths in a row so far.
func (l *Lives) Died(at time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.Equal(l.last) {
		return l.quick
	}
	l.last = at
	if !l.started.IsZero() && at.Sub(l.started) < QuickDeath {
		l.quick++
	} else {
		l.quick = 0
	}
	return l.quick
}

// Reset forgets the deaths (a start by hand).
func (l *Lives) Reset() {
	l.mu.Lock()
	l.quick = 0
	l.mu.Unlock()
}

// Action is what becomes of a pane whose program exited by itself.
type Action int

const (
	// Stay: it stays ended (its policy does not bring it back).
	Stay Action = iota
	// Fresh: it comes back at once in a new conversation: resuming its
	// session died at once.
	Fresh
	// Again: it comes back after Decision.Wait, resuming its session.
	Again
	// Loop: a crash loop; it is not started again.
	Loop
)

// Decision is what the restart policy does about an exit.
type Decision struct {
	Action Action
	Wait   time.Duration // before it comes back (Again)
	Why    string        // the reason it comes back with (Fresh, Again)
}

// Decide is what becomes of a pane with restart policy policy whose
// program exited by itself with st, after quick quick deaths in a row
// (Lives.Died), having last come back as backAs ("" when it did not).
func Decide(policy string, st pane.Status, quick int, backAs string) Decision {
	if quick > 0 && IsResumed(backAs) {
		// Its session could not be resumed (its file deleted, a CLI that
		// refuses an older one): a new conversation, said so.
		return Decision{Action: Fresh, Why: fmt.Sprintf("restarted as a new conversation: resuming its session died at once (%s)", DeathOf(st))}
	}
	if !AfterExit(policy, st) {
		return Decision{Action: Stay}
	}
	if quick >= LoopDeaths {
		return Decision{Action: Loop}
	}
	return Decision{Action: Again, Wait: FirstWait << max(quick-1, 0), Why: ByPolicy}
}

// CrashLoop is the reason of pane id's state once it is in a crash loop:
// quick deaths in a row, the last one last, with the end of its last
// screen (already scrubbed of credentials).
func CrashLoop(id string, quick int, last pane.Status, screen string) string {
	why := fmt.Sprintf("%s: its program died within %s of starting %d times in a row (%s), so it is not started again; 'cicy-agent restart %s' tries once more",
		topology.NeedCrashLoop, QuickDeath, quick, DeathOf(last), id)
	if tail := ScreenTail(screen, 3); tail != "" {
		why += "; its last screen ends: " + tail
	}
	return why
}

// CouldNotComeBack is the reason of pane id's state when it could not
// come back (err); full: for lack of space, and it is tried again once
// the disk has room.
func CouldNotComeBack(id string, err error, full bool) string {
	again := "; 'cicy-agent restart " + id + "' tries again"
	if full {
		again = "; it is tried again once the disk has room"
	}
	return "could not come back: " + err.Error() + again
}

// WorkspaceGone is why a pane whose workspace ws is gone does not come
// back: its program would start elsewhere (tmux: in the home folder).
func WorkspaceGone(ws string) error {
	return fmt.Errorf("its workspace %s is gone (deleted while it was down?)", ws)
}

// WorktreeAgain is added to the reason of a pane whose worktree folder
// was gone and was checked out again from branch.
func WorktreeAgain(branch string) string {
	return "; its worktree was gone: " + branch + " checked out there again (what was not committed is lost)"
}

// DeathOf says how a program ended.
func DeathOf(st pane.Status) string {
	if st.ExitCode != nil {
		return fmt.Sprintf("last exit code %d", *st.ExitCode)
	}
	if st.Reason != "" {
		return "last: " + st.Reason
	}
	return "last: ended"
}

// ScreenTail is the last n non-blank lines of a screen, joined with " ⏎ ".
func ScreenTail(screen string, n int) string {
	var out []string
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "Pane is dead") { // tmux's own line
			out = append([]string{l}, out...)
		}
	}
	return strings.Join(out, " ⏎ ")
}
