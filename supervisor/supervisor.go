package supervisor

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/panetype"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/agentpane"
	"github.com/cicy-ai/cicy-agent/supervisor/cicypanes"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/cluster"
	"github.com/cicy-ai/cicy-agent/supervisor/comeback"
	"github.com/cicy-ai/cicy-agent/supervisor/diskwatch"
	"github.com/cicy-ai/cicy-agent/supervisor/eventhub"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
	"github.com/cicy-ai/cicy-agent/supervisor/gitwork"
	"github.com/cicy-ai/cicy-agent/supervisor/logscrub"
	"github.com/cicy-ai/cicy-agent/supervisor/newpane"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifier"
	"github.com/cicy-ai/cicy-agent/supervisor/outbox"
	"github.com/cicy-ai/cicy-agent/supervisor/screens"
	"github.com/cicy-ai/cicy-agent/supervisor/shelltask"
	"github.com/cicy-ai/cicy-agent/supervisor/spend"
	"github.com/cicy-ai/cicy-agent/supervisor/teamtools"
	"github.com/cicy-ai/cicy-agent/supervisor/web/front"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Store is what the supervisor needs of the database.
type Store interface {
	CreatePane(ctx context.Context, p schema.Pane, prepare func(id string) (string, error)) (schema.Pane, error)
	ListPanes(ctx context.Context) ([]schema.Pane, error)
	Masters(ctx context.Context) ([]schema.Pane, error)
	GetPane(ctx context.Context, id string) (schema.Pane, error)
	DeletePane(ctx context.Context, id string) error
	SaveRuntime(ctx context.Context, id string, r schema.Runtime) error
	TaskCounts(ctx context.Context) (map[string]map[string]int, error)
	AddUsage(ctx context.Context, u schema.UsageRow) error
	UsageByModel(ctx context.Context) (map[string]map[string]schema.UsageTotal, error)
	UsageGroups(ctx context.Context, q schema.UsageQuery) ([]schema.UsageGroup, error)
	HasUsage(ctx context.Context, pane string) (bool, error)
	SetPaneBudget(ctx context.Context, id string, usd sql.NullFloat64) error
	SetPaneSession(ctx context.Context, id, session, at string) error
	SetTeamBudget(ctx context.Context, team string, usd sql.NullFloat64) error
	TeamBudgets(ctx context.Context) (map[string]float64, error)
	Setting(ctx context.Context, key string) (string, bool, error)
	SetSetting(ctx context.Context, key, value string) error
	SaveGatewayToken(ctx context.Context, pane, hash string) error
	GatewayTokens(ctx context.Context) (map[string]string, error)
	RecentTasks(ctx context.Context, n int) ([]schema.Task, error)
	FailedLast(ctx context.Context) ([]schema.Task, error)
	LastWork(ctx context.Context, pane string) (api.Work, bool, error)
	TaskStore
	cluster.Store
	AdoptPanes(ctx context.Context, node string) (int64, error)
	ForNode(node string) *schema.NodeTasks
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
	// Restoring, if set, is told how many of the stored panes New has
	// restored, every 1,000 and at the end.
	Restoring func(done, total int)
	// BodyTimeout bounds how long a request's body may take to arrive
	// (default 10 s, like the header's).
	BodyTimeout time.Duration
	// GatewayPort, if > 0, is the model gateway's port, kept from then
	// on; 0 keeps the home's (chosen at the first start).
	GatewayPort int
	// DB, if set, is a PostgreSQL URL whose database holds the state
	// instead of the home's SQLite file.
	DB string
	// Listen, if its Addr is set, serves the API on TCP too, for the
	// cluster's secret (see package cluster).
	Listen Listen
	// Node is this supervisor's name in a cluster (default: the host
	// name); its panes carry it.
	Node string
	// Scrub removes the supervisor's secrets from text that leaves it
	// (default: logscrub.New of Getenv and the cluster secret).
	Scrub *provider.Scrubber
	// LedgerRetry is how often usage rows the database refused are
	// written again (default 2 s).
	LedgerRetry time.Duration
	// Web is where the web page is served (package web/front); WebPages
	// makes the page's handler (package web's Pages; nil: no page).
	Web      Web
	WebPages PagesFunc
	// onInputOnly leaves the cicy panes dormant until their first input:
	// no background restore (tests of the dormant panes).
	onInputOnly bool
}

// Supervisor owns the panes. Its registry maps ids to entries; each running
// pane's own state lives in its pane.PTY loop.
type Supervisor struct {
	cfg       Config
	store     Store
	log       *logrus.Entry
	providers *provider.Factory
	scrub     *provider.Scrubber // the credentials, out of text from outside
	tasks     *outbox.Outbox
	tmux      *pane.TmuxServer
	gw        *gateway.Gateway
	tokens    *gateway.Tokens // the panes' gateway tokens, by hash
	cl        *cluster.Cluster
	trees     *gitwork.Keeper  // the workers' worktrees (create --worktree), their commits and merges
	team      *teamtools.Tools // the masters' team tools

	events *eventhub.Hub   // the team's event stream
	spend  *spend.Accounts // the price table, usage, ledger and budgets
	web    *front.Front    // the web page; serve hands it the API

	cicyPanes *cicypanes.Panes // the cicy panes' API and the guidance files
	screens   *screens.Room    // the preview, the styled screen, the explanation

	mu    sync.Mutex
	panes map[string]*entry
	// starting holds the panes Create is starting, not yet in panes: a
	// CLI agent's first hook (SessionStart) can come before Create is done.
	starting  map[string]*entry
	closeOnce sync.Once
	// back brings back the panes found gone at the start and the ones
	// whose program exits by itself (comebackwire.go).
	back *comeback.Returns
	// wakeQuit stops the background restore of the dormant cicy panes
	// (restoreDormant), wakeDone is closed when it has ended.
	wakeQuit, wakeDone chan struct{}

	disk *diskwatch.Watch // whether the home's writes fail for lack of space

	notify *notifier.Notifier // nil when the store has no notification tables
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
	if cfg.Node == "" {
		cfg.Node = DefaultNode()
	}
	s := &Supervisor{cfg: cfg, store: store, log: cfg.Log, panes: map[string]*entry{}, starting: map[string]*entry{}, providers: provider.NewFactory(cfg.Getenv), scrub: cfg.Scrub}
	s.events = eventhub.New(hubTeam{s}, store, cfg.Log)
	s.back = comeback.New(backPanes{s})
	s.cicyPanes, s.screens = cicypanes.New(cicyCore{s}), screens.New(screensCore{s})
	if s.scrub == nil {
		s.scrub = logscrub.New(cfg.Getenv, cfg.Listen.Token)
	}
	var err error
	if s.spend, err = spend.New(ctx, spend.Config{Home: cfg.Home.Root, Store: store, Panes: spendPanes{s}, Log: cfg.Log,
		LedgerRetry: cfg.LedgerRetry, Wrote: func(err error) { s.disk.Note("the ledger", err) }}); err != nil {
		return nil, err
	}
	s.disk = diskwatch.New(func() { s.events.HomeChanged() })
	if w, ok := store.(interface{ OnWrite(func(error)) }); ok {
		w.OnWrite(s.databaseWrote)
	}
	s.trees = gitwork.New(gitwork.Config{Root: cfg.Home.Root, Workspaces: cfg.Home.path("workspaces"), Spares: cfg.Home.path("spares"),
		Log: cfg.Log, Panes: treesCore{s}, Tasks: treesCore{s}, Store: store})
	// A node settles its own workers' tasks and tells its own masters.
	s.tasks = outbox.New(outbox.Config{
		Store: store.ForNode(cfg.Node), Log: cfg.Log, OnTaskChange: s.taskChanged,
		// Spooled hooks may settle tasks the recovery resumed; then the
		// panes found gone come back.
		Recovered: func() { s.replayHooks(); s.back.BringBackAll() },
		Scrub:     s.scrub.String,
		Finish:    s.trees.Finish,
		Pane: func(id string) (outbox.Pane, bool) {
			e, err := s.get(id)
			if err != nil || e.leaving.Load() {
				return nil, false
			}
			return e.kind(), true
		},
	})
	s.cl = cluster.New(cluster.Config{Node: cfg.Node, Version: cfg.Version, Listen: cfg.Listen, Store: store,
		Panes: clusterSide{s}, Events: s.events, Tasks: s.tasks, Log: cfg.Log})
	s.team = newTeamTools(s)
	s.tmux = pane.NewTmuxServer(cfg.Home.Root, cfg.Log)
	s.tmux.Grace = cfg.StopGrace
	s.tmux.RemoveDeadSocket(0) // left by a server that exited
	if pane.TmuxAvailable() {
		if err := s.tmux.ForgetGlobal(slices.Concat(provider.Credentials, provider.Upstreams)...); err != nil {
			s.log.WithError(err).Warn("Could not remove the provider keys from the tmux server's environment")
		}
	}
	if err := cicy.SeedTemplates(cfg.Home.Root); err != nil {
		return nil, fmt.Errorf("seed the role templates: %w", err)
	}
	if _, err := store.AdoptPanes(ctx, cfg.Node); err != nil {
		return nil, err
	}
	all, err := store.ListPanes(ctx)
	if err != nil {
		return nil, err
	}
	rows := slices.DeleteFunc(all, func(r schema.Pane) bool { return r.Node != cfg.Node })
	teams, err := store.TeamBudgets(ctx)
	if err != nil {
		return nil, err
	}
	s.spend.LoadBudgets(rows, teams) // before the gateway asks
	if err := s.startGateway(ctx); err != nil {
		return nil, err
	}
	s.trees.Prune(ctx, rows)
	s.back.Begin(time.Now())
	if err := s.restore(ctx, rows, cfg.Restoring); err != nil {
		s.gw.Close()
		s.spend.Close()
		return nil, err
	}
	// What panes that ended while no supervisor ran left running (their
	// tmux server killed, say) ends now that the running ones are adopted.
	s.tmux.EndLeftovers()
	s.log.WithFields(logrus.Fields{"panes": len(rows), "node": cfg.Node}).Info("Supervisor loaded its panes")
	s.startNotify(ctx, store)
	go s.tasks.Run()
	if !cfg.onInputOnly {
		s.wakeQuit, s.wakeDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(s.wakeDone)
			s.restoreDormant(s.wakeQuit)
		}()
	}
	return s, nil
}

// restore makes the entries of the stored panes, telling told (if set)
// how many are done every 1,000 and at the end.
func (s *Supervisor) restore(ctx context.Context, rows []schema.Pane, told func(done, total int)) error {
	for i, r := range rows {
		e, err := s.load(ctx, r)
		if err != nil {
			return err
		}
		// A pane restored already may be running (a cicy turn that goes
		// on calls the budgets, which look panes up): under the lock.
		s.mu.Lock()
		s.panes[r.ID] = e
		s.mu.Unlock()
		if told != nil && ((i+1)%1000 == 0 || i+1 == len(rows)) {
			told(i+1, len(rows))
		}
	}
	return nil
}

// load makes the entry of a stored pane. A tmux session outlives the
// supervisor: the running one is adopted. A cicy pane lives in the
// supervisor: it comes back with it, dormant until its first input or the
// background restore after the start (restoreDormant) brings back its
// conversation from disk.
// A PTY pane cannot outlive the supervisor: one recorded as running is now
// exited, with the reason.
func (s *Supervisor) load(ctx context.Context, r schema.Pane) (*entry, error) {
	e := newEntry(r, r.Runtime.Status())
	var lost string
	switch {
	case panetype.InProcess(r.Type):
		s.sleepEntry(e)
		return e, nil
	case r.Backend == "tmux":
		wasRunning := e.status().Running()
		k, err := s.launch(e, true)
		if err == nil {
			e.set(k)
			return e, nil
		}
		if !wasRunning {
			return e, nil // it had ended before: it stays so
		}
		lost = comeback.LostTmux + " (" + err.Error() + ")"
	case e.status().Running():
		lost = comeback.LostDied
	default:
		return e, nil
	}
	back, lost := comeback.FoundGone(r.ID, e.restart, lost)
	if back {
		s.back.FoundGone(r.ID)
	}
	st := pane.Status{State: pane.Exited, Reason: lost, Since: time.Now()}
	k := &stopped{cfg: r, st: st, gone: back}
	if back && resumable(e) != "" {
		k.back = e
	}
	e.set(k)
	if err := s.store.SaveRuntime(ctx, r.ID, schema.RuntimeOf(st)); err != nil {
		// A full disk must not keep the team from coming back: the row
		// says running until a later write (and the next start finds it
		// gone again); the refused write puts the disk under needs-you.
		s.log.WithError(err).WithField("pane", r.ID).Warn("Could not record that the pane was found gone")
	}
	return e, nil
}

// retryRestore restores again a cicy pane whose restore failed for lack
// of space, unless something else started or removed it meanwhile; the
// error is the new failure's.
func (s *Supervisor) retryRestore(id string) error {
	e, err := s.get(id)
	if err != nil {
		return nil // removed meanwhile
	}
	e.op.Lock()
	defer e.op.Unlock()
	if p, ok := e.kind().(*stopped); !ok || !p.noRoom {
		return nil // restarted meanwhile
	}
	k, err := s.launch(e, true)
	if err != nil {
		e.set(&stopped{cfg: e.cfg, st: pane.Status{State: pane.Error, Reason: "could not restore: " + err.Error(), Since: time.Now()}, noRoom: cicy.IsDiskFull(err)})
		s.paneChanged(id)
		return err
	}
	e.set(k)
	s.paneChanged(id)
	s.tasks.Kick()
	s.log.WithField("pane", id).Info("Pane restored, now that the disk has room")
	return nil
}

func (s *Supervisor) get(id string) (*entry, error) {
	ref := id
	id, err := api.ParsePaneID(id)
	if err != nil {
		if strings.HasPrefix(ref, "w-") || ref == "" {
			return nil, err
		}
		return s.byTitle(ref)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.panes[id]
	if !ok {
		return nil, api.PaneNotFound(id)
	}
	return e, nil
}

// live is the pane with this id, registered or being started (a CLI
// agent calls out while it starts).
func (s *Supervisor) live(id string) (*entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.panes[id]
	if !ok {
		e, ok = s.starting[id]
	}
	return e, ok
}

// Create validates req, stores the pane and starts it. Nothing is stored
// when validation or the start fails.
func (s *Supervisor) Create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error) {
	if err := s.resolveMaster(&req); err != nil {
		return api.CreateResponse{}, err
	}
	warnings, err := newpane.Normalize(&req)
	if err != nil {
		return api.CreateResponse{}, err
	}
	if panetype.IsAgent(req.Type) {
		if _, err := agentpane.Find(req.Type, s.cfg.Getenv); err != nil {
			return api.CreateResponse{}, err
		}
	}
	if req.Node != "" && req.Node != s.cfg.Node {
		return api.CreateResponse{}, api.Usagef("--node %s: this supervisor is node %s, and there is no node %s in its cluster (see 'cicy-agent nodes')", req.Node, s.cfg.Node, req.Node)
	}
	tmpl, err := newpane.CheckNames(s.cfg.Home.Root, req, s.masterRole)
	if err != nil {
		return api.CreateResponse{}, err
	}
	joined, err := s.joinSoleMaster(ctx, &req)
	if err != nil {
		return api.CreateResponse{}, err
	}
	warnings = append(warnings, newpane.MissingEnv(req.Env, s.cfg.Getenv)...)
	var pw *gitwork.PaneWorktree
	if req.Worktree {
		if pw, err = s.trees.ForCreate(ctx, req); err != nil {
			return api.CreateResponse{}, err
		}
		req.Workspace = "" // the worktree, under the home
	}
	left := s.takeLeft(ctx, &req) // down, then up: the agent's session goes on
	var undo func()
	newRow := newpane.Row(req, pw)
	newRow.Node = s.cfg.Node
	row, err := s.store.CreatePane(ctx, newRow, func(id string) (string, error) {
		ws, notes, u, err := newpane.Prepare(s.folders(id, req.Type, pw), req, tmpl)
		warnings, undo = append(warnings, notes...), u
		return ws, err
	})
	if err != nil {
		if undo != nil {
			undo() // prepared, but the row was not stored
		}
		return api.CreateResponse{}, err
	}
	if row.BudgetUSD.Valid { // in force before the pane's first request
		s.spend.PutPaneBudget(row.ID, &row.BudgetUSD.Float64)
	}
	if err := s.register(row, s.resumeLeft(left, row)); err != nil {
		s.spend.PutPaneBudget(row.ID, nil)
		// The row must not outlive a pane that never ran.
		if derr := s.store.DeletePane(ctx, row.ID); derr != nil {
			s.log.WithError(derr).Error("Could not remove the row of a pane that failed to start")
		}
		undo()
		return api.CreateResponse{}, api.Failedf("pane %s could not start: %v", row.ID, err)
	}
	s.paneChanged(row.ID)
	s.log.WithFields(logrus.Fields{"pane": row.ID, "type": row.Type, "title": row.Title}).Info("Pane created")
	if w := s.cicyPanes.ProviderWarning(row.ID); w != "" {
		warnings = append(warnings, w)
	}
	return api.CreateResponse{ID: row.ID, Warnings: warnings, Joined: joined}, nil
}

// resolveMaster turns a request's --master given as a title into the
// pane id it names (a pane id, "w-…", is left as it is: CheckNames
// checks it, on this node or another).
func (s *Supervisor) resolveMaster(req *api.CreateRequest) error {
	m := strings.TrimSpace(req.Master)
	if m == "" || strings.HasPrefix(m, "w-") {
		return nil
	}
	// --master takes a title too, as every pane argument does.
	e, err := s.resolvePane(m)
	if err != nil {
		return api.Usagef("--master: %v", err)
	}
	req.Master = e.cfg.ID
	return nil
}

// joinSoleMaster gives a worker created without a master the only master
// there is now, recorded in its row, and returns it (nil when it named
// one, or there is none or several). The rule is applied once, here: a
// worker made before its team's master does not join that master later.
// A team file's worker is given its team's master by the file (a team
// with none does not take another team's).
func (s *Supervisor) joinSoleMaster(ctx context.Context, req *api.CreateRequest) (*api.JoinedMaster, error) {
	if req.Master != "" || !topology.Tracked(req.Role) || req.Team != "" {
		return nil, nil
	}
	// The database's, not this node's view: a master made a moment ago on
	// another node counts.
	masters, err := s.store.Masters(ctx)
	if err != nil || len(masters) != 1 {
		return nil, err
	}
	m := masters[0]
	req.Master = m.ID
	return &api.JoinedMaster{ID: m.ID, Title: m.Title, Node: m.Node}, nil
}

// masterRole is the role of pane id, the master a new pane names, on
// this node or another (ok false: there is no such pane).
func (s *Supervisor) masterRole(id string) (role string, ok bool) {
	if m, err := s.get(id); err == nil {
		return m.cfg.Role, true
	}
	if pid, err := api.ParsePaneID(id); err == nil {
		if row, ok := s.cl.Lookup(context.Background(), pid); ok {
			return remoteEntry(row).cfg.Role, true // a master on another node
		}
	}
	return "", false
}

// folders is where a new pane's folders go (package newpane), its
// worktree made by the keeper when it works in one (pw).
func (s *Supervisor) folders(id, typ string, pw *gitwork.PaneWorktree) newpane.Folders {
	f := newpane.Folders{Home: s.cfg.Home.Root, ID: id, PaneDir: s.cfg.Home.paneDir(id), Workspace: s.cfg.Home.Workspace(id), Log: s.log,
		Guidance: func(ws string) string { return s.cfg.Home.guidanceFile(id, typ, ws, pw != nil) }}
	if pw != nil {
		f.Worktree = func(ws string) (func(), error) { return s.trees.Add(id, ws, pw) }
	}
	return f
}

// register starts a new pane and puts it in the registry. Hooks that
// come while its process starts are kept (recordHook); from here on they
// go to the process, once the pending one is applied.
func (s *Supervisor) register(row schema.Pane, resume string) error {
	e := newEntry(row, pane.Status{State: pane.Starting, Reason: "starting", Since: time.Now()})
	if resume != "" {
		now := time.Now()
		e.session.Seed(resume, now)
		if err := s.store.SetPaneSession(context.Background(), row.ID, resume, schema.FormatTime(now)); err != nil {
			s.log.WithError(err).WithField("pane", row.ID).Warn("Could not record the session the pane resumes")
		}
		e.setCameBack(comeback.ResumedTeams(resume))
	}
	s.mu.Lock()
	s.starting[row.ID] = e
	s.mu.Unlock()
	k, err := s.launchAs(e, false, resume)
	e.op.Lock()
	defer e.op.Unlock()
	s.mu.Lock()
	delete(s.starting, row.ID)
	if err == nil {
		e.set(k)
		s.panes[row.ID] = e
	}
	s.mu.Unlock()
	if err == nil {
		e.applyHookState()
	}
	return err
}

// launch starts the pane's program or turn loop, or with adopt takes over
// its running tmux session (or restores its turn loop) after a supervisor
// restart.
func (s *Supervisor) launch(e *entry, adopt bool) (kind, error) {
	return s.launchAs(e, adopt, "")
}

// launchAs is launch; a CLI agent with resume set ("" for a new
// conversation) resumes that session of its own. Its start is noted for
// its restart policy.
func (s *Supervisor) launchAs(e *entry, adopt bool, resume string) (kind, error) {
	e.lives.Start(time.Now()) // before: a program may end before launch returns
	return s.launchKind(e, adopt, resume)
}

func (s *Supervisor) launchKind(e *entry, adopt bool, resume string) (kind, error) {
	restored, err := s.trees.Ensure(e.cfg)
	if err != nil {
		return nil, err
	}
	if restored {
		e.worktreeAgain.Store(true)
	}
	if panetype.InProcess(e.cfg.Type) {
		return s.startAgent(e.cfg)
	}
	agent, isCLI := cliagent.Lookup(e.cfg.Type)
	opts, err := s.terminalOptions(e.cfg, agent, isCLI, adopt, resume)
	if err != nil {
		return nil, err
	}
	if isCLI {
		opts.InFlight = e.requests.InFlight
	}
	var t terminal
	switch {
	case e.cfg.Backend == "tmux" && adopt:
		t, err = s.tmux.Adopt(e.cfg.ID, opts)
	case e.cfg.Backend == "tmux":
		t, err = s.tmux.Start(e.cfg.ID, opts)
	default:
		// In a cgroup of its own where one can be made: what the program
		// starts ends with the pane, or at the next start if the
		// supervisor dies first.
		opts.Group = s.tmux.NewGroup(e.cfg.ID)
		t, err = pane.StartPTY(opts)
	}
	if err != nil {
		return nil, err
	}
	term := termKind{cfg: e.cfg, proc: t, keeps: e.cfg.Backend == "tmux", log: opts.Log}
	if isCLI {
		return &cliKind{termKind: term, hooks: &e.hooks, answers: &e.answers, requests: &e.requests, home: s.cfg.Home.Root, quiet: s.hookQuiet()}, nil
	}
	var argv []string
	_ = json.Unmarshal([]byte(e.cfg.Command), &argv) // stored by Create from a list
	wrap, why := shelltask.Wraps(argv)
	return &shellKind{termKind: term, settle: s.cfg.Settle, wrap: wrap, why: why, tasks: filepath.Join(s.cfg.Home.paneDir(e.cfg.ID), "tasks"),
		scrub: s.scrub.String, gone: make(chan struct{})}, nil
}

// terminalOptions is how a terminal pane's program runs: its command, its
// environment and, for a CLI agent, its seeded config (not when adopting
// its running session), its screen rules and Enter delay.
func (s *Supervisor) terminalOptions(cfg schema.Pane, agent cliagent.Kind, isCLI, adopt bool, resume string) (pane.Options, error) {
	var argv []string
	if err := json.Unmarshal([]byte(cfg.Command), &argv); err != nil {
		return pane.Options{}, fmt.Errorf("stored command of %s is not a JSON list: %w", cfg.ID, err)
	}
	id := cfg.ID
	log := s.log.WithField("pane", id)
	pass := newpane.ParseConfig(cfg.Config).Env
	opts := pane.Options{Dir: cfg.Workspace, Settle: s.cfg.Settle, EnterDelay: shellEnterDelay, HookQuiet: s.cfg.HookQuiet, Log: log,
		OnChange: func(st pane.Status) {
			s.tasks.PaneChanged()
			s.stateChanged(id)
			// Only the start and the end are stored: busy/idle flips would
			// cost a write each and a restarted supervisor cannot use them.
			if st.State == pane.Starting || !st.Running() {
				if err := s.store.SaveRuntime(context.Background(), id, schema.RuntimeOf(st)); err != nil {
					log.WithError(err).Error("Could not record the pane's state")
				}
			}
			if !st.Running() {
				s.exited(id, st)
			}
			if st.State == pane.Busy {
				s.tookWork(id)
			}
		},
	}
	var extra []string
	if isCLI {
		rules, err := cliagent.ScreenRules(s.cfg.Home.Root, cfg.Type)
		if err != nil {
			return pane.Options{}, err
		}
		opts.Rules, opts.Layout, opts.EnterDelay = rules, agent.Layout(), agent.EnterDelay
		if !adopt {
			if argv, extra, err = s.prepareAgent(cfg, argv, resume); err != nil {
				return pane.Options{}, err
			}
		}
	}
	opts.Argv = argv
	opts.Env = append(agentpane.Env(s.cfg.Home.Root, id, isCLI, os.Environ(), pass, s.cfg.Getenv), extra...)
	return opts, nil
}

// List returns every pane of the cluster (this node's alone on a
// single machine), in id order.
func (s *Supervisor) List(ctx context.Context) []api.PaneInfo {
	out := s.ListLocal()
	if rem := s.cl.Panes(time.Now()); len(rem) > 0 {
		out = append(out, rem...)
		slices.SortFunc(out, func(a, b api.PaneInfo) int { return api.ComparePaneIDs(a.ID, b.ID) })
	}
	return out
}

// Panes is List as it is written: this node's panes are described one by
// one as they are yielded, so the first of 100,000 is on its way before
// the others are described (when another node's panes are listed too,
// the list is made first, to be ordered).
func (s *Supervisor) Panes(ctx context.Context) iter.Seq[api.PaneInfo] {
	if len(s.cl.Panes(time.Now())) > 0 {
		return slices.Values(s.List(ctx))
	}
	entries := s.entries()
	return func(yield func(api.PaneInfo) bool) {
		for _, e := range entries {
			if !yield(s.describe(e)) {
				return
			}
		}
	}
}

// ListFiltered is List limited to the panes that pass f. A state or role
// that does not exist, or a team or node that no pane has, is refused
// with the ones there are.
func (s *Supervisor) ListFiltered(ctx context.Context, f api.PaneFilter) ([]api.PaneInfo, error) {
	all := s.List(ctx)
	if err := f.Check(all, append(s.cl.NodeNames(), s.cfg.Node)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(p api.PaneInfo) bool { return !f.Matches(p) }), nil
}

// ListLocal returns this node's panes, in id order.
func (s *Supervisor) ListLocal() []api.PaneInfo {
	entries := s.entries()
	out := make([]api.PaneInfo, 0, len(entries))
	for _, e := range entries {
		out = append(out, s.describe(e))
	}
	return out
}

// byTitle is this node's pane titled title: every command that takes a
// pane takes its title too, when one pane has it.
func (s *Supervisor) byTitle(title string) (*entry, error) {
	var ids []string
	var found *entry
	for _, e := range s.entries() {
		if e.cfg.Title == title {
			found = e
			ids = append(ids, e.cfg.ID)
		}
	}
	if len(ids) == 1 {
		return found, nil
	}
	return nil, titleErr(title, ids)
}

// titleErr is the error of a title that names no pane, or more than one
// (ids): every command says it the same way.
func titleErr(title string, ids []string) error {
	if len(ids) == 0 {
		return &api.Error{Kind: api.KindNotFound, Message: fmt.Sprintf("no pane %s: neither an id (w-<N>) nor the title of a pane (see 'cicy-agent ls')", title)}
	}
	ids = slices.Clone(ids)
	slices.SortFunc(ids, api.ComparePaneIDs)
	return api.Usagef("%d panes are titled %q (%s); name one by id", len(ids), title, strings.Join(ids, ", "))
}

// entries are this node's panes, in id order.
func (s *Supervisor) entries() []*entry {
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.panes))
	for _, e := range s.panes {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	slices.SortFunc(entries, func(a, b *entry) int { return cmp.Compare(a.num, b.num) })
	return entries
}

// describe is a pane as the API shows it: its config and state, its usage
// and, for tmux, how to attach.
func (s *Supervisor) describe(e *entry) api.PaneInfo {
	pi := e.info()
	pi.Node = s.cfg.Node
	s.spend.Describe(&pi, e.team)
	pi.Worktree = s.trees.Info(e.cfg, &e.work)
	if pi.Backend == "tmux" {
		pi.Attach = s.tmux.AttachCommand(pi.ID)
	}
	return pi
}

func (e *entry) info() api.PaneInfo {
	k := e.kind()
	st := k.Status()
	var argv []string
	switch e.cfg.Command {
	case "", "null":
	case "[]": // a cicy pane's: no JSON to read for 100,000 of them
		argv = []string{}
	default:
		_ = json.Unmarshal([]byte(e.cfg.Command), &argv) // stored by Create from a list
	}
	pi := api.PaneInfo{
		ID: e.cfg.ID, Title: e.cfg.Title, Type: e.cfg.Type, Role: e.cfg.Role, RoleTemplate: e.cfg.RoleTemplate,
		Backend: e.cfg.Backend, State: string(st.State), Reason: st.Reason, Since: st.Since,
		Workspace: e.cfg.Workspace, Tracked: topology.Tracked(e.cfg.Role), Provider: e.cfg.Provider,
		Model: e.cfg.Model, Command: argv, ExitCode: st.ExitCode, CreatedAt: schema.ParseTime(e.cfg.CreatedAt),
	}
	if st.Running() {
		pi.PID = st.PID
	}
	k.Describe(&pi)
	pi.Upstream = e.answers.Upstream()
	e.session.Describe(&pi, e.cfg.Type)
	pi.Restart, pi.CameBack = e.restart, e.cameBackAs()
	if e.backFresh.Load() && st.Running() {
		pi.Reason = pi.CameBack + " · " + pi.Reason
	}
	if e.cfg.Master.Valid {
		m := e.cfg.Master.String
		pi.Master = &m
	}
	pi.Team = e.team
	return pi
}

// Get returns one pane, this node's or another's.
func (s *Supervisor) Get(id string) (api.PaneInfo, error) {
	e, err := s.get(id)
	if err != nil {
		if pid, perr := api.ParsePaneID(id); perr == nil {
			if pi, ok := s.cl.Info(pid); ok {
				return pi, nil
			}
		}
		return api.PaneInfo{}, err
	}
	return s.describe(e), nil
}

// Send delivers input to a pane: typed into a terminal pane, a user
// message to a cicy pane. With req.Wait the result comes back: the output
// that followed once the terminal is idle again, or the turn's answer.
func (s *Supervisor) Send(ctx context.Context, id string, req api.SendRequest) (*api.SendResult, error) {
	if strings.ContainsRune(req.Text, 0) {
		return nil, api.Usagef("the text contains a NUL byte, which cannot be typed into a pane; remove it")
	}
	for _, k := range req.Keys {
		if strings.ContainsRune(k, 0) {
			return nil, api.Usagef("the key %q contains a NUL byte; use a key name like Enter or C-c", k)
		}
	}
	e, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if req.Wait && req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.Timeout*float64(time.Second)))
		defer cancel()
	}
	if err := cluster.TooLate(ctx); err != nil {
		return nil, err // its caller gave up: nothing is typed
	}
	return e.kind().Send(ctx, req)
}

// Screen returns a pane's screen; lines > 0 keeps only the last lines
// (package screens).
func (s *Supervisor) Screen(id string, lines int) (api.ScreenResponse, error) {
	return s.screens.Screen(id, lines)
}

// Restart starts a pane again with the same argv and workspace, stopping
// it first if it runs.
func (s *Supervisor) Restart(ctx context.Context, id string) error {
	return s.RestartPane(ctx, id, false)
}

// RestartPane is Restart; a CLI agent resumes its recorded session (the
// conversation goes on) unless fresh is set or it has none.
func (s *Supervisor) RestartPane(ctx context.Context, id string, fresh bool) error {
	e, err := s.get(id)
	if err != nil {
		return err
	}
	e.op.Lock()
	defer e.op.Unlock()
	e.halt(s.cfg.StopGrace, stopRestarted)
	e.lives.Reset()
	session := ""
	if !fresh {
		session = resumable(e)
	}
	k, err := s.launchAs(e, false, session)
	if err != nil {
		st := pane.Status{State: pane.Error, Reason: fmt.Sprintf("restart failed: %v", err), Since: time.Now()}
		e.set(&stopped{cfg: e.cfg, st: st})
		if serr := s.store.SaveRuntime(ctx, e.cfg.ID, schema.RuntimeOf(st)); serr != nil {
			s.log.WithError(serr).Error("Could not record the failed restart")
		}
		return api.Failedf("pane %s could not start: %v", e.cfg.ID, err)
	}
	e.set(k)
	if session != "" {
		e.setCameBack(comeback.Resumed(session))
	} else {
		e.setCameBack("")
	}
	s.paneChanged(e.cfg.ID)
	s.log.WithFields(logrus.Fields{"pane": e.cfg.ID, "resumed": session}).Info("Pane restarted")
	return nil
}

// Kill stops a pane and removes it; its workspace stays. While it stops
// (its grace period), ls and the event stream show it stopping.
func (s *Supervisor) Kill(ctx context.Context, id string) error {
	_, err := s.KillPane(ctx, id)
	return err
}

// KillPane is Kill, and what it left behind: a worktree with work not
// merged or not committed is kept, and the answer says where.
func (s *Supervisor) KillPane(ctx context.Context, id string) (api.KillResult, error) {
	e, err := s.get(id)
	if err != nil {
		return api.KillResult{}, err
	}
	e.op.Lock()
	defer e.op.Unlock()
	e.leaving.Store(true)
	e.halt(s.cfg.StopGrace, stopKilled)
	s.noteLeft(ctx, e)
	if err := s.store.DeletePane(ctx, e.cfg.ID); err != nil && !errors.Is(err, schema.ErrNotFound) {
		return api.KillResult{}, err
	}
	kept := s.trees.Release(e.cfg)
	s.mu.Lock()
	delete(s.panes, e.cfg.ID)
	s.mu.Unlock()
	s.trees.DropSpare(e.cfg)
	s.tokens.Forget(e.cfg.ID)
	s.spend.PutPaneBudget(e.cfg.ID, nil) // its row went with it
	s.tasks.Kick()                       // its tasks end now
	s.paneChanged(e.cfg.ID)
	s.log.WithField("pane", e.cfg.ID).Info("Pane killed")
	return api.KillResult{Kept: kept}, nil
}

// Status builds the topology view.
func (s *Supervisor) Status(ctx context.Context) (api.StatusResponse, error) {
	return s.events.Status(ctx, s.List(ctx))
}

// Close stops every pane (in parallel, each with its grace period) and
// records why.
func (s *Supervisor) Close() {
	s.back.Stop()
	s.closeOnce.Do(func() {
		s.notify.Close()
		s.cl.Close()
		s.tasks.Stop()
		s.trees.Close()
		if s.wakeQuit != nil {
			close(s.wakeQuit)
			<-s.wakeDone // no pane is restored after its detach
		}
	})
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
			e.set(&stopped{cfg: e.cfg, st: e.kind().Detach(s.cfg.StopGrace, "the supervisor shut down")})
		}()
	}
	wg.Wait()
	s.back.Wait()
	if err := s.gw.Close(); err != nil {
		s.log.WithError(err).Warn("Closing the model gateway")
	}
	s.spend.Close() // after the panes and the gateway: no call comes after it
	s.disk.Close()
	s.tmux.Close()
	// A view on the person's tmux server goes with the supervisor.
	if err := screens.EndView(s.cfg.Home.ViewFile()); err != nil {
		s.log.WithError(err).Warn("Could not end the view")
	}
}

// Why a pane is stopped, in its exit reason.
const (
	stopKilled    = "killed"
	stopRestarted = "restarted"
)

// shellEnterDelay separates a shell pane's typed text from its Enter.
// Readline takes both in one read; agent CLIs get their own delay when
// their types arrive (Codex needs about 0.3 s).
const shellEnterDelay time.Duration = 0
