package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// Nodes: supervisors that share one PostgreSQL database form a cluster.
// Each is a node with a name; it owns the panes it started (their rows
// carry its name) and renews a lease in the nodes table. The other nodes'
// panes are shown from their supervisors' event streams (a peer watcher
// per node, over the cluster API, that also probes the node's health), or
// from the database with the state "unreachable" while a node does not
// answer. Each node judges the others for itself (nothing of it is
// recorded): what it shows is whether it can reach them, which is what
// the commands it forwards depend on. Commands on another node's
// pane are forwarded to it (forward.go); tasks cross nodes through the
// shared tasks table, each node's outbox seeing its own workers'
// deliveries and its own masters' notifications, woken by the database's
// notes (LISTEN/NOTIFY).

// Store is what the cluster needs of the database: the nodes table, the
// panes' rows (every node's) and the task notes.
type Store interface {
	Dialect() string
	RegisterNode(ctx context.Context, n schema.Node, lease time.Duration) error
	RenewNode(ctx context.Context, name string, lease time.Duration) error
	LeaveNode(ctx context.Context, name string) error
	Nodes(ctx context.Context) ([]schema.Node, error)
	ListPanes(ctx context.Context) ([]schema.Pane, error)
	GetPane(ctx context.Context, id string) (schema.Pane, error)
	WatchTasks(ctx context.Context, fn func(schema.TaskNote), onErr func(error)) error
}

// Panes is what the cluster needs of this node's own panes.
type Panes interface {
	// Has reports whether pane id is this node's (registered or starting).
	Has(id string) bool
	// Describe is a pane that runs nothing here, from its row and status,
	// as this node describes its own.
	Describe(row schema.Pane, st pane.Status) api.PaneInfo
}

// Events is where the cluster publishes what changed of the other nodes'
// panes (the event stream).
type Events interface {
	PaneChanged(id string)  // appeared, went, moved, or its node lost
	StateChanged(id string) // its state changed
}

// Tasks is the outbox, woken by the database's task notes.
type Tasks interface {
	Kick()                     // look at every task (notes may have been missed)
	Noted(id int64, look bool) // task id changed; look: it is this node's to act on
}

// Config is what a Cluster is made of.
type Config struct {
	Node    string // this node's name
	Version string // this binary's, recorded with the node
	Listen  Listen // the cluster API's settings: its secret and certificate dial the others
	Store   Store
	Panes   Panes
	Events  Events
	Tasks   Tasks
	Log     *logrus.Entry
}

const (
	// nodeLease is how long a node counts as alive after its last
	// heartbeat; nodeBeat is how often it renews.
	nodeLease = 30 * time.Second
	nodeBeat  = 10 * time.Second
)

// DefaultNode is the node name when none is given: the host name.
func DefaultNode() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "local"
	}
	return h
}

// Cluster is this supervisor's view of the other nodes. Its goroutines
// (the heartbeat, the task notes, one watcher per peer) stop at Close.
type Cluster struct {
	store   Store
	local   Panes
	events  Events
	tasks   Tasks
	version string
	node    string
	token   string
	tlsConf *tls.Config // for dialing the peers; nil: plain HTTP
	log     *logrus.Entry
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu    sync.Mutex
	on    bool                     // started: a shared database
	nodes map[string]schema.Node   // the other nodes, as last read
	rows  map[string]schema.Pane   // their panes, as last read, by id
	peers map[string]*peer         // watchers of the nodes with an address
	trips map[string]trip          // transports for forwarding, by address
	gone  map[string]chan struct{} // closed when the node is lost (lapses)
	// nudged asks the heartbeat goroutine to reread the cluster now (a
	// peer lost: its node may have come back at another address).
	nudged chan struct{}
}

// New is the cluster part of a supervisor; it starts nothing (Start).
func New(cfg Config) *Cluster {
	ctx, cancel := context.WithCancel(context.Background())
	return &Cluster{store: cfg.Store, local: cfg.Panes, events: cfg.Events, tasks: cfg.Tasks, version: cfg.Version,
		node: cfg.Node, token: cfg.Listen.Token, tlsConf: peerTLS(cfg.Listen, cfg.Log), log: cfg.Log.WithField("node", cfg.Node),
		ctx: ctx, cancel: cancel, nodes: map[string]schema.Node{}, rows: map[string]schema.Pane{}, peers: map[string]*peer{}, trips: map[string]trip{}, gone: map[string]chan struct{}{}, nudged: make(chan struct{}, 1)}
}

// peerTLS is how this node dials the others: TLS when it serves TLS
// itself (a cluster speaks one way), trusting its own certificate (the
// usual case: one certificate for every node) and the system's roots.
func peerTLS(l Listen, log *logrus.Entry) *tls.Config {
	if l.CertFile == "" {
		return nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if pem, err := os.ReadFile(l.CertFile); err == nil {
		pool.AppendCertsFromPEM(pem)
	} else {
		log.WithError(err).Warn("Could not read the cluster certificate to trust it for the other nodes")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Start registers the node (its cluster API at addr, "" when it has none)
// and starts the heartbeat, the task notes and the peer watchers: the
// supervisor becomes a node of the cluster its database is shared by. A
// SQLite home is one machine: there is nothing to start.
func (c *Cluster) Start(addr string) error {
	if c.store.Dialect() != schema.Postgres {
		return nil
	}
	if err := c.store.RegisterNode(c.ctx, schema.Node{Name: c.node, Addr: advertise(addr), PID: os.Getpid(), Version: c.version}, nodeLease); err != nil {
		return fmt.Errorf("register node %s: %w", c.node, err)
	}
	c.mu.Lock()
	c.on = true
	c.mu.Unlock()
	c.refresh()
	c.wg.Add(2)
	go c.beat()
	go c.watchTasks()
	c.log.WithField("addr", addr).Info("Node joined the cluster")
	return nil
}

// advertise is the address the other nodes dial for a listener at addr:
// an unspecified host (":7070", "0.0.0.0:7070") becomes the host name.
func advertise(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || addr == "" {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, port)
		}
	}
	return addr
}

// Close stops the goroutines and, when the node had joined, ends its lease
// at once: the others show its panes unreachable without waiting 30 s.
func (c *Cluster) Close() {
	c.cancel()
	c.mu.Lock()
	on := c.on
	for name, ch := range c.gone {
		close(ch)
		delete(c.gone, name)
	}
	peers := make([]*peer, 0, len(c.peers))
	for _, p := range c.peers {
		peers = append(peers, p)
	}
	c.mu.Unlock()
	for _, p := range peers {
		p.stop()
	}
	c.wg.Wait()
	if on {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := c.store.LeaveNode(ctx, c.node); err != nil {
			c.log.WithError(err).Warn("Could not end the node's lease")
		}
	}
}

// beat renews the lease and rereads the cluster until close.
func (c *Cluster) beat() {
	defer c.wg.Done()
	t := time.NewTicker(nodeBeat)
	defer t.Stop()
	var last time.Time           // of the last reread
	var pending <-chan time.Time // a nudged reread held back
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.nudged:
			// At most one reread a second; a nudge meanwhile is kept for
			// the end of that second.
			if pending == nil {
				pending = time.After(time.Until(last.Add(time.Second)))
			}
			continue
		case <-pending:
			pending = nil
			last = time.Now()
			c.refresh()
			continue
		case <-t.C:
		}
		last = time.Now()
		if err := c.store.RenewNode(c.ctx, c.node, nodeLease); err != nil && c.ctx.Err() == nil {
			c.log.WithError(err).Error("Could not renew the node's lease")
		}
		c.refresh()
	}
}

// watchTasks wakes the outbox when the database says a task changed: a
// note about this node's worker or master makes it look; every note is
// announced (waiters, the event stream).
func (c *Cluster) watchTasks() {
	defer c.wg.Done()
	err := c.store.WatchTasks(c.ctx, func(n schema.TaskNote) {
		if n.Joined != "" {
			if n.Joined != c.node {
				c.nudge() // follow it now
			}
			return
		}
		if n.ID == 0 { // (re)connected: notes may have been missed
			c.tasks.Kick()
			c.nudge()
			return
		}
		// This node delivers to its workers and tells its masters; a task
		// whose worker has no row (killed) is failed by whichever node
		// looks first. One from a person ("user") is marked told by its
		// worker's node.
		look := n.ToNode == c.node || n.FromNode == c.node || n.ToNode == ""
		c.tasks.Noted(n.ID, look)
	}, func(err error) {
		c.log.WithError(err).Warn("Lost the database's task notes; the outbox looks every 5 s until they are back")
	})
	if err != nil && c.ctx.Err() == nil {
		c.log.WithError(err).Error("Could not listen for the database's task notes")
	}
}

// nudge asks for a reread of the cluster soon; it never blocks.
func (c *Cluster) nudge() {
	select {
	case c.nudged <- struct{}{}:
	default:
	}
}

// refresh rereads the nodes and their panes, and starts or moves the
// peer watchers.
func (c *Cluster) refresh() {
	nodes, err := c.store.Nodes(c.ctx)
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.WithError(err).Warn("Could not read the cluster's nodes")
		}
		return
	}
	rows, err := c.store.ListPanes(c.ctx)
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.WithError(err).Warn("Could not read the cluster's panes")
		}
		return
	}
	byName := map[string]schema.Node{}
	for _, n := range nodes {
		if n.Name != c.node {
			byName[n.Name] = n
		}
	}
	others := map[string]schema.Pane{}
	for _, r := range rows {
		if r.Node != c.node {
			others[r.ID] = r
		}
	}
	c.mu.Lock()
	changed := c.rowsChangedLocked(others)
	c.nodes, c.rows = byName, others
	c.goneLocked(time.Now())
	var stale []*peer
	for name, p := range c.peers {
		// A peer whose lease lapsed while its stream looks up is asked
		// again: a half-open connection can look up for a long time.
		if n, ok := byName[name]; !ok || n.Addr != p.addr || (c.lapsed(n, time.Now()) != "" && p.isUp()) {
			stale = append(stale, p)
			delete(c.peers, name)
		}
	}
	for name, n := range byName {
		if _, ok := c.peers[name]; !ok && n.Addr != "" && c.ctx.Err() == nil {
			p := newPeer(c, n)
			c.peers[name] = p
			p.start()
		}
	}
	c.mu.Unlock()
	for _, p := range stale {
		p.stop()
	}
	for _, id := range changed {
		c.events.PaneChanged(id)
	}
}

// lapses is closed once node name's lease is seen lapsed, the node is gone
// from the table, or its peer watcher finds it not answering (cut): a
// stream forwarded to it ends then.
func (c *Cluster) lapses(name string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.gone[name]
	if !ok {
		ch = make(chan struct{})
		if c.ctx.Err() != nil {
			close(ch)
			return ch
		}
		c.gone[name] = ch
	}
	return ch
}

// cut closes lapses' channel of node name: its peer watcher lost it.
func (c *Cluster) cut(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.gone[name]; ok {
		close(ch)
		delete(c.gone, name)
	}
}

// goneLocked closes lapses' channels of the nodes whose lease lapsed.
func (c *Cluster) goneLocked(now time.Time) {
	for name, ch := range c.gone {
		if n, ok := c.nodes[name]; !ok || c.lapsed(n, now) != "" {
			close(ch)
			delete(c.gone, name)
		}
	}
}

// rowsChangedLocked is the ids whose row appeared, went or moved node.
func (c *Cluster) rowsChangedLocked(next map[string]schema.Pane) []string {
	var out []string
	for id, r := range next {
		if old, ok := c.rows[id]; !ok || old.Node != r.Node {
			out = append(out, id)
		}
	}
	for id := range c.rows {
		if _, ok := next[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// learn adds a pane a peer reported that the last read did not have.
func (c *Cluster) learn(id string) {
	c.mu.Lock()
	_, known := c.rows[id]
	c.mu.Unlock()
	if known {
		return
	}
	r, err := c.store.GetPane(c.ctx, id)
	if err != nil || r.Node == c.node {
		return
	}
	c.mu.Lock()
	c.rows[id] = r
	c.mu.Unlock()
}

// forget drops a pane a peer reported gone.
func (c *Cluster) forget(id string) {
	c.mu.Lock()
	delete(c.rows, id)
	c.mu.Unlock()
}

// remote is another node's pane as this node knows it.
type remote struct {
	row  schema.Pane
	node schema.Node
	peer *peer // nil: the node has no cluster API
}

// Lookup is another node's pane's row, by id, rereading the database when
// the last read did not have it (created a moment ago).
func (c *Cluster) Lookup(ctx context.Context, id string) (schema.Pane, bool) {
	rm, ok := c.lookup(ctx, id)
	return rm.row, ok
}

// lookup finds another node's pane by id, rereading the database when the
// last read did not have it (created a moment ago).
func (c *Cluster) lookup(ctx context.Context, id string) (remote, bool) {
	if r, ok := c.known(id); ok {
		return r, true
	}
	row, err := c.store.GetPane(ctx, id)
	if err != nil || row.Node == c.node {
		return remote{}, false
	}
	c.mu.Lock()
	c.rows[id] = row
	c.mu.Unlock()
	c.refresh() // its node may be new too
	return c.known(id)
}

func (c *Cluster) known(id string) (remote, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	row, ok := c.rows[id]
	if !ok {
		return remote{}, false
	}
	return remote{row: row, node: c.nodes[row.Node], peer: c.peers[row.Node]}, true
}

// NodeNames are the other nodes' names, as last read.
func (c *Cluster) NodeNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Keys(c.nodes))
}

// nodeNamed is another node by name, rereading the nodes when the last
// read did not have it.
func (c *Cluster) nodeNamed(name string) (schema.Node, bool) {
	c.mu.Lock()
	n, ok := c.nodes[name]
	c.mu.Unlock()
	if ok {
		return n, true
	}
	c.refresh()
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok = c.nodes[name]
	return n, ok
}

// ByTitle finds other nodes' panes titled title.
func (c *Cluster) ByTitle(title string) []schema.Pane {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []schema.Pane
	for _, r := range c.rows {
		if r.Title == title {
			out = append(out, r)
		}
	}
	return out
}

// NodeOf is the node of another node's pane this node knows of ("" when
// none does).
func (c *Cluster) NodeOf(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.rows[id]; ok {
		return r.Node
	}
	return ""
}

// Panes is every other node's panes: a node's own word while its peer
// watcher is connected, else its rows from the database, unreachable.
func (c *Cluster) Panes(now time.Time) []api.PaneInfo {
	c.mu.Lock()
	rows := make([]schema.Pane, 0, len(c.rows))
	for _, r := range c.rows {
		rows = append(rows, r)
	}
	nodes, peers := c.nodes, maps.Clone(c.peers) // refresh changes c.peers in place
	c.mu.Unlock()
	var out []api.PaneInfo
	live := map[string]bool{}
	for name, p := range peers {
		if c.lapsed(nodes[name], now) != "" {
			continue // a node that stopped renewing is not trusted however its stream looks
		}
		if infos, ok := p.live(); ok {
			live[name] = true
			out = append(out, infos...)
		}
	}
	for _, r := range rows {
		if !live[r.Node] {
			out = append(out, c.unreachable(r, nodes[r.Node], peers[r.Node], now))
		}
	}
	return out
}

// Info is another node's pane by id.
func (c *Cluster) Info(id string) (api.PaneInfo, bool) {
	r, ok := c.known(id)
	if !ok {
		return api.PaneInfo{}, false
	}
	if r.peer != nil && c.lapsed(r.node, time.Now()) == "" {
		if pi, up, found := r.peer.pane(id); up {
			return pi, found
		}
	}
	return c.unreachable(r.row, r.node, r.peer, time.Now()), true
}

// unreachable is a pane of a node that does not answer, from its row.
func (c *Cluster) unreachable(r schema.Pane, n schema.Node, p *peer, now time.Time) api.PaneInfo {
	pi := c.local.Describe(r, pane.Status{State: pane.Unreachable, Reason: c.why(r.Node, n, p, now), Since: now})
	pi.Node = r.Node
	return pi
}

// why says why node name's panes cannot be seen.
func (c *Cluster) why(name string, n schema.Node, p *peer, now time.Time) string {
	if n.Name == "" {
		return fmt.Sprintf("node %s has not registered (no row in the nodes table)", name)
	}
	if why := c.lapsed(n, now); why != "" {
		return fmt.Sprintf("node %s's %s", name, why)
	}
	if n.Addr == "" || p == nil {
		return fmt.Sprintf("node %s has no cluster API to ask (its supervisor runs without --listen)", name)
	}
	return p.why()
}

// lapsed says how a node's lease lapsed ("" while it holds).
func (c *Cluster) lapsed(n schema.Node, now time.Time) string {
	until := schema.ParseTime(n.LeaseUntil)
	if !now.After(until) {
		return ""
	}
	return fmt.Sprintf("lease lapsed %s ago (its last heartbeat was at %s)",
		now.Sub(until).Round(time.Second), schema.ParseTime(n.HeartbeatAt).Local().Format(time.TimeOnly))
}

// transport is the round tripper to a node's cluster API, one per address
// and kind: a plain call's fails when the answer's head has not come
// within api.RemoteFirstByte; a stream's or long poll's waits.
func (c *Cluster) transport(addr string, plain bool) (http.RoundTripper, string) {
	key, first := addr+" stream", time.Duration(0)
	if plain {
		key, first = addr, api.RemoteFirstByte
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.trips[key]; ok {
		return t.rt, t.scheme
	}
	rt, scheme := api.RemoteTransportWithin(addr, c.token, c.tlsConf, first)
	c.trips[key] = trip{rt, scheme}
	return rt, scheme
}

type trip struct {
	rt     http.RoundTripper
	scheme string
}

// Nodes is the cluster's nodes, this one (with local panes of its own)
// first, then by name. A single machine's supervisor (SQLite) is the one
// node.
func (c *Cluster) Nodes(ctx context.Context, local int) ([]api.NodeInfo, error) {
	self := api.NodeInfo{Name: c.node, Self: true, State: api.NodeUp, PID: os.Getpid(), Version: c.version, Panes: local}
	if c.store.Dialect() != schema.Postgres {
		return []api.NodeInfo{self}, nil
	}
	rows, err := c.store.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	c.mu.Lock()
	panes := map[string]int{}
	for _, r := range c.rows {
		panes[r.Node]++
	}
	peers := maps.Clone(c.peers)
	c.mu.Unlock()
	out := []api.NodeInfo{self}
	for _, n := range rows {
		ni := api.NodeInfo{Name: n.Name, Addr: n.Addr, PID: n.PID, Version: n.Version, StartedAt: schema.ParseTime(n.StartedAt),
			HeartbeatAt: schema.ParseTime(n.HeartbeatAt), LeaseUntil: schema.ParseTime(n.LeaseUntil), Panes: panes[n.Name], State: api.NodeUp}
		lapsed := c.lapsed(n, now)
		switch {
		case n.Name == c.node:
			ni.Self, ni.Panes = true, self.Panes
			out[0] = ni
			continue
		case lapsed != "":
			ni.State, ni.Reason = api.NodeLapsed, lapsed
		case peers[n.Name] == nil || !peers[n.Name].isUp():
			ni.State, ni.Reason = api.NodeUnreachable, c.why(n.Name, n, peers[n.Name], now)
		}
		out = append(out, ni)
	}
	return out, nil
}
