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
			{at: 6 * s, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 6 * s},
			{at: 7 * s, do: output, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 6 * s},
			{at: 7 * s, do: verdict(Idle, "idle-footer"), state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 6 * s},
		}},
		{name: "a hook stands over the screen for the hook-quiet time", agent: true, steps: []step{
			{at: 1 * s, do: hook(Busy, "hook:UserPromptSubmit"), changed: true, state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 2 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:UserPromptSubmit", since: 1 * s},
			{at: 3 * s, do: hook(Busy, "hook:PreToolUse"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s},
			{at: 12 * s, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseHook, reason: "hook:PreToolUse", since: 1 * s},
			{at: 13 * s, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 13 * s},
		}},
		{name: "the screen waits out the input grace", agent: true, steps: []step{
			{at: 1 * s, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 1 * s},
			{at: 2 * s, do: input, changed: true, state: Busy, cause: CauseInput, reason: "input", since: 2 * s},
			{at: 2*s + 900*ms, do: verdict(Idle, "idle-prompt"), state: Busy, cause: CauseInput, reason: "input", since: 2 * s},
			{at: 3 * s, do: verdict(Idle, "idle-prompt"), changed: true, state: Idle, cause: CauseScreen, reason: "screen:idle-prompt", since: 3 * s},
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
			m := newMachine(Status{State: Starting, Cause: CauseStarted, Reason: "started", Since: t0}, settle, tc.agent, DefaultHookQuiet, t0)
			for i, st := range tc.steps {
				rev := m.rev
				changed := st.do(&m, t0.Add(st.at))
				got := m.status
				if changed != st.changed || got.State != st.state || got.Cause != st.cause || got.Reason != st.reason || !got.Since.Equal(t0.Add(st.since)) {
					t.Fatalf("step %d (at %s): changed %v, %s/%s %q since +%s; want changed %v, %s/%s %q since +%s", i+1, st.at,
						changed, got.State, got.Cause, got.Reason, got.Since.Sub(t0), st.changed, st.state, st.cause, st.reason, st.since)
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
