package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway/modelapi"
)

// DefaultMaxBodiesInFlight bounds the request bytes the gateway holds at
// once, across requests: a request waits for room before its body is read
// (Config.MaxBodiesInFlight).
const DefaultMaxBodiesInFlight = 256 << 20

// DefaultBodyTimeout bounds how long a request's body may take to arrive
// (Config.BodyTimeout): a body trickled a byte at a time would hold a
// connection and its room.
const DefaultBodyTimeout = 60 * time.Second

// parseCost is how many times its length a body weighs while the gateway
// reads what it needs from it: the body, the decoder's copies of its
// messages, and the text of the last one.
const parseCost = 3

// room is a request's share of the body bytes in flight.
type room struct {
	g    *Gateway
	held int64
}

// shrink gives back what the request holds beyond n.
func (r *room) shrink(n int64) {
	if n < r.held {
		r.g.bodies.Release(r.held - n)
		r.held = n
	}
}

// release gives back all of it.
func (r *room) release() { r.shrink(0) }

// readBody reads the request body within the body timeout, after taking
// room for it in the bytes in flight: parseCost times its length (or
// maxBody when it does not say), at most all the room there is. What it
// did not use is given back once read; the caller shrinks the room to
// the body once it is inspected, and releases it at the exchange's end.
func (x *exchange) readBody() (body []byte, r *room, err error) {
	n := int64(maxBody)
	if x.r.ContentLength >= 0 && x.r.ContentLength < n {
		n = x.r.ContentLength
	}
	limit := x.g.cfg.BodyTimeout
	ctx, cancel := context.WithTimeout(x.r.Context(), limit)
	defer cancel()
	r = &room{g: x.g, held: min(n*parseCost, x.g.cfg.MaxBodiesInFlight)}
	if err := x.g.bodies.Acquire(ctx, r.held); err != nil {
		r.held = 0
		return nil, r, fmt.Errorf("no room for the body within %s (other requests hold %d MiB)", limit, x.g.cfg.MaxBodiesInFlight>>20)
	}
	rc := http.NewResponseController(x.w)
	_ = rc.SetReadDeadline(time.Now().Add(limit))
	buf := bytes.NewBuffer(make([]byte, 0, n+1))
	_, err = buf.ReadFrom(http.MaxBytesReader(x.w, x.r.Body, maxBody))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The deadline stays: the server drops the rest of the body under
		// it, then hangs up.
		return nil, r, fmt.Errorf("the body did not arrive within %s", limit)
	case err != nil:
		return nil, r, err
	}
	_ = rc.SetReadDeadline(time.Time{}) // a stream's answer is not cut
	r.shrink(int64(buf.Len()) * parseCost)
	return buf.Bytes(), r, nil
}

// clipPath is a request path for a log line: at most 200 bytes.
func clipPath(p string) string {
	if len(p) > 200 {
		return p[:200] + "…"
	}
	return p
}

// maxBody bounds a request body the gateway reads; far above any real
// agent request.
const maxBody = 64 << 20

// route is one served path.
type route struct {
	api  API
	path string // appended to the upstream base URL ("": the client's path, Gemini's)
	aux  string // the aux kind every request on this route has, or ""
}

// routes maps a request path, without any /v1 prefix, to its route.
var routes = map[string]route{
	"/messages":              {Anthropic, "/v1/messages", ""},
	"/messages/count_tokens": {Anthropic, "/v1/messages/count_tokens", "count_tokens"},
	"/chat/completions":      {Chat, "/chat/completions", ""},
	"/responses":             {Responses, "/responses", ""},
	"/responses/compact":     {Responses, "/responses/compact", "compact"},
	// Gemini: /v1beta/models/<model>:<method>, its model in the path.
	"/models:generateContent":       {Gemini, "", ""},
	"/models:streamGenerateContent": {Gemini, "", ""},
	"/models:countTokens":           {Gemini, "", "count_tokens"},
}

// exchange is one request going through the gateway.
type exchange struct {
	g     *Gateway
	w     http.ResponseWriter
	r     *http.Request
	route route
	start time.Time
	call  Call
	// ans is how a main-loop request ended, told to Activity; complete
	// once its last event (or its whole plain body) went by.
	ans      Answer
	complete bool
	// ask is what the request may cost, for the budget.
	ask Ask
}

// ServeHTTP routes, authenticates, forwards and meters one request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.enter() {
		http.Error(w, "cicy gateway: shutting down", http.StatusServiceUnavailable)
		return
	}
	defer g.inflight.Done()

	key := modelapi.Route(r.URL.Path)
	rt, ok := routes[key]
	switch {
	case !ok && key == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet):
		// The preflight some Claude Code versions send.
		w.WriteHeader(http.StatusOK)
		return
	case !ok:
		modelapi.WriteError(w, string(guessAPI(r)), http.StatusNotFound, fmt.Sprintf("cicy gateway: no route for %s %s", r.Method, r.URL.Path))
		return
	case r.Method != http.MethodPost:
		modelapi.WriteError(w, string(rt.api), http.StatusMethodNotAllowed, fmt.Sprintf("cicy gateway: %s needs POST", r.URL.Path))
		return
	}
	x := &exchange{g: g, w: w, r: r, route: rt, start: time.Now()}
	x.call.API, x.call.Aux = rt.api, rt.aux
	x.serve()
}

// guessAPI is the API whose error shape suits a request that matched no
// route: Anthropic's if it carries Anthropic's headers, Google's if it
// carries a Gemini key, else OpenAI's.
func guessAPI(r *http.Request) API {
	switch {
	case r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != "":
		return Anthropic
	case r.Header.Get("x-goog-api-key") != "" || r.URL.Query().Has("key"):
		return Gemini
	}
	return Chat
}

// serve runs the exchange after routing.
func (x *exchange) serve() {
	pane, reason := x.pane()
	if reason != "" {
		x.g.refused.Log(x.g.log, "local", x.r.URL.Path, "refused a request: "+reason)
		modelapi.WriteError(x.w, string(x.route.api), http.StatusUnauthorized, "cicy gateway: "+reason)
		return
	}
	x.call.Pane = pane
	if !x.g.cfg.Panes.Speaks(pane, x.route.api) {
		x.g.log.WithFields(map[string]any{"pane": pane, "path": clipPath(x.r.URL.Path)}).Info("refused a request: its pane does not speak this API")
		modelapi.WriteError(x.w, string(x.route.api), http.StatusForbidden, fmt.Sprintf("cicy gateway: the token of %s is not for %s (%s): its agent speaks another API", pane, x.r.URL.Path, x.route.api))
		return
	}
	body, room, err := x.readBody()
	defer room.release()
	if err != nil {
		modelapi.WriteError(x.w, string(x.route.api), http.StatusBadRequest, "cicy gateway: reading the request body: "+err.Error())
		return
	}
	body, inject := x.inspect(body)
	room.shrink(int64(len(body))) // what it read of the body is garbage now
	release, refused := x.overBudget(len(body))
	if refused {
		return
	}
	defer release() // after the usage is recorded
	if act := x.g.cfg.Activity; x.call.Aux == "" && act != nil {
		act.RequestStarted(pane)
		defer func() { act.RequestEnded(pane, x.answer()) }()
	}
	x.forward(body, inject)
	x.call.Latency = time.Since(x.start)
	x.record()
}

// answer is how the exchange ended, for Activity.
func (x *exchange) answer() Answer {
	a := x.ans
	a.Started, a.Ended, a.Status = x.start, time.Now(), x.call.Status
	switch {
	case strings.HasPrefix(x.call.Err, "client went away") && x.complete && a.Error == "":
		// The agent had the whole answer and hung up before the upstream
		// closed the stream (Codex does): answered in full.
	case strings.HasPrefix(x.call.Err, "client went away"):
		a.Cancelled, a.Error = true, "" // the agent's own doing
	case strings.HasPrefix(x.call.Err, "upstream broke off"), x.call.Err != "" && a.Error == "":
		a.Error = "the " + x.call.Err
	}
	return a
}

// overBudget answers, without forwarding it, a request of a pane whose
// budget is reached, and reports whether it did. Nothing was spent, so
// nothing is recorded; the refusal is logged. The status is one the CLIs
// show without retrying: 402 (Anthropic's billing_error) for Anthropic
// Messages, 400 for the OpenAI APIs (Codex retries a 402). Token counting
// costs nothing and always passes.
func (x *exchange) overBudget(bodyBytes int) (release func(), refused bool) {
	if x.g.cfg.Budget == nil || x.route.aux == "count_tokens" {
		return func() {}, false
	}
	ask := x.ask
	ask.API, ask.Model, ask.BodyBytes, ask.Choices = x.route.api, x.call.Model, bodyBytes, max(ask.Choices, 1)
	release, why := x.g.cfg.Budget.Reserve(x.call.Pane, ask)
	if why == "" {
		return release, false
	}
	x.g.log.WithFields(map[string]any{"pane": x.call.Pane, "api": x.call.API, "model": x.call.Model, "aux": x.call.Aux}).
		Info("refused a request: the budget is reached")
	code := http.StatusBadRequest
	if x.route.api == Anthropic {
		code = http.StatusPaymentRequired
	}
	x.w.Header().Set("X-Should-Retry", "false") // the Anthropic and OpenAI SDKs heed it
	modelapi.WriteError(x.w, string(x.route.api), code, why)
	if x.call.Aux == "" {
		x.g.cfg.Budget.Refused(x.call.Pane, why)
	}
	return nil, true
}

// pane is the pane whose token the request carries, or the reason it is
// refused. The reason never quotes the token.
func (x *exchange) pane() (id, reason string) {
	tok := tokenOf(x.r)
	if tok == "" {
		return "", "no pane token (send it as x-api-key, Authorization: Bearer, x-goog-api-key or ?key=)"
	}
	id, ok := x.g.cfg.Panes.Pane(tok)
	if !ok {
		return "", "unknown pane token"
	}
	return id, ""
}

// tokenOf is the key a request carries: x-api-key, Authorization:
// Bearer, or Gemini's x-goog-api-key or ?key=.
func tokenOf(r *http.Request) string {
	if tok := r.Header.Get("x-api-key"); tok != "" {
		return tok
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	if tok := r.Header.Get("x-goog-api-key"); tok != "" {
		return tok
	}
	return r.URL.Query().Get("key")
}

// inspect reads what the gateway needs from the request body: the model,
// whether it streams, its aux kind. For a streaming Chat Completions
// request without usage it returns the body with include_usage added and
// inject set. A body in a Content-Encoding is forwarded as is, unread.
func (x *exchange) inspect(body []byte) (_ []byte, inject bool) {
	if enc := x.r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		x.ask.Unread = fmt.Sprintf("its body is in Content-Encoding %q", clip.Bytes(enc, 40))
		return body, false
	}
	req, err := parseRequest(body)
	if err != nil {
		x.g.log.WithField("pane", x.call.Pane).Debugf("request body not read: %v", err)
		return body, false
	}
	x.call.Model, x.call.Stream = req.Model, req.Stream
	if x.route.api == Gemini { // the model and the streaming are in the path
		x.call.Model = modelapi.GeminiModel(x.r.URL.Path)
		x.call.Stream = modelapi.Route(x.r.URL.Path) == "/models:streamGenerateContent"
	}
	x.call.Asked = x.call.Model
	x.ask.MaxTokens, x.ask.Choices = req.maxOutput(), req.choices()
	if x.call.Aux == "" {
		x.call.Aux = auxKind(x.r.Header, req)
	}
	if x.route.api != Chat || !req.Stream || req.includeUsage() {
		return body, false
	}
	out, err := withIncludeUsage(body)
	if err != nil {
		x.g.log.WithField("pane", x.call.Pane).Debugf("include_usage not added: %v", err)
		return body, false
	}
	return out, true
}

// forward sends the request upstream and relays the answer.
func (x *exchange) forward(body []byte, inject bool) {
	ctx := x.r.Context()
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, x.upstreamURL(), bytes.NewReader(body))
	if err != nil {
		x.fail(http.StatusBadGateway, "cicy gateway: bad upstream URL: "+err.Error())
		return
	}
	x.upstreamHeader(up.Header)
	resp, err := x.g.rt.RoundTrip(up)
	if err != nil {
		if ctx.Err() != nil {
			x.call.Err = "client went away before the upstream answered"
			return
		}
		x.fail(http.StatusBadGateway, "cicy gateway: upstream unreachable: "+plainErr(err))
		x.ans.Error = "the upstream could not be reached: " + plainErr(err)
		return
	}
	defer resp.Body.Close()
	x.call.Status = resp.StatusCode
	x.relay(resp, inject)
}

// fail answers the client an error of the gateway's own.
func (x *exchange) fail(code int, msg string) {
	x.call.Status, x.call.Err = code, msg
	x.g.log.WithFields(map[string]any{"pane": x.call.Pane, "api": x.call.API}).Warn(msg)
	modelapi.WriteError(x.w, string(x.route.api), code, msg)
}

// plainErr is err without the request URL a *url.Error adds.
func plainErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// upstreamURL is the URL the request goes to: the API's base URL, the
// route's path (a Gemini request's own path) and the client's query
// (Claude Code's ?beta=true, Gemini's ?alt=sse) less any ?key=, the pane
// token.
func (x *exchange) upstreamURL() string {
	base, path := x.g.cfg.Upstreams.OpenAI, x.route.path
	switch x.route.api {
	case Anthropic:
		base = x.g.cfg.Upstreams.Anthropic
	case Gemini:
		base, path = x.g.cfg.Upstreams.Gemini, x.r.URL.EscapedPath()
	}
	u := base + path
	q := x.r.URL.Query()
	if q.Has("key") {
		q.Del("key")
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
	} else if x.r.URL.RawQuery != "" {
		u += "?" + x.r.URL.RawQuery
	}
	return u
}

// record hands the call to the recorder, even if the client is gone.
func (x *exchange) record() {
	c := x.call
	log := x.g.log.WithFields(map[string]any{
		"pane": c.Pane, "api": c.API, "model": c.Model, "aux": c.Aux, "status": c.Status,
		"in": c.InputTokens, "out": c.OutputTokens, "cache_read": c.CacheReadTokens,
		"cache_write": c.CacheCreationTokens, "ms": c.Latency.Milliseconds(),
	})
	if c.Err != "" {
		log = log.WithField("error", c.Err)
	}
	log.Debug("model call")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), 10*time.Second)
	defer cancel()
	if err := x.g.cfg.Usage.Record(ctx, c); err != nil {
		log.WithError(err).Warn("usage not recorded")
	}
}
