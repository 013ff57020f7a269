package fakellm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// The model APIs, as [Query.API] names them.
const (
	APIAnthropic = "anthropic" // Anthropic Messages
	APIChat      = "chat"      // OpenAI Chat Completions
	APIResponses = "responses" // OpenAI Responses
)

// Model decides the answers of a [Handler] in place of the directives: a
// program standing in for an LLM, such as cicy's scripted model.
type Model interface {
	// Answer is the reply to q: its text blocks, joined by blank lines,
	// and its tool_use blocks, in the API's own shape, with its stop
	// reason (Anthropic's terms) and usage (Anthropic's additive shape).
	// A *wire.APIError is answered with its status, type and message in
	// the API's error shape; any other error as a 500.
	Answer(ctx context.Context, q *Query) (*wire.Response, error)
	// CountTokens is the input_tokens answer to POST
	// /v1/messages/count_tokens.
	CountTokens(q *Query) int64
}

// Query is one model request, as a [Model] sees it.
type Query struct {
	API    string      // APIAnthropic, APIChat or APIResponses
	Header http.Header // the request's headers
	// Request is the request in the Messages API's shape, the shape of
	// cicy's own requests: system text, tools, and messages of text,
	// tool_use and tool_result blocks (cache_control kept). The OpenAI
	// APIs are mapped onto it: system and developer messages and the
	// Responses instructions become system blocks, an assistant's tool
	// calls tool_use blocks whose id is the call's id, and tool outputs
	// the tool_result blocks of a user message. Parts of other kinds
	// (images, reasoning) are left out.
	Request *wire.Request

	turn turn
}

// ShellCall is a call of the shell tool the request offers (Claude Code's
// Bash, Codex's exec_command or shell, opencode's bash) that runs command,
// with the arguments in that tool's own shape, as the [[shell=CMD]]
// directive makes, and description as the description the tool may
// require; ok is false when the request offers none.
func (q *Query) ShellCall(command, description string) (name string, input map[string]any, ok bool) {
	c := q.turn.shellCall(command, description)
	if c == nil {
		return "", nil, false
	}
	return c.name, c.args, true
}

// Handler serves the model APIs listed in the package doc, answering from
// a [Model], or from the directives when it has none. Unlike [Server] it
// records nothing. It is safe for concurrent use.
type Handler struct {
	name  string // starts the handler's own error messages
	model Model  // nil: the directives
	ids   atomic.Uint64
	watch *watcher // a Server's truth; nil: none kept
}

// NewHandler returns a handler whose answers come from m; name (e.g.
// "cicy scripted model") starts the error messages of its own, such as a
// route it does not serve.
func NewHandler(name string, m Model) *Handler { return &Handler{name: name, model: m} }

// who starts the handler's own error messages.
func (h *Handler) who() string {
	if h.name == "" {
		return "fake-llm"
	}
	return h.name
}

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	h.serve(w, r, body, err)
}

// serve routes a request whose body has been read.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, body []byte, bodyErr error) {
	route := Route(r.URL.Path)
	if bodyErr != nil {
		code := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(bodyErr, errUnsupportedEncoding):
			code = http.StatusUnsupportedMediaType
		case errors.As(bodyErr, &tooBig):
			code = http.StatusRequestEntityTooLarge
		}
		h.fail(w, route, apiError{code: code, msg: h.who() + ": " + bodyErr.Error()})
		return
	}

	switch {
	case route == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet):
		h.writeJSON(w, http.StatusOK, obj{"ok": true})
	case route == "/models" && r.Method == http.MethodGet:
		h.writeJSON(w, http.StatusOK, modelList())
	case r.Method != http.MethodPost:
		h.fail(w, route, apiError{code: http.StatusNotFound, msg: fmt.Sprintf("%s: no %s %s", h.who(), r.Method, r.URL.Path)})
	case route == "/messages/count_tokens":
		h.countTokens(w, r, body)
	default:
		if api, ok := modelAPIs[route]; ok {
			h.answer(w, r, route, api, body)
			return
		}
		h.fail(w, route, apiError{code: http.StatusNotFound, msg: fmt.Sprintf("%s: no POST %s", h.who(), r.URL.Path)})
	}
}

// Route reduces a URL path to the route it names: no trailing slash and
// no /v1 prefix, so "/v1/messages/" and "/messages" are both "/messages".
// The gateway routes by it too, so both serve the same paths.
func Route(path string) string {
	p := strings.TrimRight(path, "/")
	if p == "/v1" || strings.HasPrefix(p, "/v1/") {
		p = p[len("/v1"):]
	}
	if p == "" {
		return "/"
	}
	return p
}

// modelAPI is how one model API's requests are read and answered.
type modelAPI struct {
	name   string
	turn   func(*request) turn
	encode func(*exchange)
}

// modelAPIs maps the model routes to their APIs.
var modelAPIs = map[string]modelAPI{
	"/messages":         {APIAnthropic, anthropicTurn, (*exchange).anthropic},
	"/chat/completions": {APIChat, chatTurn, (*exchange).chat},
	"/responses":        {APIResponses, responsesTurn, (*exchange).responses},
}

// countTokens answers POST /v1/messages/count_tokens: about a token per
// four bytes of the body, or the model's count.
func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request, body []byte) {
	if h.model == nil {
		h.writeJSON(w, http.StatusOK, obj{"input_tokens": tokens(body)})
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		h.fail(w, "/messages/count_tokens", apiError{code: http.StatusBadRequest, msg: fmt.Sprintf("%s: bad request body: %v", h.who(), err)})
		return
	}
	q := &Query{API: APIAnthropic, Header: r.Header, Request: conversation(APIAnthropic, &req), turn: anthropicTurn(&req)}
	h.writeJSON(w, http.StatusOK, obj{"input_tokens": h.model.CountTokens(q)})
}

// answer answers a request to one of the model APIs: an error, or the
// reply encoded in the API's shape.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, route string, api modelAPI, body []byte) {
	var req request
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			h.fail(w, route, apiError{code: http.StatusBadRequest, msg: fmt.Sprintf("%s: bad request body: %v", h.who(), err)})
			return
		}
	}
	h.watch.begin(api.name, &req)
	defer h.watch.end()
	x := &exchange{h: h, w: w, r: r, req: &req, turn: api.turn(&req)}
	var fail *apiError
	if h.model == nil {
		fail = x.directives(tokens(body))
	} else {
		fail = x.fromModel(api.name)
	}
	if fail != nil {
		h.fail(w, route, *fail)
		h.watch.retry(time.Duration(fail.retryAfter * float64(time.Second)))
		return
	}
	api.encode(x)
}

// exchange is one model request being answered.
type exchange struct {
	h     *Handler
	w     http.ResponseWriter
	r     *http.Request
	req   *request
	turn  turn
	reply reply
	delay time.Duration // held after the stream's first event
}

// directives decides the reply from the prompt's directives, or the
// [[status]] error.
func (x *exchange) directives(inTokens int) *apiError {
	if code := x.turn.status(); code != 0 {
		msg := fmt.Sprintf("fake-llm status directive %d", code)
		if code == http.StatusUnauthorized {
			// As some proxies do: the refused credential, echoed.
			msg += ": invalid x-api-key " + x.r.Header.Get("x-api-key") + " / authorization " + x.r.Header.Get("Authorization")
		}
		return &apiError{code: code, msg: msg, retryAfter: x.turn.retryAfter()}
	}
	x.delay = x.turn.delay()
	x.reply = x.turn.answer().reply()
	read, write := x.turn.cache(inTokens)
	x.reply.usage = usage{input: inTokens - read - write, output: x.reply.outTokens(), cacheRead: read, cacheWrite: write}
	return nil
}

// fromModel asks the handler's model for the reply.
func (x *exchange) fromModel(api string) *apiError {
	q := &Query{API: api, Header: x.r.Header, Request: conversation(api, x.req), turn: x.turn}
	resp, err := x.h.model.Answer(x.r.Context(), q)
	if err != nil {
		var ae *wire.APIError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status <= 599 {
			return &apiError{code: ae.Status, kind: ae.Type, msg: ae.Message, retryAfter: ae.RetryAfterSeconds}
		}
		return &apiError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	x.reply = replyOf(resp)
	return nil
}

// delivered tells the server's truth that the reply's calls reached the
// client under ids, once the whole answer is written.
func (x *exchange) delivered(ids []string) {
	for i, id := range ids {
		x.h.watch.called(id, x.reply.calls[i])
	}
}

// modelName is the model of the reply, else the one the client asked
// for, else the default one.
func (x *exchange) modelName() string {
	switch {
	case x.reply.model != "":
		return x.reply.model
	case x.req.Model != "":
		return x.req.Model
	}
	return defaultModel
}

// hold waits out the turn's [[delay]]. It reports false if the client went
// away first, in which case nothing more should be written.
func (x *exchange) hold() bool {
	if x.delay <= 0 {
		return true
	}
	t := time.NewTimer(x.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-x.r.Context().Done():
		return false
	}
}

// newID returns a fresh identifier such as "msg_12ab34cd56".
func (h *Handler) newID(prefix string) string {
	return fmt.Sprintf("%s_%d%08x", prefix, h.ids.Add(1), rand.Uint32())
}

// writeJSON answers v as a JSON document with status code.
func (h *Handler) writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		data = []byte(fmt.Sprintf(`{"type":"error","error":{"type":"api_error","message":%q}}`, err.Error()))
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", fmt.Sprint(len(data)))
	hd.Set(requestIDHdr, h.newID("req"))
	w.WriteHeader(code)
	_, _ = w.Write(data) // the client may be gone; nothing to do about it
}

// obj is a JSON object under construction.
type obj = map[string]any
