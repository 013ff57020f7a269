package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/httpapi"
)

// A request about another node's pane — /api/panes/{id}/… other than a
// hook, and /api/budgets/{id} — is forwarded to that node's supervisor over its cluster API, with
// the cluster secret; its answer (a stream too) comes back as it is. A
// node that does not answer is an error at once (its lease lapsed, or it
// refuses the connection), after the dial timeout, or after the first
// byte's bound (a plain call); a stream or long poll ends when the node's
// node is seen lost (its peer watcher's health probe went unanswered, or
// its lease lapsed) — never a hang. A forwarded request is never
// forwarded again.
//
// Each forwarded request carries its deadline (api.DeadlineHeader): the
// time after which this node no longer waits for it to begin, the first
// byte's bound less forwardMargin for the answer's way back. The
// receiving node drops a request it reads after that (dropLate): a
// request that sat in the socket of a node whose process was stopped is
// not acted on once the node continues, since its caller was told it
// failed. A call that acts and waits (send --wait) is given up no sooner
// than its deadline, so that what was given up is dropped.

// forwardedHeader marks a forwarded request with the node it came from.
const forwardedHeader = "X-Cicy-Forwarded-By"

// forwardMargin is kept between the deadline a forwarded request carries
// and the moment this node gives up on its answer: the time for the
// answer of a call begun just before its deadline to come back.
const forwardMargin = 2 * time.Second

// Forward wraps the API (next, this node's handler): requests about
// other nodes' panes go to them, the others to next.
func (c *Cluster) Forward(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/api/panes" {
			c.createOn(w, r, next)
			return
		}
		id, rest, ok := paneRoute(r)
		if !ok || c.local.Has(id) {
			next.ServeHTTP(w, r)
			return
		}
		rm, ok := c.lookup(r.Context(), id)
		if !ok {
			next.ServeHTTP(w, r) // no such pane: the handler says so
			return
		}
		if from := r.Header.Get(forwardedHeader); from != "" {
			httpapi.WriteErr(w, api.Failedf("pane %s is on node %s, not on node %s (a request forwarded by node %s)", rm.row.ID, rm.row.Node, c.node, from))
			return
		}
		if rest == "attach" {
			httpapi.WriteErr(w, api.Failedf("%s", c.attachHint(rm)))
			return
		}
		c.proxy(w, r, rm.node, "pane "+rm.row.ID+" (on node "+rm.row.Node+")")
	})
}

// createOn passes a create naming another node (its body's "node") to
// that node's supervisor.
func (c *Cluster) createOn(w http.ResponseWriter, r *http.Request, next http.Handler) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
	if err != nil {
		httpapi.WriteErr(w, api.Usagef("bad request body: %v", err))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Node string `json:"node"`
	}
	_ = json.Unmarshal(body, &req) // a bad body is the handler's to refuse
	if req.Node == "" || req.Node == c.node {
		next.ServeHTTP(w, r)
		return
	}
	if from := r.Header.Get(forwardedHeader); from != "" {
		httpapi.WriteErr(w, api.Failedf("node %s was asked by node %s to create a pane on node %s", c.node, from, req.Node))
		return
	}
	n, ok := c.nodeNamed(req.Node)
	if !ok {
		httpapi.WriteErr(w, api.Usagef("--node %s: no such node (see 'cicy-agent nodes')", req.Node))
		return
	}
	c.proxy(w, r, n, "a new pane for node "+n.Name)
}

// paneRoute is the pane id and what follows it in a pane's API path
// (/api/panes/{id}/{rest…}); false for other paths and for the pane
// routes that are always this node's (a hook comes from its own pane).
func paneRoute(r *http.Request) (id, rest string, ok bool) {
	p, found := strings.CutPrefix(r.URL.Path, "/api/panes/")
	if !found {
		// A pane's budget is kept by its node too; a team's is not a pane.
		if p, found = strings.CutPrefix(r.URL.Path, "/api/budgets/"); !found || !strings.HasPrefix(p, "w-") {
			return "", "", false
		}
	}
	if p == "" {
		return "", "", false
	}
	id, rest, _ = strings.Cut(p, "/")
	if rest == "hook" {
		return "", "", false
	}
	if pid, err := api.ParsePaneID(id); err == nil {
		id = pid
	}
	return id, rest, true
}

// attachHint is the error for attaching here to another node's pane: the
// one command that does it on that node.
func (c *Cluster) attachHint(rm remote) string {
	cmd := "cicy-agent attach " + rm.row.ID
	if rm.peer != nil {
		if h := rm.peer.homeDir(); h != "" {
			cmd = "cicy-agent --home " + shellQuote(h) + " attach " + rm.row.ID
		}
	}
	return fmt.Sprintf("pane %s runs on node %s; a terminal attaches on its own machine: %s", rm.row.ID, rm.row.Node, cmd)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// proxy forwards r, about what, to node n's supervisor, or says why it
// cannot.
func (c *Cluster) proxy(w http.ResponseWriter, r *http.Request, n schema.Node, what string) {
	if why := c.cannotReach(n, time.Now()); why != "" {
		httpapi.WriteErr(w, api.Failedf("%s: node %s cannot be reached: %s", what, n.Name, why))
		return
	}
	plain := plainCall(r)
	rt, scheme := c.transport(n.Addr, plain)
	deadline := time.Now().Add(api.RemoteFirstByte - forwardMargin)
	if d, ok := callerDeadline(r); ok && d.Before(deadline) {
		deadline = d // its own caller stops waiting sooner
	}
	var lost atomic.Bool // ended because its node was lost
	if !plain {
		// A stream or long poll ends when the node is lost: a node whose
		// process is stopped holds its connections open and silent. One
		// that acts (a send that waits) ends no sooner than its deadline:
		// then the node, if it reads it late, drops it.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		gone := c.lapses(n.Name)
		acts := r.Method != http.MethodGet
		go func() {
			select {
			case <-gone:
			case <-ctx.Done():
				return
			}
			if wait := time.Until(deadline); acts && wait > 0 {
				t := time.NewTimer(wait)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
			}
			lost.Store(true)
			cancel()
		}()
		r = r.WithContext(ctx)
	}
	target := &url.URL{Scheme: scheme, Host: n.Addr}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = "cicy"
			pr.Out.Header.Set(forwardedHeader, c.node)
			pr.Out.Header.Set(api.DeadlineHeader, deadline.UTC().Format(time.RFC3339Nano))
			pr.Out.Header.Del("Authorization") // the transport sets the cluster's
		},
		Transport:     rt,
		FlushInterval: -1, // streams (preview, events) pass line by line
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if lost.Load() {
				httpapi.WriteErr(w, api.Failedf("%s: node %s was lost while the request was under way: %s", what, n.Name, c.whyLost(n)))
				return
			}
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				return // the client went away
			}
			c.log.WithError(err).WithField("peer", n.Name).Warn("Could not forward a request to the other node")
			httpapi.WriteErr(w, api.Failedf("%s: node %s does not answer at %s: %v", what, n.Name, n.Addr, err))
		},
	}
	rp.ServeHTTP(w, r)
}

// whyLost says why node n was lost: its lease, or its peer watcher's word.
func (c *Cluster) whyLost(n schema.Node) string {
	if why := c.lapsed(n, time.Now()); why != "" {
		return "its " + why
	}
	c.mu.Lock()
	p := c.peers[n.Name]
	c.mu.Unlock()
	if p == nil {
		return "its peer watcher stopped"
	}
	return p.why()
}

// callerDeadline is the deadline a request carries (api.DeadlineHeader).
func callerDeadline(r *http.Request) (time.Time, bool) {
	v := r.Header.Get(api.DeadlineHeader)
	if v == "" {
		return time.Time{}, false
	}
	d, err := time.Parse(time.RFC3339Nano, v)
	return d, err == nil
}

// DropLate refuses a request read after its caller stopped waiting for it
// (api.DeadlineHeader), before anything acts on it, and hands a later
// check (TooLate) the deadline of one in time.
func DropLate(next http.Handler, log *logrus.Entry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get(api.DeadlineHeader)
		if v == "" {
			next.ServeHTTP(w, r)
			return
		}
		d, ok := callerDeadline(r)
		if !ok {
			httpapi.WriteErr(w, api.Usagef("the %s header %q is not a time in RFC 3339 form", api.DeadlineHeader, v))
			return
		}
		if err := lateErr(d, time.Now()); err != nil {
			log.WithFields(logrus.Fields{"method": r.Method, "path": r.URL.Path, "from": r.Header.Get(forwardedHeader), "deadline": v}).
				Warn("Dropped a request read after its caller had stopped waiting")
			httpapi.WriteErr(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), beginByKey{}, d)))
	})
}

type beginByKey struct{}

// TooLate says, just before an action, whether the caller of the request
// behind ctx has stopped waiting for it (nil: act, or no deadline given).
func TooLate(ctx context.Context) error {
	d, ok := ctx.Value(beginByKey{}).(time.Time)
	if !ok {
		return nil
	}
	if err := lateErr(d, time.Now()); err != nil {
		return err
	}
	return nil
}

func lateErr(deadline, now time.Time) *api.Error {
	if !now.After(deadline) {
		return nil
	}
	return api.Failedf("nothing was done: this request was read %s after its caller stopped waiting for it (at %s) — a node that was stopped, or the machines' clocks differ (keep them in sync with NTP)",
		now.Sub(deadline).Round(time.Millisecond), deadline.Local().Format("15:04:05.000"))
}

// cannotReach says why a node cannot be asked now ("" when it can).
func (c *Cluster) cannotReach(n schema.Node, now time.Time) string {
	switch {
	case n.Name == "":
		return "it has not registered"
	case n.Addr == "":
		return "its supervisor runs without --listen, so it has no cluster API"
	case c.token == "":
		return "this supervisor has no cluster secret (CICY_CLUSTER_TOKEN or --cluster-token-file)"
	}
	return c.lapsed(n, now)
}

// plainCall reports whether r answers at once: not a stream (events,
// preview, attach) and not a long poll (a wait, a send or dispatch that
// waits for its end). A plain call to a node that does not answer fails
// after api.RemoteFirstByte.
func plainCall(r *http.Request) bool {
	p := r.URL.Path
	for _, long := range []string{"/events", "/preview", "/attach", "/wait"} {
		if strings.HasSuffix(p, long) {
			return false
		}
	}
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	// A send or dispatch that waits says so in its body: read it, and put
	// it back for the forwarding.
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, 4<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var w struct {
		Wait bool `json:"wait"`
	}
	return json.Unmarshal(body, &w) != nil || !w.Wait
}
