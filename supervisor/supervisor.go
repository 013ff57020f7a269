package supervisor

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Store is what the supervisor needs of the database.
type Store interface {
	CreatePane(ctx context.Context, p schema.Pane, prepare func(id string) (string, error)) (schema.Pane, error)
	ListPanes(ctx context.Context) ([]schema.Pane, error)
	GetPane(ctx context.Context, id string) (schema.Pane, error)
	DeletePane(ctx context.Context, id string) error
	SaveRuntime(ctx context.Context, id string, r schema.Runtime) error
	TaskCounts(ctx context.Context) (map[string]map[string]int, error)
	AddUsage(ctx context.Context, u schema.UsageRow) error
	UsageByModel(ctx context.Context) (map[string]map[string]schema.UsageTotal, error)
	RecentTasks(ctx context.Context, n int) ([]schema.Task, error)
	FailedLast(ctx context.Context) ([]schema.Task, error)
	TaskStore
}

// Config tunes a supervisor.
type Config struct {
	Home    Home
	Version string
	// Settle is the output quiet time after which a shell pane is idle.
	Settle time.Duration
	// StopGrace is how long a stopping pane has between SIGTERM and SIGKILL.
	StopGrace time.Duration
	Log       *logrus.Entry
	// Getenv reads the provider variables (default os.Getenv).
	Getenv func(string) string
	// HookQuiet is how long a CLI agent's hook stands before its screen
	// rules may overrule it (default 10 s).
	HookQuiet time.Duration
	// Fresh lets the supervisor start on a missing or empty database
	// beside the folders of the panes it described: they are moved aside
	// first (see checkDatabase). Without it, that is refused.
	Fresh bool
	// Ready, if set, is called once the supervisor answers on its socket.
	Ready func()
	// BodyTimeout bounds how long a request's body may take to arrive
	// (default 10 s, like the header's).
	BodyTimeout time.Duration
}

// Supervisor owns the panes. Its registry maps ids to entries; each running
// pane's own state lives in its pane.PTY loop.
type Supervisor struct {
	cfg       Config
	store     Store
	log       *logrus.Entry
	providers *provider.Factory
	scrub     *provider.Scrubber // the credentials, out of text from outside
	tasks     *outbox
	tmux      *pane.TmuxServer

	events *hub
	prices prices

	mu    sync.Mutex
	panes map[string]*entry
	// starting holds the panes Create is starting, not yet in panes: a
	// CLI agent's first hook (SessionStart) can come before Create is done.
	starting  map[string]*entry
	closeOnce sync.Once

	usageMu sync.Mutex
	usage   map[string]map[string]schema.UsageTotal // pane → model → sums
}

// terminal is a terminal pane's running program: a PTY of ours
// (*pane.PTY) or a session of the private tmux server (*pane.TmuxPane).
type terminal interface {
	Status() pane.Status
	Screen() string
	SendText(text string, enter bool) error
	SendKeys(b []byte) error
	Resize(rows, cols uint16) error
	Stop(grace time.Duration, why string)
	Close()
}

// entry is one pane in the registry. op serialises lifecycle operations
// (restart, kill) on it. A terminal pane has proc (nil when no process
// runs for it since this supervisor started); a cicy pane has agent.
type entry struct {
	op    sync.Mutex
	cfg   schema.Pane
	proc  terminal
	agent *cicy.Agent
	last  pane.Status // the status when neither runs
	hooks hookLog     // what a CLI agent's own signals said
}

// New loads every pane of the store. PTY panes cannot outlive the
// supervisor, so a pane recorded as running is now exited, with the reason.
func New(ctx context.Context, cfg Config, store Store) (*Supervisor, error) {
	if cfg.Settle <= 0 {
		cfg.Settle = 500 * time.Millisecond
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 3 * time.Second
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	s := &Supervisor{cfg: cfg, store: store, log: cfg.Log, panes: map[string]*entry{}, starting: map[string]*entry{}, providers: provider.NewFactory(cfg.Getenv), scrub: provider.NewScrubber(cfg.Getenv), events: newHub()}
	var err error
	if s.prices, err = loadPrices(cfg.Home.Root); err != nil {
		return nil, err
	}
	if s.usage, err = store.UsageByModel(ctx); err != nil {
		return nil, err
	}
	s.tasks = newOutbox(s, store)
	s.tmux = pane.NewTmuxServer(cfg.Home.Root, cfg.Log)
	if pane.TmuxAvailable() {
		if err := s.tmux.ForgetGlobal(provider.Credentials...); err != nil {
			s.log.WithError(err).Warn("Could not remove the provider keys from the tmux server's environment")
		}
	}
	if err := cicy.SeedTemplates(cfg.Home.Root); err != nil {
		return nil, fmt.Errorf("seed the role templates: %w", err)
	}
	rows, err := store.ListPanes(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		e := &entry{cfg: r, last: statusFromRuntime(r.Runtime)}
		if r.Backend == "tmux" {
			// tmux sessions outlive the supervisor: adopt the running one.
			if err := s.launch(e, true); err != nil {
				e.last = pane.Status{State: pane.Exited, Reason: "its tmux session is gone (" + err.Error() + "); 'cicy-agent restart " + r.ID + "' starts it again", Since: time.Now()}
				if err := store.SaveRuntime(ctx, r.ID, runtimeOf(e.last)); err != nil {
					return nil, err
				}
			}
			s.panes[r.ID] = e
			continue
		}
		if r.Type == "cicy" {
			// A cicy pane lives in the supervisor: it comes back with it,
			// its conversation restored from disk.
			if err := s.startAgent(e); err != nil {
				e.last = pane.Status{State: pane.Error, Reason: "could not restore: " + err.Error(), Since: time.Now()}
			}
			s.panes[r.ID] = e
			continue
		}
		if e.last.State != pane.Exited && e.last.State != pane.Error {
			e.last = pane.Status{
				State:  pane.Exited,
				Reason: "lost when the supervisor died (crash or kill -9); 'cicy-agent restart " + r.ID + "' starts it again",
				Since:  time.Now(),
			}
			if err := store.SaveRuntime(ctx, r.ID, runtimeOf(e.last)); err != nil {
				return nil, err
			}
		}
		s.panes[r.ID] = e
	}
	s.log.WithField("panes", len(rows)).Info("Supervisor loaded its panes")
	go s.tasks.run()
	return s, nil
}

func statusFromRuntime(r schema.Runtime) pane.Status {
	if !r.State.Valid {
		return pane.Status{State: pane.Exited, Reason: "never started"}
	}
	st := pane.Status{State: pane.State(r.State.String), Reason: r.Reason.String, Since: schema.ParseTime(r.Since.String)}
	if r.ExitCode.Valid {
		c := int(r.ExitCode.Int64)
		st.ExitCode = &c
	}
	return st
}

func runtimeOf(st pane.Status) schema.Runtime {
	r := schema.Runtime{
		State:  sql.NullString{String: string(st.State), Valid: true},
		Reason: sql.NullString{String: st.Reason, Valid: true},
		Since:  sql.NullString{String: schema.FormatTime(st.Since), Valid: true},
		PID:    sql.NullInt64{Int64: int64(st.PID), Valid: true},
	}
	if st.ExitCode != nil {
		r.ExitCode = sql.NullInt64{Int64: int64(*st.ExitCode), Valid: true}
	}
	return r
}

func (s *Supervisor) get(id string) (*entry, error) {
	id, err := ParsePaneID(id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.panes[id]
	if !ok {
		return nil, notFoundErr(id)
	}
	return e, nil
}

// Create validates req, stores the pane and starts it. Nothing is stored
// when validation or the start fails.
func (s *Supervisor) Create(ctx context.Context, req CreateRequest) (CreateResponse, error) {
	warnings, err := normalize(&req)
	if err != nil {
		return CreateResponse{}, err
	}
	var tmpl *cicy.Template
	if req.RoleTemplate != "" {
		if tmpl, err = cicy.LoadTemplate(s.cfg.Home.Root, req.RoleTemplate); err != nil {
			return CreateResponse{}, usageErr("%v", err)
		}
	}
	if req.Master != "" {
		m, err := s.get(req.Master)
		if err != nil {
			return CreateResponse{}, usageErr("--master %s: no such pane", req.Master)
		}
		if m.cfg.Role != topology.RoleMaster {
			return CreateResponse{}, usageErr("--master %s names a pane whose role is %q, not master", req.Master, m.cfg.Role)
		}
	}
	cmdJSON, _ := json.Marshal(req.Command)
	config := "{}"
	if req.Team != "" || req.AllowAll || len(req.Env) > 0 {
		b, _ := json.Marshal(paneConfig{Team: req.Team, AllowAll: req.AllowAll, Env: req.Env})
		config = string(b)
	}
	for _, n := range req.Env {
		if s.cfg.Getenv(n) == "" {
			warnings = append(warnings, fmt.Sprintf("--env %s: the supervisor has no %s in its environment, so the pane starts without it", n, n))
		}
	}
	row := schema.Pane{
		Title: req.Title, Type: req.Type, Role: req.Role, RoleTemplate: req.RoleTemplate,
		Provider: req.Provider, Model: req.Model, Command: string(cmdJSON), Backend: req.Backend,
		Master: sql.NullString{String: req.Master, Valid: req.Master != ""}, Config: config,
	}
	var undo func()
	row, err = s.store.CreatePane(ctx, row, func(id string) (string, error) {
		// A new pane never adopts folders left by an earlier pane of the
		// same id (a lost database): they are moved aside, with a warning.
		// A workspace the user names is theirs to choose.
		var putBack []func()
		restore := func() {
			for _, f := range putBack {
				f()
			}
		}
		ws := req.Workspace
		dirs := []string{s.cfg.Home.paneDir(id)}
		if ws == "" {
			ws = s.cfg.Home.Workspace(id)
			dirs = append(dirs, ws)
		}
		for _, d := range dirs {
			note, back, err := setAsideForeign(s.cfg.Home, d, time.Now())
			if err != nil {
				restore()
				return "", failedErr("%v", err)
			}
			if note != "" {
				warnings = append(warnings, note)
				putBack = append(putBack, back)
				s.log.WithField("pane", id).Warn("Set aside: " + note)
			}
		}
		u, err := makeWorkspace(ws)
		undo = func() { u(); restore() }
		if err == nil && tmpl != nil {
			err = writeGuidance(s.cfg.Home.Root, ws, id, req, tmpl)
		}
		if err != nil {
			undo()
			undo = nil
		}
		return ws, err
	})
	if err != nil {
		if undo != nil {
			undo() // prepared, but the row was not stored
		}
		return CreateResponse{}, err
	}
	e := &entry{cfg: row}
	s.mu.Lock()
	s.starting[row.ID] = e
	s.mu.Unlock()
	err = s.start(ctx, e)
	// Hooks that came while the process started were kept (recordHook);
	// from here on they go to the process, once the pending one is applied.
	e.op.Lock()
	s.mu.Lock()
	delete(s.starting, row.ID)
	if err == nil {
		s.panes[row.ID] = e
	}
	s.mu.Unlock()
	if err == nil {
		e.applyHookState()
	}
	e.op.Unlock()
	if err != nil {
		// The row must not outlive a pane that never ran.
		if derr := s.store.DeletePane(ctx, row.ID); derr != nil {
			s.log.WithError(derr).Error("Could not remove the row of a pane that failed to start")
		}
		undo()
		return CreateResponse{}, failedErr("pane %s could not start: %v", row.ID, err)
	}
	s.paneChanged(row.ID)
	s.log.WithFields(logrus.Fields{"pane": row.ID, "type": row.Type, "title": row.Title}).Info("Pane created")
	return CreateResponse{ID: row.ID, Warnings: warnings}, nil
}

// start runs the pane's process or turn loop. The caller holds e.op or
// owns e alone.
func (s *Supervisor) start(ctx context.Context, e *entry) error { return s.launch(e, false) }

// launch starts the pane, or with adopt takes over its running tmux
// session after a supervisor restart.
func (s *Supervisor) launch(e *entry, adopt bool) error {
	if e.cfg.Type == "cicy" {
		return s.startAgent(e)
	}
	var argv []string
	if err := json.Unmarshal([]byte(e.cfg.Command), &argv); err != nil {
		return fmt.Errorf("stored command of %s is not a JSON list: %w", e.cfg.ID, err)
	}
	id := e.cfg.ID
	log := s.log.WithField("pane", id)
	pass := parsePaneConfig(e.cfg.Config).Env
	if isAgent(e.cfg.Type) {
		pass = append(pass, agentKinds[e.cfg.Type].creds...)
	}
	env := paneEnv(s.cfg.Home, id, os.Environ(), pass, s.cfg.Getenv)
	enterDelay := time.Duration(shellEnterDelay)
	var rules pane.Rules
	if isAgent(e.cfg.Type) {
		var err error
		if rules, err = LoadScreenRules(s.cfg.Home.Root, e.cfg.Type); err != nil {
			return err
		}
		enterDelay = agentKinds[e.cfg.Type].enterDelay
		if !adopt {
			extra, err := s.prepareAgent(e.cfg, argv)
			if err != nil {
				return err
			}
			argv = extra.argv
			env = append(env, extra.env...)
		}
	}
	opts := pane.Options{
		Argv:       argv,
		Dir:        e.cfg.Workspace,
		Env:        env,
		Settle:     s.cfg.Settle,
		EnterDelay: enterDelay,
		Rules:      rules,
		HookQuiet:  s.cfg.HookQuiet,
		Log:        log,
		OnChange: func(st pane.Status) {
			s.tasks.paneKick()
			s.stateChanged(id)
			// Only the start and the end are stored: busy/idle flips would
			// cost a write each and a restarted supervisor cannot use them.
			if st.State == pane.Starting || !st.Running() {
				if err := s.store.SaveRuntime(context.Background(), id, runtimeOf(st)); err != nil {
					log.WithError(err).Error("Could not record the pane's state")
				}
			}
		},
	}
	var (
		t   terminal
		err error
	)
	switch {
	case e.cfg.Backend == "tmux" && adopt:
		t, err = s.tmux.Adopt(id, opts)
	case e.cfg.Backend == "tmux":
		t, err = s.tmux.Start(id, opts)
	default:
		t, err = pane.StartPTY(opts)
	}
	if err != nil {
		return err
	}
	e.proc = t
	return nil
}

// paneEnv is the environment of a pane's process: the supervisor's own
// (environ) without the provider credentials, plus those of pass the
// supervisor has (read with getenv: asked for with --env, or needed by a
// CLI agent), the terminal type our emulator speaks, and where the pane is.
func paneEnv(h Home, id string, environ, pass []string, getenv func(string) string) []string {
	env := []string{}
	for _, kv := range provider.WithoutCredentials(environ) {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "TERM", "CICY_PANE_ID", "CICY_HOME", "TMUX":
			continue
		}
		if slices.Contains(pass, name) {
			continue // set below, once
		}
		env = append(env, kv)
	}
	var given []string
	for _, name := range pass {
		if v := getenv(name); v != "" && !slices.Contains(given, name) {
			env = append(env, name+"="+v)
			given = append(given, name)
		}
	}
	return append(env, "TERM=xterm-256color", "CICY_HOME="+h.Root, "CICY_PANE_ID="+id)
}

// halt stops what runs for the pane — its turn loop, or its process (SIGTERM,
// grace, SIGKILL), keeping the final status. The caller holds e.op.
func (e *entry) halt(grace time.Duration, why string) {
	if e.agent != nil {
		e.agent.Close()
		e.agent = nil
	}
	if e.proc != nil {
		e.proc.Stop(grace, why)
		e.last = e.proc.Status()
		e.proc.Close()
		e.proc = nil
	}
}

// detach lets go of the pane at a supervisor shutdown: a tmux session
// keeps running (the next supervisor adopts it); anything else is halted.
func (e *entry) detach(grace time.Duration, why string) {
	if t, ok := e.proc.(*pane.TmuxPane); ok {
		e.last = t.Status()
		t.Close()
		e.proc = nil
		return
	}
	e.halt(grace, why)
}

func (e *entry) status() pane.Status {
	switch {
	case e.agent != nil:
		return e.agent.Status()
	case e.proc != nil:
		return e.proc.Status()
	}
	return e.last
}

// List returns every pane, in id order.
func (s *Supervisor) List(ctx context.Context) []PaneInfo {
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.panes))
	for _, e := range s.panes {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	slices.SortFunc(entries, func(a, b *entry) int { return cmp.Compare(paneNum(a.cfg.ID), paneNum(b.cfg.ID)) })
	out := make([]PaneInfo, 0, len(entries))
	for _, e := range entries {
		out = append(out, s.describe(e))
	}
	return out
}

// addUsage counts one model call of a pane.
func (s *Supervisor) addUsage(id, model string, u schema.UsageTotal) {
	s.usageMu.Lock()
	if s.usage[id] == nil {
		s.usage[id] = map[string]schema.UsageTotal{}
	}
	s.usage[id][model] = s.usage[id][model].Add(u)
	s.usageMu.Unlock()
	s.paneChanged(id)
}

// usageOf is a pane's usage summed over models, and its cost if every
// model's price is known.
func (s *Supervisor) usageOf(id string) (Usage, *float64) {
	s.usageMu.Lock()
	defer s.usageMu.Unlock()
	var t schema.UsageTotal
	for _, u := range s.usage[id] {
		t = t.Add(u)
	}
	u := Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CacheReadInputTokens: t.CacheRead, CacheCreationInputTokens: t.CacheCreation}
	if usd, ok := s.prices.cost(s.usage[id]); ok {
		return u, &usd
	}
	return u, nil
}

// describe is a pane as the API shows it: its config and state, its usage
// and, for tmux, how to attach.
func (s *Supervisor) describe(e *entry) PaneInfo {
	pi := e.info()
	pi.Usage, pi.CostUSD = s.usageOf(pi.ID)
	pi.CacheHit = cacheHit(pi.Usage)
	if pi.Backend == "tmux" {
		pi.Attach = s.tmux.AttachCommand(pi.ID)
	}
	return pi
}

// cacheHit is cache-read input tokens over all input tokens, or -1 when
// there were none.
func cacheHit(u Usage) float64 {
	total := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	if total == 0 {
		return -1
	}
	return float64(u.CacheReadInputTokens) / float64(total)
}

func (e *entry) info() PaneInfo {
	e.op.Lock()
	defer e.op.Unlock()
	st := e.status()
	var argv []string
	_ = json.Unmarshal([]byte(e.cfg.Command), &argv)
	pi := PaneInfo{
		ID: e.cfg.ID, Title: e.cfg.Title, Type: e.cfg.Type, Role: e.cfg.Role, RoleTemplate: e.cfg.RoleTemplate,
		Backend: e.cfg.Backend, State: string(st.State), Reason: st.Reason, Since: st.Since,
		Workspace: e.cfg.Workspace, Tracked: topology.Tracked(e.cfg.Role), Provider: e.cfg.Provider,
		Model: e.cfg.Model, Command: argv, ExitCode: st.ExitCode, CreatedAt: schema.ParseTime(e.cfg.CreatedAt),
	}
	if st.Running() {
		pi.PID = st.PID
	}
	if e.agent != nil {
		pi.Messages = e.agent.MessageCount()
		pi.Compactable = pi.Messages > cicy.CompactThreshold
	}
	if e.cfg.Master.Valid {
		m := e.cfg.Master.String
		pi.Master = &m
	}

	var conf struct {
		Team string `json:"team"`
	}
	_ = json.Unmarshal([]byte(e.cfg.Config), &conf)
	pi.Team = conf.Team
	return pi
}

// Get returns one pane.
func (s *Supervisor) Get(id string) (PaneInfo, error) {
	e, err := s.get(id)
	if err != nil {
		return PaneInfo{}, err
	}
	return s.describe(e), nil
}

// running returns the pane's process, or an error saying why there is none.
func (s *Supervisor) running(id string) (*entry, terminal, error) {
	e, err := s.get(id)
	if err != nil {
		return nil, nil, err
	}
	e.op.Lock()
	p := e.proc
	e.op.Unlock()
	if p == nil {
		return e, nil, failedErr("pane %s is not running (%s); 'cicy-agent restart %s' starts it again", e.cfg.ID, e.last.Reason, e.cfg.ID)
	}
	return e, p, nil
}

// Send delivers input to a pane. For a cicy pane the text is a user
// message; with req.Wait the result of its turn comes back.
func (s *Supervisor) Send(ctx context.Context, id string, req SendRequest) (*SendResult, error) {
	if strings.ContainsRune(req.Text, 0) {
		return nil, usageErr("the text contains a NUL byte, which cannot be typed into a pane; remove it")
	}
	for _, k := range req.Keys {
		if strings.ContainsRune(k, 0) {
			return nil, usageErr("the key %q contains a NUL byte; use a key name like Enter or C-c", k)
		}
	}
	if e, err := s.get(id); err == nil && e.cfg.Type == "cicy" {
		_, a, err := s.agentOf(id)
		if err != nil {
			return nil, failedErr("pane %s is not running (%s)", e.cfg.ID, e.last.Reason)
		}
		if len(req.Keys) > 0 {
			return nil, usageErr("--key sends keys to terminal panes; %s is a cicy pane", e.cfg.ID)
		}
		if strings.TrimSpace(req.Text) == "" {
			return nil, usageErr("nothing to send")
		}
		if req.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(req.Timeout*float64(time.Second)))
			defer cancel()
		}
		return s.sendCicy(ctx, a, req.Text, req.Wait)
	}
	if !req.Wait {
		return nil, s.sendTerminal(id, req)
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.Timeout*float64(time.Second)))
		defer cancel()
	}
	sent := time.Now()
	if err := s.sendTerminal(id, req); err != nil {
		return nil, err
	}
	return s.waitQuiet(ctx, id, req.Text, sent)
}

// waitQuiet is `send --wait` on a terminal pane: it returns the output that
// followed the typed text once the pane is idle again (its output quiet
// for the settle time), or when the program exits.
func (s *Supervisor) waitQuiet(ctx context.Context, id, text string, sent time.Time) (*SendResult, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_, p, err := s.running(id)
		if err != nil {
			return nil, err
		}
		st := p.Status()
		if !st.Running() {
			return &SendResult{Status: cicy.TurnFailed, Answer: outputAfter(p.Screen(), text), Error: "the program " + st.Reason}, nil
		}
		if st.State == pane.Idle && st.Since.After(sent) {
			return &SendResult{Status: cicy.TurnCompleted, Answer: outputAfter(p.Screen(), text)}, nil
		}
		select {
		case <-ctx.Done():
			return nil, failedErr("timed out waiting for the output to settle; see 'cicy-agent screen %s'", id)
		case <-tick.C:
		}
	}
}

func (s *Supervisor) sendTerminal(id string, req SendRequest) error {
	e, p, err := s.running(id)
	if err != nil {
		return err
	}
	var keys []byte
	for _, k := range req.Keys {
		b, err := pane.KeyBytes(k)
		if err != nil {
			return usageErr("%v", err)
		}
		keys = append(keys, b...)
	}
	if req.Text != "" || !req.NoEnter {
		if err := p.SendText(req.Text, !req.NoEnter); err != nil {
			return notRunning(e.cfg.ID, p, err)
		}
	}
	if len(keys) > 0 {
		if err := p.SendKeys(keys); err != nil {
			return notRunning(e.cfg.ID, p, err)
		}
	}
	return nil
}

func notRunning(id string, p terminal, err error) error {
	if errors.Is(err, pane.ErrExited) {
		return failedErr("pane %s has exited (%s); 'cicy-agent restart %s' starts it again", id, p.Status().Reason, id)
	}
	return err
}

// paneNum is the N of w-N, for ordering.
func paneNum(id string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(id, "w-"), 10, 64)
	return n
}

// Screen returns a pane's screen; lines > 0 keeps only the last lines.
func (s *Supervisor) Screen(id string, lines int) (ScreenResponse, error) {
	e, err := s.get(id)
	if err != nil {
		return ScreenResponse{}, err
	}
	e.op.Lock()
	p, a := e.proc, e.agent
	e.op.Unlock()
	if a != nil {
		return ScreenResponse{ID: e.cfg.ID, State: string(a.Status().State), Screen: lastLines(replyText(a.Reply()), lines)}, nil
	}
	if p == nil {
		return ScreenResponse{}, failedErr("pane %s has no screen: its process ended with an earlier supervisor; 'cicy-agent restart %s' starts it again", e.cfg.ID, e.cfg.ID)
	}
	return ScreenResponse{ID: e.cfg.ID, State: string(p.Status().State), Screen: lastLines(p.Screen(), lines)}, nil
}

func lastLines(s string, n int) string {
	if n <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Restart starts a pane again with the same argv and workspace, stopping
// it first if it runs.
func (s *Supervisor) Restart(ctx context.Context, id string) error {
	e, err := s.get(id)
	if err != nil {
		return err
	}
	e.op.Lock()
	defer e.op.Unlock()
	e.halt(s.cfg.StopGrace, "restarted")
	if err := s.start(ctx, e); err != nil {
		e.last = pane.Status{State: pane.Error, Reason: fmt.Sprintf("restart failed: %v", err), Since: time.Now()}
		if serr := s.store.SaveRuntime(ctx, e.cfg.ID, runtimeOf(e.last)); serr != nil {
			s.log.WithError(serr).Error("Could not record the failed restart")
		}
		return failedErr("pane %s could not start: %v", e.cfg.ID, err)
	}
	s.paneChanged(e.cfg.ID)
	s.log.WithField("pane", e.cfg.ID).Info("Pane restarted")
	return nil
}

// Kill stops a pane and removes it; its workspace stays.
func (s *Supervisor) Kill(ctx context.Context, id string) error {
	e, err := s.get(id)
	if err != nil {
		return err
	}
	e.op.Lock()
	defer e.op.Unlock()
	e.halt(s.cfg.StopGrace, "killed")
	if err := s.store.DeletePane(ctx, e.cfg.ID); err != nil && !errors.Is(err, schema.ErrNotFound) {
		return err
	}
	s.mu.Lock()
	delete(s.panes, e.cfg.ID)
	s.mu.Unlock()
	s.tasks.Kick() // its tasks end now
	s.paneChanged(e.cfg.ID)
	s.log.WithField("pane", e.cfg.ID).Info("Pane killed")
	return nil
}

// Status builds the topology view.
func (s *Supervisor) Status(ctx context.Context) (StatusResponse, error) {
	sum, err := s.taskSummary(ctx)
	if err != nil {
		return StatusResponse{}, err
	}
	delivered, err := s.store.TasksIn(ctx, schema.TaskDelivered)
	if err != nil {
		return StatusResponse{}, err
	}
	tasks := make([]TaskInfo, 0, len(delivered))
	for _, t := range delivered {
		tasks = append(tasks, taskInfo(t))
	}
	return TeamStatus(s.List(ctx), tasks, sum, time.Now()), nil
}

// Close stops every pane (in parallel, each with its grace period) and
// records why.
func (s *Supervisor) Close() {
	s.closeOnce.Do(s.tasks.stop)
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.panes))
	for _, e := range s.panes {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.op.Lock()
			defer e.op.Unlock()
			e.detach(s.cfg.StopGrace, "the supervisor shut down")
		}()
	}
	wg.Wait()
	s.tmux.Close()
}

// shellEnterDelay separates a shell pane's typed text from its Enter.
// Readline takes both in one read; agent CLIs get their own delay when
// their types arrive (Codex needs about 0.3 s).
const shellEnterDelay = 0

// replyText is what `screen` shows of a cicy pane: the latest answer, or
// while a turn works with no answer yet, its progress.
func replyText(r cicy.Reply) string {
	if r.Answer != "" || r.Status != cicy.TurnWorking {
		return r.Answer
	}
	return fmt.Sprintf("… working (turn %s, %d tool calls so far)", r.TurnID, len(r.ToolCalls))
}
