package pane

import (
	"fmt"
	"time"
)

// machine is the state of one pane as output, typed input, an agent's
// hooks, its model requests, its screen rules and the end of its program
// move it. Both backends feed it what they see; it decides. It reads no
// clock: every method is given the time, so tests drive it with made-up
// times.
//
// A pane without screen rules follows its output: busy on output or
// input, idle once output has been quiet for the settle time. Once the
// program has ended, nothing changes the state or its reason.
//
// An agent pane (screen rules set) ignores its output and has three
// signals, in this order of precedence:
//
//  1. Its hooks: a hook's state applies at once and stands over the
//     screen rules for the hook-quiet time.
//  2. The gateway: while one of its main-loop model requests is in
//     flight, the pane is busy. A request starting makes the pane busy
//     whatever an older hook or the screen said. While requests are in
//     flight a hook saying waiting (newer than the requests' start, since
//     hooks apply as they come) makes it waiting, a hook saying busy gives
//     its reason, and a hook saying idle changes nothing yet. When the
//     last request ends, the last hook gives its state if it spoke during
//     the requests or still stands (a Stop that came while the last
//     request was finishing makes the pane idle then); otherwise the pane
//     stays as it is until the screen rules look. An ended request never
//     makes a pane idle by itself: a turn makes several requests, with
//     tool runs between them.
//  3. Its screen rules, when no hook has spoken for the hook-quiet time and
//     no input came within inputGrace (the agent has not redrawn yet).
//     While a request is in flight they can only make the pane busy. A
//     verdict changes the state only when two looks in a row give it (a
//     screen caught half redrawn does not flicker the state): the first is
//     kept as pending (Status.Pending), the next look applies it if it says
//     the same, and any other look, hook, input or request drops it.
//
// Disagreements: each time two signals start to contradict each other,
// and go on doing so for signalLag (so that a hook and a request ending at
// about the same moment do not count), the pair's count in Status.Signals
// rises by one, however long the disagreement lasts afterwards. The pairs:
//
//   - hook vs screen: the screen rules' verdict, given after the last hook
//     and the last input, is not the last hook's state. (The rules look
//     only once hooks have been quiet for the hook-quiet time.)
//   - gateway vs hook: a request is in flight while the last hook said
//     idle or waiting.
//   - gateway vs screen: a request is in flight while the screen rules,
//     looking after it started, say idle or waiting.
//
// A hook saying busy with no request in flight is no disagreement: the
// agent runs a tool. A disagreement is counted when an event shows it has
// lasted signalLag, or when it ends after lasting so; the owner asks again
// after judgeLeft.
//
// A machine is not safe for concurrent use: a PTY's loop owns its
// machine, a tmux pane guards its own with its mutex.
type machine struct {
	status    Status
	settle    time.Duration
	agent     bool
	hookQuiet time.Duration

	lastOutput time.Time // last output or input: when the quiet time began
	inputAt    time.Time

	// What each signal of an agent said last.
	lastHook   time.Time
	hookState  State // "" before the first hook
	hookReason string
	inFlight   int
	flightAt   time.Time // when the requests in flight began
	screenSaid State     // "" when no rule matched
	lookedAt   time.Time
	pairs      [nPairs]pair

	// rev counts the changes of status, so that the owner knows when to
	// publish a new copy.
	rev uint64
}

// The pairs of an agent's signals that may disagree.
const (
	hookVsScreen = iota
	gatewayVsHook
	gatewayVsScreen
	nPairs
)

// pair is one pair of signals: since when it disagrees (zero while it
// agrees), and whether this disagreement was counted.
type pair struct {
	from    time.Time
	counted bool
}

// signalLag is how long two signals must disagree before it counts.
const signalLag = 2 * time.Second

// The reasons the gateway gives.
const (
	reasonInFlight = "gateway:request"
	reasonEnded    = "gateway:request-ended"
)

// newMachine starts a pane in st at now. agent says that screen rules
// and hooks decide its state instead of output quiet.
func newMachine(st Status, settle time.Duration, agent bool, hookQuiet time.Duration, now time.Time) machine {
	return machine{status: st, settle: settle, agent: agent, hookQuiet: hookQuiet, lastOutput: now}
}

func (m *machine) set(now time.Time, s State, c Cause, reason string) {
	m.status.State, m.status.Cause, m.status.Reason, m.status.Since = s, c, reason, now
	m.status.Rule = ""
	m.drop()
	m.rev++
}

// drop forgets a screen verdict waiting for its second look: another
// signal spoke since.
func (m *machine) drop() {
	if m.status.Pending != "" {
		m.status.Pending = ""
		m.rev++
	}
}

// waitsLook reports whether a screen verdict waits for its second look, so
// that the owner looks again soon.
func (m *machine) waitsLook() bool { return m.status.Pending != "" }

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
	m.drop()
	defer m.judge(now)
	if m.status.State != Starting && m.status.State != Idle {
		return false
	}
	m.set(now, Busy, CauseInput, "input")
	return true
}

// hook records what an agent's own hook says at now: it stands over the
// screen rules for the hook-quiet time. While a request is in flight it
// cannot make the pane idle. The same state again takes the hook's reason
// but keeps its start. It reports whether the state changed.
func (m *machine) hook(now time.Time, s State, reason string) bool {
	if !m.running() {
		return false
	}
	m.lastHook, m.hookState, m.hookReason = now, s, reason
	m.drop()
	defer m.judge(now)
	if m.inFlight > 0 && s == Idle {
		return false // the gateway keeps it busy; the hook counts at the end
	}
	return m.takeHook(now)
}

// takeHook gives the pane the last hook's state and reason. It reports
// whether the state changed.
func (m *machine) takeHook(now time.Time) bool {
	if m.status.State != m.hookState {
		m.set(now, m.hookState, CauseHook, m.hookReason)
		return true
	}
	m.status.Cause, m.status.Reason, m.status.Rule = CauseHook, m.hookReason, ""
	m.rev++
	return false
}

// hookStands reports whether a hook spoke within the hook-quiet time.
func (m *machine) hookStands(now time.Time) bool {
	return m.hookState != "" && now.Sub(m.lastHook) < m.hookQuiet
}

// requests records that n main-loop model requests of an agent pane are
// in flight at now, as the gateway counts them. The first makes the pane
// busy; the end of the last hands the state back to a hook that spoke
// during the requests or still stands, or else leaves it for the screen
// rules. It reports whether the state changed.
func (m *machine) requests(now time.Time, n int) bool {
	n = max(n, 0)
	if !m.agent || !m.running() || n == m.inFlight {
		return false
	}
	was := m.inFlight
	m.inFlight, m.status.Signals.InFlight, m.status.Signals.GatewayAt = n, n, now
	m.drop()
	m.rev++
	defer m.judge(now)
	switch {
	case was == 0:
		m.flightAt = now
		if m.status.State == Busy {
			return false
		}
		m.set(now, Busy, CauseGateway, reasonInFlight)
		return true
	case n == 0:
		if m.hookStands(now) || (m.hookState != "" && !m.lastHook.Before(m.flightAt)) {
			return m.takeHook(now)
		}
		if m.status.Cause == CauseGateway {
			m.status.Reason = reasonEnded
		}
	}
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

// screen applies the screen rules' verdict at now, if they may decide; a
// zero verdict (no rule matched) keeps the state. While a request is in
// flight only a busy verdict applies. A verdict that would change the
// state is pending until the next look: it applies if that look gives
// the same state, and is replaced or dropped otherwise. It reports
// whether the state changed.
func (m *machine) screen(now time.Time, v Verdict) bool {
	if look, _ := m.mayLook(now); !look {
		// Right after typed input the rules do not decide (the old idle
		// prompt may still show), but a busy look is new: an agent whose
		// turn is over within the grace shows it only then.
		if v.State == Busy && v.Part != PartTranscript && m.agent && m.running() && now.Sub(m.inputAt) < inputGrace {
			m.status.Signals.ScreenBusyAt = now
			m.rev++
		}
		return false
	}
	m.screenSaid, m.lookedAt = v.State, now
	sig := &m.status.Signals
	sig.ScreenState, sig.ScreenRule, sig.ScreenPart, sig.ScreenAt = v.State, v.Rule.Name, v.Part, now
	if v.State == Busy && v.Part != PartTranscript {
		sig.ScreenBusyAt = now
	}
	m.rev++
	defer m.judge(now)
	if v.State == "" || v.State == m.status.State || (m.inFlight > 0 && v.State != Busy) {
		m.drop()
		return false
	}
	if m.status.Pending != v.State {
		m.status.Pending = v.State
		m.rev++
		return false
	}
	m.set(now, v.State, CauseScreen, "screen:"+v.Rule.Name)
	m.status.Rule = v.Rule.Name
	return true
}

// disagree says which pairs of an agent's signals contradict each other
// now. The screen's verdict counts only if no hook or input came after it.
func (m *machine) disagree() [nPairs]bool {
	screen := m.screenSaid != "" && !m.lookedAt.Before(m.lastHook) && !m.lookedAt.Before(m.inputAt)
	flying := m.inFlight > 0
	return [nPairs]bool{
		hookVsScreen:    screen && m.hookState != "" && m.screenSaid != m.hookState,
		gatewayVsHook:   flying && (m.hookState == Idle || m.hookState == Waiting),
		gatewayVsScreen: flying && screen && !m.lookedAt.Before(m.flightAt) && m.screenSaid != Busy,
	}
}

// judge counts the disagreements of a running agent's signals that have
// lasted signalLag at now, each once. The owner calls it on its own too
// (see judgeLeft), since a disagreement may last with nothing happening.
func (m *machine) judge(now time.Time) {
	if !m.agent || !m.running() {
		return
	}
	for i, d := range m.disagree() {
		p := &m.pairs[i]
		due := !p.from.IsZero() && !p.counted && now.Sub(p.from) >= signalLag
		if due {
			m.count(i)
			p.counted = true
		}
		switch {
		case !d:
			*p = pair{}
		case p.from.IsZero():
			p.from = now
		}
	}
}

// count adds one disagreement of pair i.
func (m *machine) count(i int) {
	c := &m.status.Signals
	switch i {
	case hookVsScreen:
		c.HookVsScreen++
	case gatewayVsHook:
		c.GatewayVsHook++
	case gatewayVsScreen:
		c.GatewayVsScreen++
	}
	m.rev++
}

// judgeLeft is how long until a disagreement not yet counted has lasted
// signalLag; zero when none waits.
func (m *machine) judgeLeft(now time.Time) time.Duration {
	var left time.Duration
	if !m.agent || !m.running() {
		return 0
	}
	for _, p := range m.pairs {
		if p.from.IsZero() || p.counted {
			continue
		}
		if l := max(signalLag-now.Sub(p.from), time.Nanosecond); left == 0 || l < left {
			left = l
		}
	}
	return left
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
