package pane

import (
	"fmt"
	"time"
)

// machine is the state of one pane as output, typed input, an agent's
// hooks, its screen rules and the end of its program move it. Both
// backends feed it what they see; it decides. It reads no clock: every
// method is given the time, so tests drive it with made-up times.
//
// A pane without screen rules follows its output: busy on output or
// input, idle once output has been quiet for the settle time. An agent
// pane (screen rules set) follows its hooks, and its screen rules when no
// hook has spoken for the hook-quiet time; for inputGrace after typed
// input the rules wait, since the agent has not redrawn yet. Once the
// program has ended, nothing changes the state or its reason.
//
// A machine is not safe for concurrent use: a PTY's loop owns its
// machine, a tmux pane guards its own with its mutex.
type machine struct {
	status    Status
	settle    time.Duration
	agent     bool
	hookQuiet time.Duration

	lastOutput time.Time // last output or input: when the quiet time began
	lastHook   time.Time
	inputAt    time.Time
	// rev counts the changes of status, so that the owner knows when to
	// publish a new copy.
	rev uint64
}

// newMachine starts a pane in st at now. agent says that screen rules
// and hooks decide its state instead of output quiet.
func newMachine(st Status, settle time.Duration, agent bool, hookQuiet time.Duration, now time.Time) machine {
	return machine{status: st, settle: settle, agent: agent, hookQuiet: hookQuiet, lastOutput: now}
}

func (m *machine) set(now time.Time, s State, c Cause, reason string) {
	m.status.State, m.status.Cause, m.status.Reason, m.status.Since = s, c, reason, now
	m.status.Rule = ""
	m.rev++
}

func (m *machine) running() bool { return m.status.Running() }

// settling reports whether the pane waits for its output to go quiet.
func (m *machine) settling() bool {
	return !m.agent && (m.status.State == Starting || m.status.State == Busy)
}

// activity restarts the quiet time without calling the pane busy (tmux's
// first report of a pane's activity, which is not new output).
func (m *machine) activity(now time.Time) {
	if m.running() {
		m.lastOutput = now
	}
}

// output records output at now: an idle pane without screen rules is
// busy again. It reports whether the state changed.
func (m *machine) output(now time.Time) bool {
	if !m.running() {
		return false
	}
	m.lastOutput = now
	if m.agent || m.status.State != Idle {
		return false
	}
	m.set(now, Busy, CauseOutput, "output")
	return true
}

// quiet makes a starting or busy pane without screen rules idle once its
// output has been quiet for the settle time. It reports whether the state
// changed.
func (m *machine) quiet(now time.Time) bool {
	if !m.settling() || now.Sub(m.lastOutput) < m.settle {
		return false
	}
	m.set(now, Idle, CauseQuiet, fmt.Sprintf("output quiet for %s", m.settle))
	return true
}

// quietLeft is how much longer a settling pane waits for quiet; zero when
// it waits for nothing.
func (m *machine) quietLeft(now time.Time) time.Duration {
	if !m.settling() {
		return 0
	}
	return max(0, m.settle-now.Sub(m.lastOutput))
}

// input records typed input at now: a starting or idle pane is busy (its
// program has work, whether or not it echoes anything). It reports
// whether the state changed.
func (m *machine) input(now time.Time) bool {
	if !m.running() {
		return false
	}
	m.inputAt, m.lastOutput = now, now
	if m.status.State != Starting && m.status.State != Idle {
		return false
	}
	m.set(now, Busy, CauseInput, "input")
	return true
}

// hook records what an agent's own hook says at now: it stands over the
// screen rules for the hook-quiet time. The same state again takes the
// hook's reason but keeps its start. It reports whether the state changed.
func (m *machine) hook(now time.Time, s State, reason string) bool {
	if !m.running() {
		return false
	}
	m.lastHook = now
	if m.status.State != s {
		m.set(now, s, CauseHook, reason)
		return true
	}
	m.status.Cause, m.status.Reason, m.status.Rule = CauseHook, reason, ""
	m.rev++
	return false
}

// mayLook reports whether the screen rules may decide at now: the pane
// runs, has rules, and no hook spoke within the hook-quiet time and no
// input came within inputGrace. When only the input grace stands in the
// way, retry is when to look again (once the agent had time to draw).
func (m *machine) mayLook(now time.Time) (look bool, retry time.Duration) {
	if !m.agent || !m.running() || now.Sub(m.lastHook) < m.hookQuiet {
		return false, 0
	}
	if now.Sub(m.inputAt) < inputGrace {
		return false, inputGrace
	}
	return true, 0
}

// screen applies the screen rules' verdict at now, if they may decide.
// It reports whether the state changed.
func (m *machine) screen(now time.Time, v Verdict) bool {
	if look, _ := m.mayLook(now); !look || v.State == m.status.State {
		return false
	}
	m.set(now, v.State, CauseScreen, "screen:"+v.Rule.Name)
	m.status.Rule = v.Rule.Name
	return true
}

// setPID records the program's process id.
func (m *machine) setPID(pid int) {
	if m.status.PID != pid {
		m.status.PID = pid
		m.rev++
	}
}

// exit records the end of the program, with its exit code when known.
// The first end stands: a pane that already ended keeps its reason. It
// reports whether the state changed.
func (m *machine) exit(now time.Time, c Cause, reason string, code *int) bool {
	if !m.running() {
		return false
	}
	if code != nil {
		m.status.ExitCode = code
	}
	m.set(now, Exited, c, reason)
	return true
}
