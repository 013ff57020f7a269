// Package apitest is a fake Anthropic Messages API for tests: a real HTTP
// server on 127.0.0.1 (net/http/httptest) that records every request and
// answers it the way the test's handler says, as a streamed SSE response
// (what the cicy anthropic provider asks for), as one non-streamed JSON
// message, or as a raw body with any status (error documents, HTML from a
// proxy, an empty body). A stream can be cut mid-way to test retries.
//
// Typical use:
//
//	srv := apitest.NewAnthropic(t, func(n int, r *apitest.Recorded) apitest.Reply {
//		if n == 0 {
//			return apitest.Reply{Status: 429, Header: map[string]string{"retry-after": "1"},
//				RawBody: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`}
//		}
//		return apitest.Reply{Resp: apitest.TextResponse("hello", wire.Usage{InputTokens: 10, OutputTokens: 2})}
//	})
//	p := &provider.Anthropic{BaseURL: srv.URL, APIKey: "test-key"}
//
// The handler runs on the server's goroutine for that request; it may block
// (to hold a turn open), but it must return before the test ends: the
// server is closed at t.Cleanup and closing waits for running handlers.
// Recorded.Context ends when the client goes away, so a blocking handler
// can select on it.
//
// It also holds the shape tests read a Gemini answer in (GeminiResponse),
// for the tests of the servers that speak that API.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// Recorded is one request the server received.
type Recorded struct {
	Header http.Header
	Body   []byte
	// Req is decoded from Body; PaneID, TurnID and Aux (not part of the
	// body) are filled from the X-Cicy-Pane, X-Cicy-Turn-Id and X-Cicy-Aux
	// headers.
	Req wire.Request
	// Method and Path of the request (POST /v1/messages when well-formed).
	Method, Path string
	// Context is the request's context: done when the client cancels or
	// disconnects.
	Context context.Context
}

// Reply is how the server answers one request.
type Reply struct {
	Status int               // 0 → 200
	Header map[string]string // extra response headers, e.g. "retry-after": "1"
	// RawBody is sent as-is (error bodies, non-JSON bodies, an empty body)
	// when Resp is nil. Without a Content-Type in Header, a body starting
	// with '{' is sent as application/json.
	RawBody string
	// Resp is streamed as SSE: message_start (with the input and cache
	// usage fields), per block content_block_start / _delta / _stop (text
	// in two text_delta chunks, tool_use input in two input_json_delta
	// chunks), message_delta (stop_reason and output usage), message_stop.
	Resp *wire.Response
	// CutAfterEvents > 0 sends only that many SSE events, then closes the
	// connection mid-stream (no end of the chunked body).
	CutAfterEvents int
	// JSON sends Resp as one non-streamed JSON message instead of SSE.
	JSON bool
}

// Server is the fake API. URL is the base URL to give the provider
// (without /v1/messages).
type Server struct {
	URL string

	srv    *httptest.Server
	handle func(n int, r *Recorded) Reply

	mu   sync.Mutex
	reqs []Recorded
}

// NewAnthropic starts a server whose n-th request (counted from 0, every
// request counts) is answered by handle(n, r). A nil handle answers every
// request with the text "ok". The server is closed at t.Cleanup.
func NewAnthropic(t testing.TB, handle func(n int, r *Recorded) Reply) *Server {
	t.Helper()
	if handle == nil {
		handle = func(int, *Recorded) Reply { return Reply{Resp: TextResponse("ok", wire.Usage{})} }
	}
	s := &Server{handle: handle}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Requests returns copies of the requests received so far, in order. It is
// safe for concurrent use.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = copyRecorded(r)
	}
	return out
}

// Len is the number of requests received so far.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func copyRecorded(r Recorded) Recorded {
	c := r
	c.Header = r.Header.Clone()
	c.Body = bytes.Clone(r.Body)
	c.Req = decodeRequest(c.Body, c.Header) // a fresh decode is a deep copy
	return c
}

func decodeRequest(body []byte, h http.Header) wire.Request {
	var req wire.Request
	_ = json.Unmarshal(body, &req)
	req.PaneID = h.Get("X-Cicy-Pane")
	req.TurnID = h.Get("X-Cicy-Turn-Id")
	req.Aux = h.Get("X-Cicy-Aux")
	return req
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Recorded{
		Header: r.Header.Clone(), Body: body, Req: decodeRequest(body, r.Header),
		Method: r.Method, Path: r.URL.Path, Context: r.Context(),
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":"apitest: no route %s %s"}}`, r.Method, r.URL.Path)
		return
	}
	c := copyRecorded(rec)
	reply := s.handle(n, &c)
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	switch {
	case reply.Resp != nil && reply.JSON:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(messageJSON(reply.Resp))
	case reply.Resp != nil:
		writeSSE(w, status, reply.Resp, reply.CutAfterEvents)
	default:
		if w.Header().Get("Content-Type") == "" && strings.HasPrefix(strings.TrimSpace(reply.RawBody), "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply.RawBody)
	}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data any
}

// writeSSE streams resp; with cut > 0 it stops after cut events and drops
// the connection.
func writeSSE(w http.ResponseWriter, status int, resp *wire.Response, cut int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	fl, _ := w.(http.Flusher)
	for i, ev := range sseEvents(resp) {
		if cut > 0 && i >= cut {
			if fl != nil {
				fl.Flush()
			}
			// Abort: the server closes the connection without ending the
			// chunked body, so the client sees an unexpected EOF.
			panic(http.ErrAbortHandler)
		}
		data, _ := json.Marshal(ev.data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, data)
		if fl != nil {
			fl.Flush()
		}
	}
}

// sseEvents renders resp as the Messages API stream.
func sseEvents(resp *wire.Response) []sseEvent {
	model := resp.Model
	if model == "" {
		model = "claude-test"
	}
	evs := []sseEvent{{"message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": "msg_apitest", "type": "message", "role": "assistant", "model": model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens":                resp.Usage.InputTokens,
				"cache_creation_input_tokens": resp.Usage.CacheCreationInputTokens,
				"cache_read_input_tokens":     resp.Usage.CacheReadInputTokens,
				"output_tokens":               1,
			},
		},
	}}}
	for i, b := range resp.Content {
		switch b.Type {
		case wire.TypeText:
			evs = append(evs, sseEvent{"content_block_start", map[string]any{
				"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""},
			}})
			for _, part := range split2(b.Text) {
				evs = append(evs, sseEvent{"content_block_delta", map[string]any{
					"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": part},
				}})
			}
		case wire.TypeToolUse:
			evs = append(evs, sseEvent{"content_block_start", map[string]any{
				"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}},
			}})
			for _, part := range split2(string(b.Input)) {
				evs = append(evs, sseEvent{"content_block_delta", map[string]any{
					"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part},
				}})
			}
		case wire.TypeThinking:
			evs = append(evs, sseEvent{"content_block_start", map[string]any{
				"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "thinking", "thinking": ""},
			}})
			evs = append(evs, sseEvent{"content_block_delta", map[string]any{
				"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "thinking_delta", "thinking": b.Thinking},
			}})
		default:
			evs = append(evs, sseEvent{"content_block_start", map[string]any{
				"type": "content_block_start", "index": i, "content_block": blockJSON(b),
			}})
		}
		evs = append(evs, sseEvent{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
	}
	stop := resp.StopReason
	if stop == "" {
		stop = "end_turn"
	}
	evs = append(evs,
		sseEvent{"message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": resp.Usage.OutputTokens},
		}},
		sseEvent{"message_stop", map[string]any{"type": "message_stop"}},
	)
	return evs
}

// split2 cuts s in two parts at a rune boundary near its middle.
func split2(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	mid := len(s) / 2
	for mid > 0 && !utf8.RuneStart(s[mid]) {
		mid--
	}
	if mid == 0 {
		return []string{s}
	}
	return []string{s[:mid], s[mid:]}
}

// blockJSON renders a content block for a JSON message. A tool_use input
// that is not valid JSON (possible on purpose only in a stream) is sent
// as {}.
func blockJSON(b wire.Block) map[string]any {
	m := map[string]any{"type": b.Type}
	switch b.Type {
	case wire.TypeText:
		m["text"] = b.Text
	case wire.TypeToolUse:
		m["id"], m["name"] = b.ID, b.Name
		if json.Valid(b.Input) {
			m["input"] = json.RawMessage(b.Input)
		} else {
			m["input"] = map[string]any{}
		}
	case wire.TypeThinking:
		m["thinking"] = b.Thinking
	default:
		raw, _ := json.Marshal(b)
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

// messageJSON renders resp as a non-streamed Messages API answer.
func messageJSON(resp *wire.Response) []byte {
	model := resp.Model
	if model == "" {
		model = "claude-test"
	}
	content := make([]any, 0, len(resp.Content))
	for _, b := range resp.Content {
		content = append(content, blockJSON(b))
	}
	stop := resp.StopReason
	if stop == "" {
		stop = "end_turn"
	}
	b, _ := json.Marshal(map[string]any{
		"id": "msg_apitest", "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": resp.Usage,
	})
	return b
}

// TextResponse is an answer of one text block (stop_reason end_turn).
func TextResponse(text string, u wire.Usage) *wire.Response {
	return &wire.Response{Model: "claude-test", Content: []wire.Block{wire.Text(text)}, StopReason: "end_turn", Usage: u}
}

// ToolResponse is an answer of one tool_use block (stop_reason tool_use).
// input is marshalled to JSON, except a json.RawMessage, which is sent as
// it is, so a test can stream input that is cut off or not valid JSON.
func ToolResponse(id, name string, input any, u wire.Usage) *wire.Response {
	var raw json.RawMessage
	switch v := input.(type) {
	case json.RawMessage:
		raw = v
	case nil:
		raw = json.RawMessage("{}")
	default:
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("apitest.ToolResponse: input: %v", err))
		}
		raw = b
	}
	return &wire.Response{
		Model:      "claude-test",
		Content:    []wire.Block{{Type: wire.TypeToolUse, ID: id, Name: name, Input: raw}},
		StopReason: "tool_use",
		Usage:      u,
	}
}
