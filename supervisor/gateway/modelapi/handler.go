package modelapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
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
	APIGemini    = "gemini"    // Gemini generateContent
)

// Model decides the answers of a [Handler]: a program standing in for an
// LLM, such as cicy's scripted model or a test fake.
type Model interface {
	// Answer is the reply to q: its text blocks, joined by blank lines,
	// and its tool_use blocks, in the API's own shape, with its stop
	// reason (Anthropic's terms) and usage (Anthropic's additive shape).
	// A tool_use naming a member of a Responses namespace tool as
	// <namespace>__<tool> calls that member. A *wire.APIError is answered
	// with its status, type, message and retry-after in the API's error
	// shape; any other error as a 500.
	Answer(ctx context.Context, q *Query) (*wire.Response, error)
	// CountTokens is the input_tokens answer to POST
	// /v1/messages/count_tokens.
	CountTokens(q *Query) int64
}

// Observer is told what a [Handler] does with the model requests it
// answers: a test server's ground truth of what its clients wait for. A
// [Model] that is also an Observer is told.
type Observer interface {
	// Begin: model request q is being answered; it comes before the
	// model sees q.
	Begin(q *Query)
	// End: the answer to q is written, or abandoned.
	End(q *Query)
	// Delivered: the answer's tool call of name with args reached the
	// client under id, once the whole answer is written.
	Delivered(id, name string, args map[string]any)
	// Retry: an error answer told the client to retry after d.
	Retry(d time.Duration)
}

// Query is one model request, as a [Model] sees it.
type Query struct {
	API    string      // APIAnthropic, APIChat, APIResponses or APIGemini
	Header http.Header // the request's headers
	// Body is the request body, its Content-Encoding undone.
	Body []byte
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
	hold time.Duration
}

// Prompt is the newest prompt: the last non-blank text part of the last
// user message that has one, never a tool result or system text. In a
// Responses request the context Codex injects as user messages
// (<environment_context>, <user_instructions>, …) is not a prompt.
func (q *Query) Prompt() string { return q.turn.prompt }

// ToolResult is the text of the tool result the conversation ends with;
// ok is false when it ends otherwise (a system message after the result
// does not count).
func (q *Query) ToolResult() (text string, ok bool) { return q.turn.toolResult, q.turn.afterTool }

// Schema is the JSON schema the request asks the answer to follow
// (Anthropic's output_config, Chat Completions' response_format,
// Responses' text.format); ok is false when it asks for no
// structured output.
func (q *Query) Schema() (schema json.RawMessage, ok bool) {
	return json.RawMessage(q.turn.schema), q.turn.structured
}

// Tools are the names of the tools the request offers; a member of a
// Responses namespace tool (Codex offers an MCP server's tools as one) is
// <namespace>__<tool>.
func (q *Query) Tools() []string {
	names := make([]string, len(q.turn.tools))
	for i, t := range q.turn.tools {
		names[i] = t.name
	}
	return names
}

// ToolCall is the input of a call of the offered tool name (as [Query.Tools]
// names it) with args: args less the keys the tool's schema does not
// declare (none when it declares none). ok is false when the request
// offers no tool name.
func (q *Query) ToolCall(name string, args map[string]any) (input map[string]any, ok bool) {
	tl := q.turn.tool(name)
	if tl == nil {
		return nil, false
	}
	return tl.call(args).args, true
}

// ShellCall is a call of the shell tool the request offers (Claude Code's
// Bash, Codex's exec_command or shell, opencode's and pi's bash, Qwen
// Code's and Gemini CLI's run_shell_command) that runs command,
// with the arguments in that tool's own shape, and description as the
// description the tool may require; ok is false when the request offers
// none.
func (q *Query) ShellCall(command, description string) (name string, input map[string]any, ok bool) {
	c := q.turn.shellCall(command, description)
	if c == nil {
		return "", nil, false
	}
	return c.name, c.args, true
}

// Hold has the handler hold the answer d before its content: after a
// stream's opening events (the message start, the role, the response
// created), or before a whole answer. A client that goes away ends the
// wait, and nothing more is written.
func (q *Query) Hold(d time.Duration) { q.hold = d }

// Handler serves the model APIs listed in the package doc, answering from
// a [Model]. It records nothing. It is safe for concurrent use.
type Handler struct {
	name  string // starts the handler's own error messages
	model Model
	obs   Observer // nil: none
	ids   atomic.Uint64
}

// NewHandler returns a handler whose answers come from m; name (e.g.
// "cicy scripted model") starts the error messages of its own, such as a
// route it does not serve.
func NewHandler(name string, m Model) *Handler {
	h := &Handler{name: name, model: m}
	h.obs, _ = m.(Observer)
	return h
}

// who starts the handler's own error messages.
func (h *Handler) who() string {
	if h.name == "" {
		return "modelapi"
	}
	return h.name
}

// ServeHTTP answers one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := ReadBody(w, r)
	h.ServeBody(w, r, body, err)
}

// ServeBody answers r whose body [ReadBody] has read already, as body and
// bodyErr: a body that could not be read or decoded is answered 400, 413
// or 415.
func (h *Handler) ServeBody(w http.ResponseWriter, r *http.Request, body []byte, bodyErr error) {
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
	case route == geminiCountTokens:
		h.geminiCountTokens(w, r, body)
	default:
		if api, ok := modelAPIs[route]; ok {
			h.answer(w, r, route, api, body)
			return
		}
		h.fail(w, route, apiError{code: http.StatusNotFound, msg: fmt.Sprintf("%s: no POST %s", h.who(), r.URL.Path)})
	}
}

// Route reduces a URL path to the route it names: no trailing slash and
// no /v1 (or Gemini's /v1beta) prefix, so "/v1/messages/" and "/messages"
// are both "/messages"; a Gemini model method
// "/v1beta/models/<model>:<method>" is "/models:<method>" whatever the
// model ([GeminiModel] names it). The gateway routes by it too, so both
// serve the same paths.
func Route(path string) string {
	p := strings.TrimRight(path, "/")
	for _, v := range []string{"/v1beta", "/v1"} {
		if p == v || strings.HasPrefix(p, v+"/") {
			p = p[len(v):]
			break
		}
	}
	if _, method, ok := geminiMethod(p); ok {
		return "/models:" + method
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

// apiTitles are the model APIs' names as the documentation writes them.
var apiTitles = map[string]string{
	APIAnthropic: "Anthropic Messages",
	APIChat:      "OpenAI Chat Completions",
	APIResponses: "OpenAI Responses",
	APIGemini:    "Gemini",
}

// APIs are the model APIs a [Handler] serves, as [Query.API] names them,
// sorted: the list its model routes answer, which the documentation
// states (a test of cmd/cicy-agent checks it there).
func APIs() []string {
	var out []string
	for _, a := range modelAPIs {
		if !slices.Contains(out, a.name) {
			out = append(out, a.name)
		}
	}
	slices.Sort(out)
	return out
}

// APITitle is how the documentation names api ("Anthropic Messages"), or
// "" for a name that is not one of [APIs].
func APITitle(api string) string { return apiTitles[api] }

// modelAPIs maps the model routes to their APIs.
var modelAPIs = map[string]modelAPI{
	"/messages":         {APIAnthropic, anthropicTurn, (*exchange).anthropic},
	"/chat/completions": {APIChat, chatTurn, (*exchange).chat},
	"/responses":        {APIResponses, responsesTurn, (*exchange).responses},
	geminiGenerate:      {APIGemini, geminiTurn, (*exchange).gemini},
	geminiStream:        {APIGemini, geminiTurn, (*exchange).gemini},
}

// countTokens answers POST /v1/messages/count_tokens with the model's
// count.
func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request, body []byte) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		h.fail(w, "/messages/count_tokens", apiError{code: http.StatusBadRequest, msg: fmt.Sprintf("%s: bad request body: %v", h.who(), err)})
		return
	}
	q := newQuery(APIAnthropic, r, body, &req, anthropicTurn(&req))
	h.writeJSON(w, http.StatusOK, obj{"input_tokens": h.model.CountTokens(q)})
}

// newQuery is the query of a request of api.
func newQuery(api string, r *http.Request, body []byte, req *request, t turn) *Query {
	return &Query{API: api, Header: r.Header, Body: body, Request: conversation(api, req), turn: t}
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
	if api.name == APIGemini { // the model and the streaming are in the path
		req.Model, req.Stream = GeminiModel(r.URL.Path), route == geminiStream
	}
	q := newQuery(api.name, r, body, &req, api.turn(&req))
	if h.obs != nil {
		h.obs.Begin(q)
		defer h.obs.End(q)
	}
	x := &exchange{h: h, w: w, r: r, req: &req, turn: q.turn}
	if fail := x.fromModel(q); fail != nil {
		h.fail(w, route, *fail)
		if h.obs != nil && fail.retryAfter > 0 {
			h.obs.Retry(time.Duration(fail.retryAfter * float64(time.Second)))
		}
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

// fromModel asks the handler's model for the reply.
func (x *exchange) fromModel(q *Query) *apiError {
	resp, err := x.h.model.Answer(x.r.Context(), q)
	if err != nil {
		var ae *wire.APIError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status <= 599 {
			return &apiError{code: ae.Status, kind: ae.Type, msg: ae.Message, retryAfter: ae.RetryAfterSeconds}
		}
		return &apiError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	x.reply = x.turn.replyOf(resp)
	x.delay = q.hold
	return nil
}

// delivered tells the observer that the reply's calls reached the client
// under ids, once the whole answer is written.
func (x *exchange) delivered(ids []string) {
	if x.h.obs == nil {
		return
	}
	for i, id := range ids {
		c := x.reply.calls[i]
		x.h.obs.Delivered(id, c.name, c.args)
	}
}

// writeWhole writes the answer in one piece (not streamed) once the hold
// is over, then tells the observer its calls were delivered under ids.
func (x *exchange) writeWhole(body obj, ids []string) {
	if x.hold() {
		x.h.writeJSON(x.w, http.StatusOK, body)
		x.delivered(ids)
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

// hold waits out the query's [Query.Hold]. It reports false if the client
// went away first, in which case nothing more should be written.
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

// writeJSON answers v as a JSON document with status code and a fresh
// request id.
func (h *Handler) writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set(requestIDHdr, h.newID("req"))
	writeJSON(w, code, v)
}

// writeJSON answers v as a JSON document with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		data = []byte(fmt.Sprintf(`{"type":"error","error":{"type":"api_error","message":%q}}`, err.Error()))
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(code)
	_, _ = w.Write(data) // the client may be gone; nothing to do about it
}

// obj is a JSON object under construction.
type obj = map[string]any
