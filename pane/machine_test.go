package pane

import (
	"testing"
	"time"
)

// step is one event fed to a machine at a time after the start, and what
// the machine must then say.
type step struct {
	at      time.Duration
	do      func(m *machine, now time.Time) bool
	changed bool
	state   State
	cause   Cause
	reason  string
	since   time.Duration // when the state began
	pending State         // a screen verdict waiting for its second look
}

func output(m *machine, now time.Time) bool { return m.output(now) }
func quiet(m *machine, now time.Time) bool  { return m.quiet(now) }
func input(m *machine, now time.Time) bool  { return m.input(now) }
func hook(s State, reason string) func(*machine, time.Time) bool {
	return func(m *machine, now time.Time) bool { return m.hook(now, s, reason) }
}
func verdict(s State, rule string) func(*machine, time.Time) bool {
	return func(m *machine, now time.Time) bool {
		return m.screen(now, Verdict{State: s, Rule: Rule{Name: rule, State: s}})
	}
}
func exit(c Cause, reason string, code int) func(*machine, time.Time) bool {
	return func(m *machine, now time.Time) bool { return m.exit(now, c, reason, &code) }
}
func requests(n int) func(*machine, time.Time) bool {
	return func(m *machine, now time.Time) bool { return m.requests(now, n) }
}
func judge(m *machine, now time.Time) bool { m.judge(now); return false }

const settle = 500 * time.Millisecond

func TestMachine(t *testing.T) {
	ms := time.Millisecond
	s := time.Second
	quietText := "output quiet for 500ms"
	for _, tc := range []struct {
		name  string
		agent bool
		steps []step
	}{
		{name: "a start settles once output is quiet", steps: []step{
			{at: 100 * ms, do: output, state: Starting, cause: CauseStarted, reason: "started"},
			{at: 500 * ms, do: quiet, state: Starting, cause: CauseStarted, reason: "started"},
			{at: 600 * ms, do: quiet, changed: true, state: Idle, cause: CauseQuiet, reason: quietText, since: 600 * ms},
		}},
		{name: "output makes an idle pane busy until quiet again", steps: []step{
			{at: 500 * ms, do: quiet, changed: true, state: Idle, cause: CauseQuiet, reason: quietText, since: 500 * ms},
			{at: 2 * s, do: output, changed: true, state: Busy, cause: CauseOutput, reason: "output", since: 2 * s},
			{at: 2*s + 300*ms, do: output, state: Busy, cause: CauseOutput, reason: "output", since: 2 * s},
			{at: 2*s + 700*ms, do: quiet, state: Busy, cause: CauseOutput, reason: "output", since: 2 * s},
			{at: 2*s + 800*ms, do: quiet, changed: true, state: Idle, cause: CauseQuiet, reason: quietText, since: 2*s + 800*ms},
			{at: 3 * s, do: quiet, state: Idle, cause: CauseQuiet, reason: quietText, since: 2*s + 800*ms},
		}},
		{name: "input makes a starting or idle pane busy", steps: []step{
			{at: 100 * ms, do: input, changed: true, state: Busy, cause: CauseInput, reason: "input", since: 100 * ms},
			{at: 200 * ms, do: input, state: Busy, cause: CauseInput, reason: "input", since: 100 * ms},
			{at: 650 * ms, do: quiet, state: Busy, cause: CauseInput, reason: "input", since: 100 * ms},
			{at: 700 * ms, do: quiet, changed: true, state: Idle, cause: CauseQuiet, reason: quietText, since: 700 * ms},
			{at: 800 * ms, do: input, changed: true, state: Busy, cause: CauseInput, reason: "input", since: 800 * ms},
		}},
		{name: "an agent's output and quiet change nothing", agent: true, steps: []step{
			{at: 100 * ms, do: output, state: Starting, cause: CauseStarted, reason: "started"},
			{at: 5 * s, do: quiet, state: Starting, cause: CauseStarted, reason: "started"},
			{at: 5*s + 500*ms, do: verdict(Idle, "idle-prompt"), state: Starting, cause: CauseStarted, reason: "started", pending: Idle},
			{at: 6 * s, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 6 * s},
			{at: 7 * s, do: output, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 6 * s},
			{at: 7 * s, do: verdict(Idle, "idle-footer"), state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 6 * s},
		}},
		{name: "a hook stands over the screen for the hook-quiet time", agent: true, steps: []step{
			{at: 1 * s, do: hook(Busy, "hook:UserPromptSubmit"), changed: true, state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 2 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 3 * s, do: hook(Busy, "hook:PreToolUse"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s},
			{at: 12 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s},
			{at: 13 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s, pending: Idle},
			{at: 13*s + 500*ms, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 13*s + 500*ms},
		}},
		{name: "the screen waits out the input grace", agent: true, steps: []step{
			{at: 500 * ms, do: verdict(Idle, "idle-prompt"), state: Starting, cause: CauseStarted, reason: "started", pending: Idle},
			{at: 1 * s, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 1 * s},
			{at: 2 * s, do: input, changed: true, state: Busy, cause: CauseInput, reason: "input", since: 2 * s},
			{at: 2*s + 900*ms, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseInput, reason: "input", since: 2 * s},
			{at: 3 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseInput, reason: "input", since: 2 * s, pending: Idle},
			{at: 3*s + 500*ms, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 3*s + 500*ms},
		}},
		{name: "an exit keeps its reason", agent: true, steps: []step{
			{at: 1 * s, do: exit(CauseStop, "killed: killed by signal SIGTERM", 143), changed: true, state: Exited, cause: CauseStop, reason: "killed: killed by signal SIGTERM", since: 1 * s},
			{at: 2 * s, do: exit(CauseExit, "exited with code 0", 0), state: Exited, cause: CauseStop, reason: "killed: killed by signal SIGTERM", since: 1 * s},
			{at: 3 * s, do: hook(Idle, "hook:Stop"), state: Exited, cause: CauseStop, reason: "killed: killed by signal SIGTERM", since: 1 * s},
			{at: 4 * s, do: input, state: Exited, cause: CauseStop, reason: "killed: killed by signal SIGTERM", since: 1 * s},
			{at: 5 * s, do: output, state: Exited, cause: CauseStop, reason: "killed: killed by signal SIGTERM", since: 1 * s},
			{at: 20 * s, do: verdict(Idle, "idle-prompt"), state: Exited, cause: CauseStop, reason: "killed: killed by signal SIGTERM", since: 1 * s},
		}},
		{name: "a settled pane's exit", steps: []step{
			{at: 1 * s, do: quiet, changed: true, state: Idle, cause: CauseQuiet, reason: quietText, since: 1 * s},
			{at: 2 * s, do: exit(CauseExit, "exited with code 7", 7), changed: true, state: Exited, cause: CauseExit, reason: "exited with code 7", since: 2 * s},
			{at: 3 * s, do: quiet, state: Exited, cause: CauseExit, reason: "exited with code 7", since: 2 * s},
		}},
		{name: "a request in flight keeps the pane busy against the screen", agent: true, steps: []step{
			{at: 500 * ms, do: verdict(Idle, "idle-prompt"), state: Starting, cause: CauseStarted, reason: "started", pending: Idle},
			{at: 1 * s, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 1 * s},
			{at: 2 * s, do: requests(1), changed: true, state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 2 * s},
			{at: 3 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 2 * s},
			{at: 3 * s, do: verdict(Waiting, "permission"), state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 2 * s},
			{at: 4 * s, do: requests(2), state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 2 * s},
			{at: 5 * s, do: requests(1), state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 2 * s},
			// The last request ended and no hook stands: the screen decides,
			// at its next look, not the end itself.
			{at: 6 * s, do: requests(0), state: Busy, cause: CauseGateway, reason: reasonEnded, since: 2 * s},
			{at: 7 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseGateway, reason: reasonEnded, since: 2 * s, pending: Idle},
			{at: 7*s + 500*ms, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 7*s + 500*ms},
		}},
		{name: "a screen saying busy still applies in flight", agent: true, steps: []step{
			{at: 1 * s, do: hook(Waiting, "hook:PermissionRequest"), changed: true, state: Waiting, cause: CauseHook, reason: "hook:PermissionRequest", since: 1 * s},
			{at: 2 * s, do: requests(1), changed: true, state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 2 * s},
			{at: 3 * s, do: hook(Waiting, "hook:PermissionRequest"), changed: true, state: Waiting, cause: CauseHook, reason: "hook:PermissionRequest", since: 3 * s},
			{at: 20 * s, do: verdict(Busy, "busy-footer"), state: Waiting, cause: CauseHook, reason: "hook:PermissionRequest", since: 3 * s, pending: Busy},
			{at: 20*s + 500*ms, do: verdict(Busy, "busy-footer"), changed: true, state: Busy, cause: CauseScreen, reason: "screen:busy-footer", since: 20*s + 500*ms},
		}},
		{name: "a request starting overrules an older hook", agent: true, steps: []step{
			{at: 1 * s, do: hook(Waiting, "hook:PermissionRequest"), changed: true, state: Waiting, cause: CauseHook, reason: "hook:PermissionRequest", since: 1 * s},
			{at: 2 * s, do: requests(1), changed: true, state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 2 * s},
		}},
		{name: "a hook saying waiting during a request makes the pane waiting", agent: true, steps: []step{
			{at: 1 * s, do: requests(1), changed: true, state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 1 * s},
			{at: 2 * s, do: hook(Waiting, "hook:PermissionRequest"), changed: true, state: Waiting, cause: CauseHook, reason: "hook:PermissionRequest", since: 2 * s},
			{at: 3 * s, do: requests(0), state: Waiting, cause: CauseHook, reason: "hook:PermissionRequest", since: 2 * s},
		}},
		{name: "a hook saying busy gives its reason during a request", agent: true, steps: []step{
			{at: 1 * s, do: requests(1), changed: true, state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 1 * s},
			{at: 2 * s, do: hook(Busy, "hook:PreToolUse"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s},
		}},
		{name: "a hook saying idle during a request applies at its end", agent: true, steps: []step{
			{at: 1 * s, do: hook(Busy, "hook:UserPromptSubmit"), changed: true, state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 1*s + 100*ms, do: requests(1), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 5 * s, do: hook(Idle, "hook:Stop"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 5*s + 50*ms, do: requests(0), changed: true, state: Idle, cause: CauseHook, reason: "hook:Stop", since: 5*s + 50*ms},
		}},
		{name: "the end of the requests hands a standing hook's busy back", agent: true, steps: []step{
			{at: 1 * s, do: requests(1), changed: true, state: Busy, cause: CauseGateway, reason: reasonInFlight, since: 1 * s},
			{at: 2 * s, do: hook(Busy, "hook:PreToolUse"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s},
			{at: 3 * s, do: requests(0), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s},
			// Between requests the hook stands, then the screen decides.
			{at: 8 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s},
			{at: 12 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s, pending: Idle},
			{at: 12*s + 500*ms, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 12*s + 500*ms},
		}},
		{name: "a request ending after the hook-quiet time leaves the state to the screen", agent: true, steps: []step{
			{at: 1 * s, do: hook(Busy, "hook:UserPromptSubmit"), changed: true, state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 2 * s, do: requests(1), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 20 * s, do: requests(0), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 21 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s, pending: Idle},
			{at: 21*s + 500*ms, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 21*s + 500*ms},
		}},
		{name: "an idle hook held back by a long request applies at its end", agent: true, steps: []step{
			{at: 1 * s, do: hook(Busy, "hook:UserPromptSubmit"), changed: true, state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 2 * s, do: requests(1), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 3 * s, do: hook(Idle, "hook:Stop"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 20 * s, do: requests(0), changed: true, state: Idle, cause: CauseHook, reason: "hook:Stop", since: 20 * s},
			// The hook is quiet by now: the screen may overrule it.
			{at: 21 * s, do: verdict(Busy, "busy-footer"), state: Idle, cause: CauseHook, reason: "hook:Stop", since: 20 * s, pending: Busy},
			{at: 21*s + 500*ms, do: verdict(Busy, "busy-footer"), changed: true, state: Busy, cause: CauseScreen, reason: "screen:busy-footer", since: 21*s + 500*ms},
		}},
		{name: "a screen flickering busy, idle, busy changes nothing", agent: true, steps: []step{
			{at: 1 * s, do: hook(Busy, "hook:UserPromptSubmit"), changed: true, state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 11 * s, do: verdict(Busy, "busy-footer"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 11*s + 500*ms, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s, pending: Idle},
			{at: 12 * s, do: verdict(Busy, "busy-footer"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			// One idle look again is not two in a row with the first.
			{at: 12*s + 500*ms, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s, pending: Idle},
			// No rule matching is a look too: it drops the pending verdict.
			{at: 13 * s, do: verdict("", ""), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 13*s + 500*ms, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s, pending: Idle},
			// Two idle looks in a row make it idle.
			{at: 14 * s, do: verdict(Idle, "idle-footer"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-footer", since: 14 * s},
		}},
		{name: "a pending verdict is replaced by another", agent: true, steps: []step{
			{at: 1 * s, do: verdict(Idle, "idle-prompt"), state: Starting, cause: CauseStarted, reason: "started", pending: Idle},
			{at: 1*s + 500*ms, do: verdict(Waiting, "permission"), state: Starting, cause: CauseStarted, reason: "started", pending: Waiting},
			{at: 2 * s, do: verdict(Waiting, "permission"), changed: true, state: Waiting, cause: CauseScreen, reason: "screen:permission", since: 2 * s},
		}},
		{name: "hooks apply at once and drop a pending verdict", agent: true, steps: []step{
			{at: 1 * s, do: verdict(Idle, "idle-prompt"), state: Starting, cause: CauseStarted, reason: "started", pending: Idle},
			{at: 1*s + 100*ms, do: hook(Busy, "hook:UserPromptSubmit"), changed: true, state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1*s + 100*ms},
			{at: 2 * s, do: hook(Waiting, "hook:PermissionRequest"), changed: true, state: Waiting, cause: CauseHook, reason: "hook:PermissionRequest", since: 2 * s},
			{at: 12 * s, do: verdict(Idle, "idle-prompt"), state: Waiting, cause: CauseHook, reason: "hook:PermissionRequest", since: 2 * s, pending: Idle},
			// A hook of the same state changes nothing but still drops it.
			{at: 12*s + 200*ms, do: hook(Waiting, "hook:Notification"), state: Waiting, cause: CauseHook, reason: "hook:Notification", since: 2 * s},
			{at: 22*s + 200*ms, do: verdict(Idle, "idle-prompt"), state: Waiting, cause: CauseHook, reason: "hook:Notification", since: 2 * s, pending: Idle},
			{at: 22*s + 700*ms, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 22*s + 700*ms},
		}},
		{name: "input and requests drop a pending verdict", agent: true, steps: []step{
			{at: 1 * s, do: verdict(Idle, "idle-prompt"), state: Starting, cause: CauseStarted, reason: "started", pending: Idle},
			{at: 1*s + 200*ms, do: input, changed: true, state: Busy, cause: CauseInput, reason: "input", since: 1*s + 200*ms},
			{at: 3 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseInput, reason: "input", since: 1*s + 200*ms, pending: Idle},
			{at: 3*s + 100*ms, do: requests(1), state: Busy, cause: CauseInput, reason: "input", since: 1*s + 200*ms},
			{at: 4 * s, do: requests(0), state: Busy, cause: CauseInput, reason: "input", since: 1*s + 200*ms},
			{at: 5 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseInput, reason: "input", since: 1*s + 200*ms, pending: Idle},
			{at: 6 * s, do: exit(CauseExit, "exited with code 0", 0), changed: true, state: Exited, cause: CauseExit, reason: "exited with code 0", since: 6 * s},
		}},
		{name: "requests change nothing once the program ended", agent: true, steps: []step{
			{at: 1 * s, do: exit(CauseExit, "exited with code 0", 0), changed: true, state: Exited, cause: CauseExit, reason: "exited with code 0", since: 1 * s},
			{at: 2 * s, do: requests(1), state: Exited, cause: CauseExit, reason: "exited with code 0", since: 1 * s},
		}},
		{name: "a pane without screen rules ignores requests", steps: []step{
			{at: 1 * s, do: requests(1), state: Starting, cause: CauseStarted, reason: "started"},
			{at: 2 * s, do: quiet, changed: true, state: Idle, cause: CauseQuiet, reason: quietText, since: 2 * s},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
			m := newMachine(Status{State: Starting, Cause: CauseStarted, Reason: "started", Since: t0}, settle, tc.agent, DefaultHookQuiet, t0)
			for i, st := range tc.steps {
				rev := m.rev
				changed := st.do(&m, t0.Add(st.at))
				got := m.status
				if changed != st.changed || got.State != st.state || got.Cause != st.cause || got.Reason != st.reason || !got.Since.Equal(t0.Add(st.since)) || got.Pending != st.pending {
					t.Fatalf("step %d (at %s): changed %v, %s/%s %q since +%s pending %q; want changed %v, %s/%s %q since +%s pending %q", i+1, st.at,
						changed, got.State, got.Cause, got.Reason, got.Since.Sub(t0), got.Pending, st.changed, st.state, st.cause, st.reason, st.since, st.pending)
				}
				if changed && m.rev == rev {
					t.Fatalf("step %d: the state changed but rev did not", i+1)
				}
			}
		})
	}
}

// TestMachineRule: a screen verdict names its rule; any later cause
// clears it.
func TestMachineRule(t *testing.T) {
	t0 := time.Now()
	m := newMachine(Status{State: Idle}, settle, true, time.Second, t0)
	m.screen(t0.Add(2*time.Second), Verdict{State: Busy, Rule: Rule{Name: "busy-footer"}})
	m.screen(t0.Add(2500*time.Millisecond), Verdict{State: Busy, Rule: Rule{Name: "busy-footer"}})
	if m.status.Rule != "busy-footer" || m.status.Cause != CauseScreen {
		t.Fatalf("after a verdict: %+v", m.status)
	}
	m.hook(t0.Add(3*time.Second), Busy, "hook:PreToolUse")
	if m.status.Rule != "" || m.status.Cause != CauseHook {
		t.Fatalf("after a hook of the same state: %+v", m.status)
	}
}

// TestMachineLook: when the screen rules may look, and when to look
// again.
func TestMachineLook(t *testing.T) {
	t0 := time.Now()
	plain := newMachine(Status{State: Busy}, settle, false, time.Second, t0)
	if look, retry := plain.mayLook(t0.Add(time.Hour)); look || retry != 0 {
		t.Fatalf("a pane without rules: look %v, retry %s", look, retry)
	}
	m := newMachine(Status{State: Idle}, settle, true, 10*time.Second, t0)
	m.hook(t0, Busy, "hook:UserPromptSubmit")
	m.input(t0.Add(9700 * time.Millisecond))
	for _, c := range []struct {
		at    time.Duration
		look  bool
		retry time.Duration
	}{
		{at: 5 * time.Second}, // the hook stands
		{at: 10*time.Second + 100*time.Millisecond, retry: inputGrace}, // input grace
		{at: 10*time.Second + 700*time.Millisecond, look: true},
	} {
		if look, retry := m.mayLook(t0.Add(c.at)); look != c.look || retry != c.retry {
			t.Errorf("at +%s: look %v, retry %s; want %v, %s", c.at, look, retry, c.look, c.retry)
		}
	}
}

// TestMachineQuietLeft: how long a settling pane still waits.
func TestMachineQuietLeft(t *testing.T) {
	t0 := time.Now()
	m := newMachine(Status{State: Starting}, settle, false, time.Second, t0)
	m.output(t0.Add(200 * time.Millisecond))
	if left := m.quietLeft(t0.Add(300 * time.Millisecond)); left != 400*time.Millisecond {
		t.Fatalf("quiet left %s, want 400ms", left)
	}
	m.quiet(t0.Add(700 * time.Millisecond))
	if left := m.quietLeft(t0.Add(700 * time.Millisecond)); m.status.State != Idle || left != 0 {
		t.Fatalf("after settling: %s, quiet left %s", m.status.State, left)
	}
	agent := newMachine(Status{State: Starting}, settle, true, time.Second, t0)
	if left := agent.quietLeft(t0); left != 0 {
		t.Fatalf("an agent waits %s for quiet", left)
	}
}

// TestMachineDisagreements: each pair of signals counts a disagreement
// once it has lasted signalLag, once however long it lasts.
func TestMachineDisagreements(t *testing.T) {
	ms := time.Millisecond
	s := time.Second
	type at struct {
		at   time.Duration
		do   func(m *machine, now time.Time) bool
		want Signals
	}
	for _, tc := range []struct {
		name  string
		steps []at
	}{
		{name: "gateway vs hook: a request while the hook says idle", steps: []at{
			{at: 1 * s, do: hook(Idle, "hook:Stop")},
			{at: 2 * s, do: requests(1), want: Signals{InFlight: 1}},
			{at: 3 * s, do: judge, want: Signals{InFlight: 1}},
			{at: 4 * s, do: judge, want: Signals{InFlight: 1, GatewayVsHook: 1}},
			{at: 30 * s, do: judge, want: Signals{InFlight: 1, GatewayVsHook: 1}},
			{at: 31 * s, do: requests(0), want: Signals{GatewayVsHook: 1}},
			// Too short to count.
			{at: 32 * s, do: requests(1), want: Signals{InFlight: 1, GatewayVsHook: 1}},
			{at: 33 * s, do: requests(0), want: Signals{GatewayVsHook: 1}},
			// Counted when it ends, though nothing happened meanwhile.
			{at: 34 * s, do: requests(1), want: Signals{InFlight: 1, GatewayVsHook: 1}},
			{at: 37 * s, do: requests(0), want: Signals{GatewayVsHook: 2}},
		}},
		{name: "gateway vs hook: a hook saying waiting during a request", steps: []at{
			{at: 1 * s, do: requests(1), want: Signals{InFlight: 1}},
			{at: 2 * s, do: hook(Waiting, "hook:PermissionRequest"), want: Signals{InFlight: 1}},
			{at: 5 * s, do: hook(Busy, "hook:PostToolUse"), want: Signals{InFlight: 1, GatewayVsHook: 1}},
		}},
		{name: "a Stop just before the request ends is no disagreement", steps: []at{
			{at: 1 * s, do: hook(Busy, "hook:UserPromptSubmit")},
			{at: 1*s + 100*ms, do: requests(1), want: Signals{InFlight: 1}},
			{at: 5 * s, do: hook(Idle, "hook:Stop"), want: Signals{InFlight: 1}},
			{at: 5*s + 200*ms, do: requests(0)},
			{at: 60 * s, do: judge},
		}},
		{name: "hook vs screen", steps: []at{
			{at: 1 * s, do: hook(Busy, "hook:PreToolUse")},
			{at: 12 * s, do: verdict(Idle, "idle-prompt")},
			{at: 13 * s, do: verdict(Idle, "idle-prompt")},
			{at: 14 * s, do: verdict(Idle, "idle-prompt"), want: Signals{HookVsScreen: 1}},
			{at: 20 * s, do: verdict(Idle, "idle-prompt"), want: Signals{HookVsScreen: 1}},
			// A new hook makes the last verdict stale: it ends the disagreement.
			{at: 21 * s, do: hook(Busy, "hook:PreToolUse"), want: Signals{HookVsScreen: 1}},
			{at: 32 * s, do: verdict(Idle, "idle-prompt"), want: Signals{HookVsScreen: 1}},
			{at: 33 * s, do: verdict(Busy, "busy-footer"), want: Signals{HookVsScreen: 1}},
			{at: 34 * s, do: verdict(Idle, "idle-prompt"), want: Signals{HookVsScreen: 1}},
			{at: 36 * s, do: judge, want: Signals{HookVsScreen: 2}},
			// No rule matching is no verdict.
			{at: 37 * s, do: verdict("", ""), want: Signals{HookVsScreen: 2}},
			{at: 38 * s, do: verdict(Idle, "idle-prompt"), want: Signals{HookVsScreen: 2}},
			{at: 40 * s, do: verdict(Idle, "idle-prompt"), want: Signals{HookVsScreen: 3}},
		}},
		{name: "input makes the screen's verdict stale", steps: []at{
			{at: 1 * s, do: hook(Idle, "hook:Stop")},
			{at: 12 * s, do: verdict(Busy, "busy-footer")},
			{at: 13 * s, do: input},
			{at: 20 * s, do: judge},
		}},
		{name: "gateway vs screen", steps: []at{
			{at: 1 * s, do: verdict(Idle, "idle-prompt")},
			{at: 2 * s, do: requests(1), want: Signals{InFlight: 1}},
			// The verdict from before the request does not count.
			{at: 5 * s, do: judge, want: Signals{InFlight: 1}},
			{at: 6 * s, do: verdict(Idle, "idle-prompt"), want: Signals{InFlight: 1}},
			{at: 8 * s, do: judge, want: Signals{InFlight: 1, GatewayVsScreen: 1}},
			{at: 9 * s, do: verdict(Busy, "busy-footer"), want: Signals{InFlight: 1, GatewayVsScreen: 1}},
			{at: 10 * s, do: verdict(Waiting, "permission"), want: Signals{InFlight: 1, GatewayVsScreen: 1}},
			{at: 13 * s, do: requests(0), want: Signals{GatewayVsScreen: 2}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
			m := newMachine(Status{State: Starting, Cause: CauseStarted, Reason: "started", Since: t0}, settle, true, DefaultHookQuiet, t0)
			for i, st := range tc.steps {
				rev := m.rev
				before := m.status.Signals
				st.do(&m, t0.Add(st.at))
				got := m.status.Signals
				// The times of the last signals are TestMachineLastSignals'.
				got.GatewayAt, got.ScreenAt, got.ScreenBusyAt, got.ScreenState, got.ScreenRule, got.ScreenPart = time.Time{}, time.Time{}, time.Time{}, "", "", ""
				if got != st.want {
					t.Fatalf("step %d (at %s): %+v, want %+v", i+1, st.at, got, st.want)
				}
				if m.status.Signals != before && m.rev == rev {
					t.Fatalf("step %d: the signals changed but rev did not", i+1)
				}
			}
		})
	}
}

// TestMachineJudgeLeft: how long until a disagreement counts.
func TestMachineJudgeLeft(t *testing.T) {
	t0 := time.Now()
	m := newMachine(Status{State: Idle}, settle, true, DefaultHookQuiet, t0)
	m.hook(t0, Idle, "hook:Stop")
	if left := m.judgeLeft(t0); left != 0 {
		t.Fatalf("agreeing signals: %s left", left)
	}
	m.requests(t0.Add(time.Second), 1)
	if left := m.judgeLeft(t0.Add(1500 * time.Millisecond)); left != signalLag-500*time.Millisecond {
		t.Fatalf("a disagreement 500ms old: %s left, want %s", left, signalLag-500*time.Millisecond)
	}
	m.judge(t0.Add(time.Second + signalLag))
	if left := m.judgeLeft(t0.Add(time.Hour)); left != 0 || m.status.Signals.GatewayVsHook != 1 {
		t.Fatalf("once counted: %s left, %+v", left, m.status.Signals)
	}
	plain := newMachine(Status{State: Idle}, settle, false, DefaultHookQuiet, t0)
	if plain.requests(t0, 1) || plain.judgeLeft(t0) != 0 || plain.status.Signals.InFlight != 0 {
		t.Fatalf("a pane without rules took a request: %+v", plain.status)
	}
}

// The machine keeps when the gateway's count last changed and what the
// screen rules' last look said, with its part and time.
func TestMachineLastSignals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := newMachine(Status{State: Idle}, settle, true, time.Second, t0)
	if s := m.status.Signals; !s.GatewayAt.IsZero() || !s.ScreenAt.IsZero() {
		t.Fatalf("signals before any: %+v", s)
	}
	m.requests(t0.Add(time.Second), 1)
	m.requests(t0.Add(3*time.Second), 0)
	if at := m.status.Signals.GatewayAt; !at.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("gateway at %v", at)
	}
	r := Rule{Name: "foot", State: Idle, Part: PartFooter}
	m.screen(t0.Add(5*time.Second), Verdict{State: Idle, Rule: r, Part: PartFooter})
	s := m.status.Signals
	if s.ScreenState != Idle || s.ScreenRule != "foot" || s.ScreenPart != PartFooter || !s.ScreenAt.Equal(t0.Add(5*time.Second)) {
		t.Errorf("screen: %+v", s)
	}
	m.screen(t0.Add(6*time.Second), Verdict{})
	if s := m.status.Signals; s.ScreenState != "" || s.ScreenRule != "" || !s.ScreenAt.Equal(t0.Add(6*time.Second)) {
		t.Errorf("screen without a verdict: %+v", s)
	}
	// A busy look is kept whatever the state: typed input made the pane
	// busy already, and the look changes nothing else.
	m = newMachine(Status{State: Idle}, settle, true, time.Second, t0)
	m.input(t0.Add(7 * time.Second))
	busy := Rule{Name: "spin", State: Busy, Part: PartStatus}
	m.screen(t0.Add(7*time.Second+inputGrace), Verdict{State: Busy, Rule: busy, Part: PartStatus})
	if s := m.status; s.State != Busy || s.Cause != CauseInput || !s.Signals.ScreenBusyAt.Equal(t0.Add(7*time.Second+inputGrace)) {
		t.Errorf("a busy look while busy by input: %+v", s)
	}
	m.screen(t0.Add(8*time.Second+inputGrace), Verdict{State: Busy, Rule: Rule{Name: "quoted", State: Busy, Part: PartTranscript}, Part: PartTranscript})
	if at := m.status.Signals.ScreenBusyAt; !at.Equal(t0.Add(7*time.Second + inputGrace)) {
		t.Errorf("a busy verdict on the transcript counted: %v", at)
	}
}
