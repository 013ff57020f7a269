package comeback

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/topology"
)

func exit(code int) pane.Status { return pane.Status{State: pane.Exited, ExitCode: &code} }

// TestDecide: what becomes of a pane whose program exited by itself, by
// its policy, its quick deaths in a row and how it last came back.
func TestDecide(t *testing.T) {
	t.Parallel()
	killed := pane.Status{State: pane.Exited, Reason: "signal: killed"}
	for _, tc := range []struct {
		name   string
		policy string
		st     pane.Status
		quick  int
		backAs string
		want   Decision
	}{
		{"default policy stays", "", exit(1), 0, "", Decision{Action: Stay}},
		{"never stays", topology.RestartNever, exit(1), 0, "", Decision{Action: Stay}},
		{"always after a clean exit", topology.RestartAlways, exit(0), 0, "", Decision{Action: Again, Wait: FirstWait, Why: ByPolicy}},
		{"on-failure after a clean exit stays", topology.RestartOnFailure, exit(0), 0, "", Decision{Action: Stay}},
		{"on-failure after a failure", topology.RestartOnFailure, exit(2), 0, "", Decision{Action: Again, Wait: FirstWait, Why: ByPolicy}},
		{"on-failure after a signal", topology.RestartOnFailure, killed, 0, "", Decision{Action: Again, Wait: FirstWait, Why: ByPolicy}},
		{"first quick death waits the first wait", topology.RestartAlways, exit(1), 1, "", Decision{Action: Again, Wait: FirstWait, Why: ByPolicy}},
		{"second quick death waits twice as long", topology.RestartAlways, exit(1), 2, "", Decision{Action: Again, Wait: 2 * FirstWait, Why: ByPolicy}},
		{"third quick death is a loop", topology.RestartAlways, exit(1), LoopDeaths, "", Decision{Action: Loop}},
		{"a resumed session that died at once: a new conversation", topology.RestartNever, exit(3), 1, Resumed("abc"),
			Decision{Action: Fresh, Why: "restarted as a new conversation: resuming its session died at once (last exit code 3)"}},
		{"a resumed session that lived: by its policy", topology.RestartAlways, exit(3), 0, Resumed("abc"), Decision{Action: Again, Wait: FirstWait, Why: ByPolicy}},
		{"a restarted one that died at once: by its policy", topology.RestartAlways, exit(3), 1, ByPolicy, Decision{Action: Again, Wait: FirstWait, Why: ByPolicy}},
	} {
		if got := Decide(tc.policy, tc.st, tc.quick, tc.backAs); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestFoundGone: a pane found gone at a start comes back unless its
// policy is never, and its reason says which.
func TestFoundGone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy string
		back   bool
		reason string
	}{
		{"", true, LostDied + "; it comes back by its restart policy"},
		{topology.RestartAlways, true, LostDied + "; it comes back by its restart policy"},
		{topology.RestartOnFailure, true, LostDied + "; it comes back by its restart policy"},
		{topology.RestartNever, false, LostDied + "; 'cicy-agent restart w-4' starts it again (its restart policy is never)"},
	} {
		back, reason := FoundGone("w-4", tc.policy, LostDied)
		if back != tc.back || reason != tc.reason {
			t.Errorf("policy %q: %v %q, want %v %q", tc.policy, back, reason, tc.back, tc.reason)
		}
		st := pane.Status{State: pane.Exited, Reason: reason}
		if !FoundAtRestart(st) {
			t.Errorf("policy %q: %q not found at a restart", tc.policy, reason)
		}
	}
	for _, st := range []pane.Status{
		{State: pane.Exited, Reason: "killed"},
		{State: pane.Idle, Reason: LostTmux},
	} {
		if FoundAtRestart(st) {
			t.Errorf("%+v found at a restart", st)
		}
	}
}

// TestReasons: the reasons shown of a crash loop, a return that failed
// and a resumed session.
func TestReasons(t *testing.T) {
	t.Parallel()
	screen := "$ claude\nerror: bad config\n\n  line two  \nthird\n\nPane is dead (status 1)\n"
	got := CrashLoop("w-2", 3, exit(1), screen)
	want := "crash-loop: its program died within 10s of starting 3 times in a row (last exit code 1), so it is not started again; " +
		"'cicy-agent restart w-2' tries once more; its last screen ends: error: bad config ⏎ line two ⏎ third"
	if got != want {
		t.Errorf("crash loop:\n%s\nwant\n%s", got, want)
	}
	if got := CrashLoop("w-2", 3, pane.Status{}, ""); !strings.HasSuffix(got, "(last: ended), so it is not started again; 'cicy-agent restart w-2' tries once more") {
		t.Errorf("crash loop without a screen: %s", got)
	}
	if got := DeathOf(pane.Status{Reason: "signal: killed"}); got != "last: signal: killed" {
		t.Errorf("death of a signal: %s", got)
	}
	err := errors.New("no space left on device")
	if got := CouldNotComeBack("w-3", err, true); got != "could not come back: no space left on device; it is tried again once the disk has room" {
		t.Errorf("full: %s", got)
	}
	if got := CouldNotComeBack("w-3", err, false); got != "could not come back: no space left on device; 'cicy-agent restart w-3' tries again" {
		t.Errorf("not full: %s", got)
	}
	if !IsResumed(Resumed("s1")) || !IsResumed(ResumedTeams("s1")) || IsResumed(Reboot) || IsResumed(ByPolicy) || IsResumed("") {
		t.Error("IsResumed tells the resumed ones wrong")
	}
}

// TestTally: status's summary counts each pane found gone by how it is
// now; one removed since is not counted.
func TestTally(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_700_000_000, 0)
	got := Tally(at, []Found{
		{Removed: true},
		{Stopped: true, Gone: true},
		{Stopped: true},
		{Stopped: true, Back: Reboot}, // came back, then stopped by hand
		{Back: Resumed("s1")},
		{Back: Resumed("s2")},
		{Back: Reboot},
	})
	want := topology.CameBack{At: at, Gone: 6, Waiting: 1, Failed: 1, Resumed: 2, Restarted: 2}
	if *got != want {
		t.Errorf("%+v, want %+v", *got, want)
	}
}
