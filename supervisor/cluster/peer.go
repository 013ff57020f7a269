package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
)

// peer watches another node's panes through its event stream (its own
// panes only). Its goroutine owns the connection; the panes it last heard
// of are read under mu by ls, status and the event stream.
type peer struct {
	c      *Cluster
	name   string
	addr   string
	client *api.Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	up    bool
	err   string // why it is not up
	home  string // its home, for the attach hint
	infos map[string]api.PaneInfo
}

// Backoff between a peer's connection attempts.
const (
	peerRetryMin = 200 * time.Millisecond
	peerRetryMax = 5 * time.Second
)

// While its stream is up, a peer asks its node's health every
// peerProbeEvery; a node that has not answered within peerProbeWithin is
// down: a stopped process (SIGSTOP), a hung supervisor or a half-open
// connection keeps a stream open and silent, and would otherwise look up
// until its lease lapsed. A node that stops answering is seen so within
// peerProbeEvery+peerProbeWithin (7 s), by each node for itself.
const (
	peerProbeEvery  = 2 * time.Second
	peerProbeWithin = 5 * time.Second
)

func newPeer(c *Cluster, n schema.Node) *peer {
	ctx, cancel := context.WithCancel(c.ctx)
	return &peer{c: c, name: n.Name, addr: n.Addr, client: api.NewRemoteClient(n.Addr, c.token, c.tlsConf),
		ctx: ctx, cancel: cancel, done: make(chan struct{}), err: "connecting to node " + n.Name + " at " + n.Addr,
		infos: map[string]api.PaneInfo{}}
}

func (p *peer) start() { go p.run() }

func (p *peer) stop() {
	p.cancel()
	<-p.done
}

// run connects, follows the stream, and on its end tries again after a
// backoff, until stop.
func (p *peer) run() {
	defer close(p.done)
	wait := peerRetryMin
	for {
		err := p.follow()
		if p.ctx.Err() != nil {
			return
		}
		p.down(err)
		p.c.nudge() // its node may have restarted at another address
		if err == nil || errors.Is(err, errFollowed) {
			wait = peerRetryMin // it was up: try again soon
		}
		t := time.NewTimer(wait)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(wait*2, peerRetryMax)
	}
}

// errFollowed marks the end of a stream that had delivered its snapshot.
var errFollowed = errors.New("the stream ended")

// follow reads one connection's stream until it ends.
func (p *peer) follow() error {
	h, err := p.ping(p.ctx) // a stopped node accepts and never answers
	if err != nil {
		return err
	}
	sctx, cut := context.WithCancelCause(p.ctx)
	defer cut(nil)
	st, err := p.client.NodeEvents(sctx)
	if err != nil {
		return err
	}
	defer st.Close()
	p.mu.Lock()
	p.home = h.Home
	p.mu.Unlock()
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		p.probe(sctx, cut)
	}()
	defer func() {
		cut(nil)
		<-probed
	}()
	for first := true; ; first = false {
		ev, err := st.Next()
		if err != nil {
			if sctx.Err() != nil && p.ctx.Err() == nil {
				err = context.Cause(sctx) // the prober ended it
			}
			if first {
				return err
			}
			return fmt.Errorf("%w: %v", errFollowed, err)
		}
		p.apply(ev)
	}
}

// errProbe is a health probe the node did not answer in time.
var errProbe = fmt.Errorf("it did not answer a health probe within %s (its process stopped, hung, or cut off)", peerProbeWithin)

// probe asks the node's health every peerProbeEvery until ctx ends, and
// ends the stream (cut) at the first probe not answered within
// peerProbeWithin.
func (p *peer) probe(ctx context.Context, cut context.CancelCauseFunc) {
	t := time.NewTicker(peerProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := p.ping(ctx); err != nil && ctx.Err() == nil {
			cut(err)
			return
		}
	}
}

// ping asks the node's health within peerProbeWithin; its error says why
// the node does not answer (errProbe: it did not in time).
func (p *peer) ping(ctx context.Context) (api.Health, error) {
	pctx, cancel := context.WithTimeout(ctx, peerProbeWithin)
	defer cancel()
	h, err := p.client.Probe(pctx)
	switch {
	case err == nil:
		return h, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return h, errProbe
	}
	return h, err
}

// apply takes in one event and publishes what changed.
func (p *peer) apply(ev api.Event) {
	var changed []string
	p.mu.Lock()
	switch ev.Type {
	case "snapshot":
		old := p.infos
		p.infos = map[string]api.PaneInfo{}
		for _, pi := range ev.Snapshot.Panes {
			pi.Node = p.name
			p.infos[pi.ID] = pi
		}
		p.up, p.err = true, ""
		changed = slices.Collect(maps.Keys(old))
		for id := range p.infos {
			if _, ok := old[id]; !ok {
				changed = append(changed, id)
			}
		}
	case "pane":
		pi := *ev.Pane
		pi.Node = p.name
		p.infos[pi.ID] = pi
		changed = []string{pi.ID}
	case "state":
		if pi, ok := p.infos[ev.ID]; ok {
			pi.State, pi.Reason, pi.Since, pi.PID, pi.ExitCode = ev.State.State, ev.State.Reason, ev.State.Since, ev.State.PID, ev.State.ExitCode
			p.infos[ev.ID] = pi
			changed = []string{ev.ID}
		}
	case "pane_removed":
		// Only a removal of a pane it had counts: a node's stream says
		// "removed" of ids it does not know, and this node's stream of
		// ids it does not know — passed on, they would go round.
		if _, ok := p.infos[ev.ID]; ok {
			delete(p.infos, ev.ID)
			changed = []string{ev.ID}
		}
	}
	p.mu.Unlock()
	for _, id := range changed {
		switch ev.Type {
		case "pane_removed":
			p.c.forget(id)
		case "pane", "snapshot":
			p.c.learn(id)
		}
		if ev.Type == "state" {
			p.c.events.StateChanged(id)
		} else {
			p.c.events.PaneChanged(id)
		}
	}
}

// down records why the peer is not up and republishes its panes (now
// shown from the database, unreachable).
func (p *peer) down(err error) {
	why := fmt.Sprintf("node %s does not answer at %s", p.name, p.addr)
	if err != nil {
		why += ": " + err.Error()
	}
	p.mu.Lock()
	was := p.up
	p.up, p.err = false, why
	ids := slices.Collect(maps.Keys(p.infos))
	p.mu.Unlock()
	p.c.cut(p.name) // what was forwarded to it waits no longer
	if was {
		p.c.log.WithField("peer", p.name).Warn("Lost the other node: " + why)
	}
	for _, id := range ids {
		p.c.events.PaneChanged(id)
	}
}

// live is the peer's panes when it is up.
func (p *peer) live() ([]api.PaneInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.up {
		return nil, false
	}
	return slices.Collect(maps.Values(p.infos)), true
}

// pane is one of the peer's panes: up says whether the peer answers,
// found whether it has the pane.
func (p *peer) pane(id string) (pi api.PaneInfo, up, found bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pi, found = p.infos[id]
	return pi, p.up, found
}

func (p *peer) isUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up
}

func (p *peer) why() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *peer) homeDir() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.home
}
