package notifier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
	"github.com/cicy-ai/cicy-agent/supervisor/notify"
	"github.com/cicy-ai/cicy-agent/topology"
)

// Notifications (docs/notifications.md). The notifier watches what needs
// the person — the same needs-you list status shows, plus failed tasks,
// goals done, budgets reached and nodes down — and turns each new
// episode (a pane that starts to wait, a task that fails) into one event,
// queued in the database for every sink that wants it. Each sink has a
// sender of its own that claims its queued messages, sends them and
// records the answer: at least once, each with its idempotency id, with
// backoff on failure, so a sink that hangs or fails slows nothing but
// itself. A telegram sink also listens to its chat's answers.

// Store is what the notifier needs of the store: its notify_* rows, the
// settings a telegram sink keeps, and the tasks delivered (an answer is
// recorded with its pane's task).
type Store interface {
	NotifySinks(ctx context.Context) ([]schema.NotifySink, error)
	AddNotifySink(ctx context.Context, s schema.NotifySink) error
	PutNotifySink(ctx context.Context, s schema.NotifySink) error
	DeleteNotifySink(ctx context.Context, name string) error
	EnqueueNotify(ctx context.Context, eventID, payload string, sinks []string, at time.Time) (int, error)
	ClaimNotify(ctx context.Context, node string, sinks []string, now time.Time, lease time.Duration, limit int) ([]schema.NotifyItem, error)
	ReleaseNotifyClaims(ctx context.Context, node string) error
	NotifySent(ctx context.Context, id int64, node string, status int, answer string, at time.Time) error
	NotifyFailed(ctx context.Context, id int64, node string, status int, errText string, next, at time.Time) error
	NotifyNextDue(ctx context.Context, sinks []string) (time.Time, bool, error)
	NotifyStats(ctx context.Context) ([]schema.NotifyStat, error)
	OpenNeeds(ctx context.Context) ([]schema.OpenNeed, error)
	OpenNeed(ctx context.Context, n schema.OpenNeed) (bool, error)
	CloseNeeds(ctx context.Context, keys []string) error
	OpenNeedByEvent(ctx context.Context, eventID string) (schema.OpenNeed, error)
	SetNotifyMute(ctx context.Context, target, until string) error
	DeleteNotifyMute(ctx context.Context, target string) error
	NotifyMutes(ctx context.Context) (map[string]string, error)
	RecordNotifyAnswer(ctx context.Context, a schema.NotifyAnswer) (schema.NotifyAnswer, bool, error)
	NotifyAnswers(ctx context.Context, pane string) ([]schema.NotifyAnswer, error)
	NotifyAnswersOfTask(ctx context.Context, task int64) ([]schema.NotifyAnswer, error)
	NotifyFlap(ctx context.Context, key string, now time.Time, window time.Duration, event string) (bool, schema.NotifyFlap, error)
	DueNotifyDigests(ctx context.Context, now time.Time, window time.Duration) ([]schema.NotifyFlap, error)
	TakeNotifyDigest(ctx context.Context, key, windowStart string) (bool, error)
	Setting(ctx context.Context, key string) (string, bool, error)
	SetSetting(ctx context.Context, key, value string) error
	TasksIn(ctx context.Context, status string) ([]schema.Task, error)
}

// Team is what the notifier asks of the team it watches (the supervisor).
type Team interface {
	// List is the team's panes, and StatusOf their status (what needs
	// you among it).
	List(ctx context.Context) []api.PaneInfo
	StatusOf(ctx context.Context, panes []api.PaneInfo) (api.StatusResponse, error)
	// Screen is a pane's screen, its dialog read.
	Screen(id string, lines int) (api.ScreenResponse, error)
	// Answer answers a pane as 'cicy-agent answer' does (a messenger's
	// button, a reply).
	Answer(ctx context.Context, id string, req api.AnswerRequest) (api.AnswerResult, error)
	// PaneID is the id of the pane ref names (its id or its title).
	PaneID(ref string) (string, error)
}

// Hub is the team's event stream, as the notifier watches and feeds it.
type Hub interface {
	// Watch wakes on each change of the team; take empties what changed
	// since; stop ends the watch.
	Watch() (wake <-chan struct{}, take func(), stop func())
	// HomeChanged tells the stream the home changed (the sinks' states);
	// PaneChanged that a pane did (an answer recorded).
	HomeChanged()
	PaneChanged(id string)
}

// Config is what a notifier is made of.
type Config struct {
	Node   string              // this node's name: the episodes it closes
	Root   string              // the home's folder: the sinks' secrets are kept under notify/
	Getenv func(string) string // the supervisor's environment: secrets named by a variable
	Scrub  func(string) string // the supervisor's secrets out of text
	Log    *logrus.Entry
	Store  Store
	Team   Team
	Hub    Hub
}

const (
	// notifyWindow coalesces a flapping pane: one message per pane and
	// kind in it, then a digest of the rest.
	notifyWindow = time.Minute
	// notifyRescan is how often the notifier looks again with nothing
	// changed (digests due, sinks added on another node).
	notifyRescan = 5 * time.Second
	// notifyLease is how long a claimed message is its sender's.
	notifyLease = 2 * time.Minute
	// notifyBackoffMax caps the wait between two tries of a message.
	notifyBackoffMax = 10 * time.Minute
	// notifyTextMax cuts an event's text (a question, a command) to a
	// readable length.
	notifyTextMax = 400
	// notifySettle gathers the changes of one moment into one scan, and
	// notifyGap is the least time between two scans.
	notifySettle = 20 * time.Millisecond
	notifyGap    = 150 * time.Millisecond
)

// Notifier is the home's notifications. A nil *Notifier is a home whose
// store keeps none: its reads are empty and its API refuses.
type Notifier struct {
	cfg   Config
	team  Team
	hub   Hub
	store Store
	log   *logrus.Entry
	node  string
	send  *notify.Sender
	quit  chan struct{}
	wg    sync.WaitGroup
	kick  chan struct{} // a scan is asked for
	// window coalesces a flapping pane (notifyWindow; shorter in tests).
	window time.Duration

	scanMu sync.Mutex
	open   map[string]string // the open episodes this node raised: key → event id

	mu      sync.Mutex
	runs    map[string]*sinkRun  // by sink name
	secrets []string             // every sink secret, to scrub
	refused map[string]time.Time // strangers told they are refused, when
}

// sinkRun is one sink's sender (and a telegram sink's listener).
type sinkRun struct {
	sink      notify.Sink // with its secret
	missing   string      // why its secret cannot be read here
	wake      chan struct{}
	cancel    context.CancelFunc
	done      sync.WaitGroup
	fingerpr  string // what the run was started with
	listening bool
}

// New makes the notifications: it reads the open episodes and starts the
// sinks' senders. Start starts its watch of the team.
func New(ctx context.Context, cfg Config) (*Notifier, error) {
	n := &Notifier{cfg: cfg, team: cfg.Team, hub: cfg.Hub, store: cfg.Store, log: cfg.Log.WithField("part", "notify"), node: cfg.Node,
		send: &notify.Sender{},
		quit: make(chan struct{}), kick: make(chan struct{}, 1), window: notifyWindow, open: map[string]string{}, runs: map[string]*sinkRun{}, refused: map[string]time.Time{}}
	if err := n.load(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// Start starts the watch of the team (once the notifier is where the
// team's answers reach it).
func (n *Notifier) Start() {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.watch()
	}()
}

// load reads the open episodes and starts the sinks' senders.
func (n *Notifier) load(ctx context.Context) error {
	open, err := n.store.OpenNeeds(ctx)
	if err != nil {
		return fmt.Errorf("read the open notifications: %w", err)
	}
	for _, o := range open {
		if n.ours(o.Key) {
			n.open[o.Key] = o.EventID
		}
	}
	if err := n.store.ReleaseNotifyClaims(ctx, n.node); err != nil {
		return err
	}
	return n.reload(ctx)
}

// Close stops every goroutine of the notifier.
func (n *Notifier) Close() {
	if n == nil {
		return
	}
	select {
	case <-n.quit:
		return
	default:
	}
	close(n.quit)
	n.wg.Wait()
	n.mu.Lock()
	runs := n.runs
	n.runs = map[string]*sinkRun{}
	n.mu.Unlock()
	for _, r := range runs {
		r.cancel()
		r.done.Wait()
	}
}

// scanNow asks for a scan.
func (n *Notifier) scanNow() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// watch scans whenever the team changes, and every notifyRescan.
func (n *Notifier) watch() {
	wake, take, unsub := n.hub.Watch()
	defer unsub()
	tick := time.NewTicker(notifyRescan)
	defer tick.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-n.quit
		cancel()
	}()
	last := time.Now()
	n.scan(ctx)
	for {
		select {
		case <-n.quit:
			return
		case <-wake:
			// A busy team changes all the time: one scan per notifyGap at
			// most, the changes of the moment gathered into it.
			select {
			case <-n.quit:
				return
			case <-time.After(max(notifySettle, time.Until(last.Add(notifyGap)))):
			}
			take()
		case <-n.kick:
		case <-tick.C:
			if err := n.reload(ctx); err != nil && ctx.Err() == nil {
				n.log.WithError(err).Warn("Could not read the notification sinks")
			}
			n.digests(ctx)
		}
		last = time.Now()
		n.scan(ctx)
	}
}

// Keys of episodes: "<node>|<pane>/<kind>" for what one node watches (its
// panes, its home), "*|node-down/<node>" for what any node sees.
func (n *Notifier) paneKey(pane, kind string) string { return n.node + "|" + pane + "/" + kind }

func nodeDownKey(node string) string { return "*|node-down/" + node }

// ours reports whether this node closes the episode of key.
func (n *Notifier) ours(key string) bool {
	return strings.HasPrefix(key, n.node+"|") || strings.HasPrefix(key, "*|")
}

// scan raises an event for each new episode and closes those that ended.
func (n *Notifier) scan(ctx context.Context) {
	n.mu.Lock()
	none := len(n.runs) == 0
	n.mu.Unlock()
	if none {
		return // nothing to tell anyone: what needs you is seen once a sink is added
	}
	n.scanMu.Lock()
	defer n.scanMu.Unlock()
	panes := n.team.List(ctx)
	st, err := n.team.StatusOf(ctx, panes)
	if err != nil {
		if ctx.Err() == nil {
			n.log.WithError(err).Warn("Could not read what needs you")
		}
		return
	}
	byID := make(map[string]api.PaneInfo, len(panes))
	nodes := make([]string, 0, len(panes))
	for _, p := range panes {
		byID[p.ID] = p
		nodes = append(nodes, p.Node)
	}
	many := topology.SpansNodes(nodes...)
	now := time.Now()
	seen := map[string]bool{}
	for _, a := range st.NeedsYou {
		key, ok := n.keyOf(a)
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		if _, open := n.open[key]; open {
			continue
		}
		ev, ready := n.eventOf(a, byID[a.ID], now)
		if !ready {
			// Its dialog is not drawn yet (a hook comes first): look again.
			delete(seen, key)
			time.AfterFunc(dialogLook, n.scanNow)
			continue
		}
		if !many && ev.Event != notify.EventNodeDown {
			ev.Node = "" // one machine: no node to name
		}
		n.raise(ctx, key, ev, now)
	}
	var ended []string
	for key := range n.open {
		if !seen[key] {
			ended = append(ended, key)
		}
	}
	if len(ended) == 0 {
		return
	}
	if err := n.store.CloseNeeds(ctx, ended); err != nil {
		n.log.WithError(err).Warn("Could not record the end of what needed you")
		return
	}
	for _, k := range ended {
		delete(n.open, k)
	}
}

// keyOf is the episode key of a need; ok is false for one another node
// watches.
func (n *Notifier) keyOf(a topology.Attention) (string, bool) {
	switch {
	case a.Kind == topology.NeedUnreachable:
		return nodeDownKey(a.Node), true
	case a.ID != topology.HomeID && a.Node != "" && a.Node != n.node:
		return "", false
	case a.Kind == topology.NeedTaskFailed:
		return n.paneKey(a.ID, a.Kind+"/"+strconv.FormatInt(a.Task, 10)), true
	}
	return n.paneKey(a.ID, a.Kind), true
}

// raise records a new episode and queues its event (unless muted, or
// coalesced with the pane's others of this minute).
func (n *Notifier) raise(ctx context.Context, key string, ev notify.Event, now time.Time) {
	added, err := n.store.OpenNeed(ctx, schema.OpenNeed{Key: key, EventID: ev.ID, Pane: ev.Pane, Kind: ev.Kind, OpenedAt: schema.FormatTime(now), Detail: ev.Text})
	if err != nil {
		n.log.WithError(err).WithField("pane", ev.Pane).Warn("Could not record what needs you")
		return
	}
	if !added {
		// Another node raised it (a node down), or this one before a
		// restart: its event was queued then.
		if o, err := n.store.OpenNeeds(ctx); err == nil {
			for _, x := range o {
				if x.Key == key {
					n.open[key] = x.EventID
				}
			}
		}
		if _, ok := n.open[key]; !ok {
			n.open[key] = ev.ID
		}
		return
	}
	n.open[key] = ev.ID
	if n.muted(ctx, ev) {
		n.log.WithFields(logrus.Fields{"pane": ev.Pane, "event": ev.Event}).Debug("Notification muted")
		return
	}
	payload, _ := json.Marshal(ev)
	flap := ev.Pane + "/" + ev.Kind
	send, digest, err := n.store.NotifyFlap(ctx, flap, now, n.window, string(payload))
	if err != nil {
		n.log.WithError(err).Warn("Could not coalesce a notification")
		send = true
	}
	if digest.Suppressed > 0 {
		n.queueDigest(ctx, digest)
	}
	if send {
		n.queue(ctx, ev)
	}
}

// muted reports whether the event's pane or team is muted now.
func (n *Notifier) muted(ctx context.Context, ev notify.Event) bool {
	mutes, err := n.store.NotifyMutes(ctx)
	if err != nil || len(mutes) == 0 {
		return false
	}
	now := time.Now()
	for _, t := range []string{ev.Pane, api.TeamRef + ev.Team, "all"} {
		until, ok := mutes[t]
		if !ok || t == api.TeamRef {
			continue
		}
		if until == "" || schema.ParseTime(until).After(now) {
			return true
		}
	}
	return false
}

// queue puts the event in the queue of every sink that wants it, and
// wakes their senders.
func (n *Notifier) queue(ctx context.Context, ev notify.Event) {
	n.mu.Lock()
	var names []string
	var wake []chan struct{}
	for name, r := range n.runs {
		if r.sink.Wants(ev) {
			names = append(names, name)
			wake = append(wake, r.wake)
		}
	}
	n.mu.Unlock()
	if len(names) == 0 {
		return
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return
	}
	slices.Sort(names)
	if _, err := n.store.EnqueueNotify(ctx, ev.ID, string(payload), names, time.Now()); err != nil {
		n.log.WithError(err).WithField("event", ev.Event).Warn("Could not queue a notification")
		return
	}
	for _, w := range wake {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// queueDigest sends what a flapping pane's window coalesced.
func (n *Notifier) queueDigest(ctx context.Context, f schema.NotifyFlap) {
	var last notify.Event
	if err := json.Unmarshal([]byte(f.LastEvent), &last); err != nil {
		return
	}
	d := last
	d.ID = "d" + last.ID
	d.Count = f.Suppressed
	d.Actions = nil
	d.Text = fmt.Sprintf("%d more time(s) within a minute (the last: %s)", f.Suppressed, last.Text)
	d.At = time.Now()
	n.queue(ctx, d)
}

// digests sends the digests of the windows that ended.
func (n *Notifier) digests(ctx context.Context) {
	due, err := n.store.DueNotifyDigests(ctx, time.Now(), n.window)
	if err != nil {
		return
	}
	for _, f := range due {
		if ok, err := n.store.TakeNotifyDigest(ctx, f.Key, f.WindowStart); err == nil && ok {
			n.queueDigest(ctx, f)
		}
	}
}

// newEventID is a short random id: an event's idempotency key, and in a
// telegram button's data.
func newEventID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "n" + hex.EncodeToString(b)
}

// dialogGrace is how long a CLI agent that waits may take to draw its
// dialog after the signal that it waits (its hook comes first) before
// its event goes without it; dialogLook how often the screen is read
// meanwhile.
const (
	dialogGrace = 3 * time.Second
	dialogLook  = 200 * time.Millisecond
)

// eventOf is the event of a need of pane p; ready is false while a
// waiting CLI agent's dialog is still to be drawn.
func (n *Notifier) eventOf(a topology.Attention, p api.PaneInfo, now time.Time) (ev notify.Event, ready bool) {
	ready = true
	ev = notify.Event{ID: newEventID(), Event: notify.EventNeedsYou, Kind: topology.NeedLabel(a.Kind), Pane: a.ID, Title: p.Title, Team: p.Team, Node: a.Node,
		Task: a.Task, Text: clip.Runes(a.Reason, notifyTextMax), At: now, Resolve: "cicy-agent explain " + a.ID}
	switch a.Kind {
	case topology.NeedWaiting:
		if !n.dialog(&ev, p) && now.Sub(p.Since) < dialogGrace {
			ready = false
		}
	case topology.NeedCrashLoop, topology.NeedWorkerStopped:
		ev.Actions = []string{"restart", "screen"}
		ev.Resolve = "cicy-agent restart " + a.ID
	case topology.NeedUnreachable:
		ev.Event, ev.Kind, ev.Pane, ev.Title, ev.Team = notify.EventNodeDown, notify.EventNodeDown, "", "", ""
		ev.Text = fmt.Sprintf("node %s does not answer: %s", a.Node, clip.Runes(a.Reason, notifyTextMax))
		ev.Resolve = "cicy-agent nodes"
	case topology.NeedTaskFailed:
		ev.Event, ev.Kind = notify.EventTaskFailed, notify.EventTaskFailed
		ev.Resolve = fmt.Sprintf("cicy-agent tasks --pane %s", a.ID)
	case topology.NeedAllDone:
		ev.Event, ev.Kind = notify.EventGoalDone, notify.EventGoalDone
		ev.Resolve = "cicy-agent status"
	case topology.NeedBudget:
		ev.Event, ev.Kind = notify.EventBudgetReached, topology.NeedBudget
		ev.Resolve = "cicy-agent budget " + a.ID
	case topology.NeedDiskFull:
		ev.Pane = ""
		ev.Resolve = "free some space on " + n.cfg.Root
	}
	return ev, ready
}

// dialog fills a waiting pane's event from its screen: an approval (the
// command awaiting it), a question (its options), or what it shows; read
// is false when a CLI agent's screen shows no dialog.
func (n *Notifier) dialog(ev *notify.Event, p api.PaneInfo) (read bool) {
	ev.Kind = topology.NeedWaiting
	ev.Actions = []string{"screen"}
	ev.Resolve = "cicy-agent attach " + p.ID
	if _, ok := cliagent.Lookup(p.Type); !ok {
		return true
	}
	sc, err := n.team.Screen(p.ID, 0)
	if err != nil || sc.Dialog == nil {
		return false
	}
	d := *sc.Dialog
	if d.Text != "" {
		ev.Text = clip.Runes(d.Text, notifyTextMax)
	}
	switch d.Kind {
	case notify.KindApproval:
		ev.Kind = notify.KindApproval
		ev.Actions = []string{"approve", "deny", "screen"}
		ev.Resolve = fmt.Sprintf("cicy-agent answer %s approve", p.ID)
	case notify.KindQuestion:
		ev.Kind = notify.KindQuestion
		ev.Options = d.Options
		ev.Actions = nil
		for i := range d.Options {
			ev.Actions = append(ev.Actions, fmt.Sprintf("option:%d", i+1))
		}
		ev.Actions = append(ev.Actions, "screen")
		if len(d.Options) > 0 {
			ev.Resolve = fmt.Sprintf("cicy-agent answer %s option:1", p.ID)
		} else {
			ev.Resolve = fmt.Sprintf("cicy-agent answer %s text 'your reply' (on Telegram: reply to this message)", p.ID)
		}
	default:
		return false
	}
	return true
}

// reload reads the sinks and (re)starts their senders.
func (n *Notifier) reload(ctx context.Context) error {
	rows, err := n.store.NotifySinks(ctx)
	if err != nil {
		return fmt.Errorf("read the notification sinks: %w", err)
	}
	want := map[string]schema.NotifySink{}
	for _, r := range rows {
		want[r.Name] = r
	}
	n.mu.Lock()
	var stop []*sinkRun
	for name, r := range n.runs {
		if w, ok := want[name]; !ok || sinkPrint(w) != r.fingerpr {
			stop = append(stop, r)
			delete(n.runs, name)
		}
	}
	var start []*sinkRun
	var secrets []string
	for name, row := range want {
		if r, ok := n.runs[name]; ok {
			if r.sink.Secret != "" {
				secrets = append(secrets, r.sink.Secret)
			}
			continue
		}
		r := n.newRun(row)
		n.runs[name] = r
		start = append(start, r)
		if r.sink.Secret != "" {
			secrets = append(secrets, r.sink.Secret)
		}
	}
	n.secrets = secrets
	n.mu.Unlock()
	for _, r := range stop {
		r.cancel()
		r.done.Wait()
	}
	for _, r := range start {
		n.run(r)
	}
	if len(stop)+len(start) > 0 {
		n.hub.HomeChanged()
	}
	return nil
}

// sinkPrint is what a sink's run depends on: a change restarts it.
func sinkPrint(r schema.NotifySink) string {
	return strings.Join([]string{r.Type, r.URL, r.Chat, r.Events, r.SecretRef}, "\x00")
}

// newRun makes a sink's run, its secret read.
func (n *Notifier) newRun(row schema.NotifySink) *sinkRun {
	s := notify.Sink{Name: row.Name, Type: row.Type, URL: row.URL, Chat: row.Chat}
	if row.Events != "" {
		s.Events = strings.Split(row.Events, ",")
	}
	r := &sinkRun{fingerpr: sinkPrint(row), wake: make(chan struct{}, 1)}
	secret, err := n.secretOf(row)
	if err != nil {
		r.missing = err.Error()
	}
	s.Secret = secret
	if s.Type == notify.TypeSlack && secret != "" {
		s.URL = secret // a Slack webhook's URL is its secret
	}
	r.sink = s.WithDefaults()
	r.cancel = func() {}
	return r
}

// secretFile is where a sink's secret is kept in the home.
func (n *Notifier) secretFile(name string) string {
	return filepath.Join(n.cfg.Root, "notify", name+".secret")
}

// secretOf reads a sink's secret where its row says it is.
func (n *Notifier) secretOf(row schema.NotifySink) (string, error) {
	ref := row.SecretRef
	switch {
	case ref == "":
		return "", nil
	case ref == "home":
		b, err := os.ReadFile(n.secretFile(row.Name))
		if err != nil {
			return "", fmt.Errorf("its secret is not in this home (%s): add it again here", n.secretFile(row.Name))
		}
		return strings.TrimSpace(string(b)), nil
	case strings.HasPrefix(ref, "env:"):
		name := strings.TrimPrefix(ref, "env:")
		v := strings.TrimSpace(n.cfg.Getenv(name))
		if v == "" {
			return "", fmt.Errorf("its secret's variable %s is not set in the supervisor's environment", name)
		}
		return v, nil
	}
	return "", fmt.Errorf("its secret is kept in a way this version does not know (%q)", ref)
}

// run starts a sink's sender (and listener).
func (n *Notifier) run(r *sinkRun) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	if r.missing != "" {
		return
	}
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		n.sendLoop(ctx, r)
	}()
	if r.sink.Type == notify.TypeTelegram && n.polls(ctx, r.sink.Name) {
		r.listening = true
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			n.listen(ctx, r.sink)
		}()
	}
}

// sendLoop sends a sink's queued messages until ctx ends.
func (n *Notifier) sendLoop(ctx context.Context, r *sinkRun) {
	names := []string{r.sink.Name}
	for ctx.Err() == nil {
		items, err := n.store.ClaimNotify(ctx, n.node, names, time.Now(), notifyLease, 16)
		if err != nil && ctx.Err() == nil {
			n.log.WithError(err).Warn("Could not read the notification queue")
		}
		for _, it := range items {
			n.deliver(ctx, r.sink, it)
		}
		if len(items) > 0 {
			n.hub.HomeChanged()
			continue
		}
		wait := notifyRescan
		if next, ok, err := n.store.NotifyNextDue(ctx, names); err == nil && ok {
			wait = min(wait, max(time.Until(next), 0))
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-time.After(wait):
		}
	}
}

// deliver sends one queued message and records what the sink answered.
func (n *Notifier) deliver(ctx context.Context, s notify.Sink, it schema.NotifyItem) {
	var ev notify.Event
	if err := json.Unmarshal([]byte(it.Payload), &ev); err != nil {
		_ = n.store.NotifySent(ctx, it.ID, n.node, 0, "not sent: its payload is not an event", time.Now())
		return
	}
	res, err := n.send.Send(ctx, s, ev)
	if ctx.Err() != nil {
		return // claimed: another try once the lease lapses
	}
	now := time.Now()
	if err != nil {
		msg := n.scrub(err.Error())
		next := now.Add(notifyBackoff(it.Attempts + 1))
		if err := n.store.NotifyFailed(ctx, it.ID, n.node, res.Status, msg, next, now); err != nil {
			n.log.WithError(err).Warn("Could not record a failed notification")
		}
		n.log.WithFields(logrus.Fields{"sink": s.Name, "event": ev.Event, "attempt": it.Attempts + 1}).Warn("Notification not delivered: " + msg)
		return
	}
	if err := n.store.NotifySent(ctx, it.ID, n.node, res.Status, n.scrub(res.Body), now); err != nil {
		n.log.WithError(err).Warn("Could not record a sent notification")
	}
}

// notifyBackoff is the wait before try n+1: 1 s doubling, at most
// notifyBackoffMax.
func notifyBackoff(attempts int) time.Duration {
	d := time.Second
	for i := 1; i < attempts && d < notifyBackoffMax; i++ {
		d *= 2
	}
	return min(d, notifyBackoffMax)
}

// scrub takes the sinks' secrets (and the supervisor's) out of text.
func (n *Notifier) scrub(text string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.scrubLocked(text)
}

// States is what each sink did, for status and the dashboard.
func (n *Notifier) States(ctx context.Context) []topology.SinkState {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	none := len(n.runs) == 0
	n.mu.Unlock()
	if none {
		return nil
	}
	stats, err := n.store.NotifyStats(ctx)
	if err != nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []topology.SinkState
	for _, st := range stats {
		r, ok := n.runs[st.Sink]
		if !ok {
			continue
		}
		s := topology.SinkState{Name: st.Sink, Type: r.sink.Type, LastError: n.scrubLocked(st.LastError), LastStatus: st.LastStatus, Pending: st.Pending}
		if st.LastSentAt != "" {
			t := schema.ParseTime(st.LastSentAt)
			s.LastSent = &t
		}
		if st.FailingSince != "" {
			t := schema.ParseTime(st.FailingSince)
			s.FailingSince = &t
		}
		if r.missing != "" && s.LastSent == nil {
			// Nothing sent anywhere (another node of a cluster with the
			// secret would send): it fails for want of its secret.
			s.LastError = r.missing
			if s.FailingSince == nil {
				t := time.Now()
				s.FailingSince = &t
			}
		}
		out = append(out, s)
	}
	// Sinks with no row yet.
	for name, r := range n.runs {
		if !slices.ContainsFunc(out, func(s topology.SinkState) bool { return s.Name == name }) {
			s := topology.SinkState{Name: name, Type: r.sink.Type}
			if r.missing != "" {
				t := time.Now()
				s.LastError, s.FailingSince = r.missing, &t
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b topology.SinkState) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (n *Notifier) scrubLocked(text string) string {
	for _, s := range n.secrets {
		if len(s) >= 6 {
			text = strings.ReplaceAll(text, s, "[redacted]")
		}
	}
	return n.cfg.Scrub(text)
}

// errNoNotify is the notifier's absence (a store without its tables).
var errNoNotify = errors.New("notifications are not available with this store")
