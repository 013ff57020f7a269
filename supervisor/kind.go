package supervisor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/agentpane"
	"github.com/cicy-ai/cicy-agent/supervisor/comeback"
	"github.com/cicy-ai/cicy-agent/supervisor/gitwork"
	"github.com/cicy-ai/cicy-agent/supervisor/newpane"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/signals"
)

// kind is a pane of one kind as the registry drives it. Five adapters
// implement it: cicyKind (a turn loop in this process), dormant (a cicy
// pane a start has not restored yet), shellKind and cliKind (a program in
// a terminal: a shell command, or a CLI agent), and
// stopped (nothing runs). Only the adapters know which
// kind they are; operations that exist for some kinds only are small
// interfaces of their own (turnLoop, attachable, hookTarget).
type kind interface {
	outbox.Pane
	// Status is the pane's state and its cause. It never waits for a
	// stop or a restart in progress.
	Status() pane.Status
	// Screen is what `screen` shows: the terminal's screen, or a cicy
	// pane's latest reply.
	Screen() (string, error)
	// Send delivers input the caller checked for NUL bytes.
	Send(ctx context.Context, req api.SendRequest) (*api.SendResult, error)
	// Stop ends what runs — a turn loop, or a program (SIGTERM, grace,
	// SIGKILL) — and returns the final status.
	Stop(grace time.Duration, why string) pane.Status
	// Detach lets go of the pane at a supervisor shutdown: a tmux
	// session keeps running for the next supervisor; anything else stops.
	Detach(grace time.Duration, why string) pane.Status
	// Describe adds what the kind knows to the pane's API view.
	Describe(pi *api.PaneInfo)
	// Explain adds the kind's account of why the pane has its state.
	Explain(x *api.Explanation)
	// Preview calls emit with the screen (its last lines when lines > 0),
	// then each time it changes, until ctx ends, the pane stops, or emit
	// fails or gone says the pane was removed.
	Preview(ctx context.Context, lines int, emit func(api.ScreenResponse) error, gone func() bool) error
}

// Every adapter is a kind and, through it, an outbox.Pane.
var (
	_ kind = (*cicyKind)(nil)
	_ kind = (*dormant)(nil)
	_ kind = (*shellKind)(nil)
	_ kind = (*cliKind)(nil)
	_ kind = (*stopped)(nil)
)

// entry is one pane in the registry: its stored config and the one value
// that runs it. op serialises what changes that value (start, restart,
// kill, a hook's state); readers — ls, status, the event stream, the
// outbox — load the value without it, so a pane that takes its grace
// period to stop stalls nobody.
type entry struct {
	cfg     schema.Pane // fixed once the pane is created
	num     int64       // the N of its id w-N, for ordering
	team    string      // the team in cfg.Config, "" for none
	restart string      // the restart policy in cfg.Config, "" for the default
	op      sync.Mutex
	cur     atomic.Pointer[held]
	hooks   signals.Hooks   // what a CLI agent's own signals said; kept across restarts
	answers signals.Answers // what the gateway saw of its model requests
	// answered is the last dialog answered (agentpane.Answer), under op.
	answered agentpane.Mark
	// leaving is set when a kill begins: the outbox treats the pane as
	// gone (its tasks fail as killed) while ls still shows it stopping.
	leaving atomic.Bool
	// requests counts a CLI agent's main-loop model requests in flight, as
	// the gateway reports them (package signals).
	requests signals.Requests
	// elsewhere is the node of another node's pane (an entry resolvePane
	// made from its row, never registered); "" for this node's.
	elsewhere string
	// work is what ls shows of the pane's worktree (gitwork.Seen).
	work gitwork.Seen
	// session is a CLI agent's own session id, the latest its signals
	// revealed (package signals).
	session signals.Session
	// lives are its starts and deaths, for its restart policy.
	lives comeback.Lives
	// cameBack is how the pane last came back by its restart policy ("":
	// it did not, or was started by hand since).
	cameBack atomic.Pointer[string]
	// backFresh: it came back and has not been busy since; its reason
	// then says how it came back (ls, status, the dashboard).
	backFresh atomic.Bool
	// worktreeAgain: its worktree's folder was gone at a start and was
	// checked out again from its branch (said when it comes back).
	worktreeAgain atomic.Bool
}

// setCameBack notes how the pane came back ("" when started by hand).
func (e *entry) setCameBack(why string) {
	e.cameBack.Store(&why)
	e.backFresh.Store(why != "")
}

// cameBackAs is how the pane last came back, "" when it did not.
func (e *entry) cameBackAs() string {
	if p := e.cameBack.Load(); p != nil {
		return *p
	}
	return ""
}

// held boxes a kind for the atomic pointer.
type held struct{ k kind }

func (e *entry) kind() kind          { return e.cur.Load().k }
func (e *entry) status() pane.Status { return e.kind().Status() }

// set makes k what runs for the pane; a new CLI agent terminal learns the
// requests in flight at once.
func (e *entry) set(k kind) {
	e.cur.Store(&held{k})
	e.wakeRequests()
}

// newEntry is a registry entry with nothing running yet.
func newEntry(cfg schema.Pane, st pane.Status) *entry {
	e := &entry{cfg: cfg, num: api.PaneNum(cfg.ID)}
	if cfg.Config != "" && cfg.Config != "{}" { // most panes have none: no JSON to read
		pc := newpane.ParseConfig(cfg.Config)
		e.team, e.restart = pc.Team, pc.Restart
	}
	if cfg.SessionID != "" {
		e.session.Seed(cfg.SessionID, schema.ParseTime(cfg.SessionAt))
	}
	e.set(&stopped{cfg: cfg, st: st})
	return e
}

// halt stops what runs for the pane, keeping its final status. The caller
// holds e.op.
func (e *entry) halt(grace time.Duration, why string) {
	e.set(&stopped{cfg: e.cfg, st: e.kind().Stop(grace, why)})
}

// turnLoop is a pane with a cicy turn loop.
type turnLoop interface{ agent() *cicy.Agent }

// hookTarget is a pane whose state a CLI agent's hooks set.
type hookTarget interface {
	SetState(s pane.State, reason string)
}

// hookQuiet is how long a hook stands before screen rules may overrule it.
func (s *Supervisor) hookQuiet() time.Duration {
	if s.cfg.HookQuiet > 0 {
		return s.cfg.HookQuiet
	}
	return pane.DefaultHookQuiet
}
