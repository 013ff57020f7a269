package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// oaRecorded is one request the fake Chat Completions server saw.
type oaRecorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// oaFake is a Chat Completions server on 127.0.0.1: the i-th request is
// answered by the i-th handler (the last one repeats).
type oaFake struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	reqs     []oaRecorded
	handlers []http.HandlerFunc
}

func newOAFake(t *testing.T, handlers ...http.HandlerFunc) *oaFake {
	t.Helper()
	f := &oaFake{t: t, handlers: handlers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, oaRecorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"type":"not_found","message":"no %s %s"}}`, r.Method, r.URL.Path)
			return
		}
		h := f.handlers[min(n, len(f.handlers)-1)]
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *oaFake) requests() []oaRecorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]oaRecorded(nil), f.reqs...)
}

func (f *oaFake) provider(key string, sleeps *[]time.Duration) *OpenAI {
	var mu sync.Mutex
	return &OpenAI{
		BaseURL: f.srv.URL + "/v1",
		APIKey:  key,
		HTTP:    f.srv.Client(),
		Retry: Retry{Attempts: 3, Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			if sleeps != nil {
				*sleeps = append(*sleeps, d)
			}
			return nil
		}},
	}
}

// oaSSEHandler streams the given data payloads, then [DONE] when done is set.
func oaSSEHandler(done bool, payloads ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		fl, _ := w.(http.Flusher)
		for _, p := range payloads {
			fmt.Fprintf(w, "data: %s\n\n", p)
			if fl != nil {
				fl.Flush()
			}
		}
		if done {
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}
}

func oaJSONHandler(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func oaTextChunk(s string) string {
	b, _ := json.Marshal(s)
	return `{"id":"c1","object":"chat.completion.chunk","model":"fake-model","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
}

func oaFinishChunk(reason string) string {
	return `{"id":"c1","object":"chat.completion.chunk","model":"fake-model","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

func oaUsageChunk(usage string) string {
	return `{"id":"c1","object":"chat.completion.chunk","model":"fake-model","choices":[],"usage":` + usage + `}`
}

func oaToolChunk(index int, id, name, args string) string {
	a, _ := json.Marshal(args)
	fn := `"arguments":` + string(a)
	if name != "" {
		fn = `"name":"` + name + `",` + fn
	}
	idPart := ""
	if id != "" {
		idPart = `"id":"` + id + `","type":"function",`
	}
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":"fake-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,%s"function":{%s}}]},"finish_reason":null}]}`, index, idPart, fn)
}

func oaSimpleReq() *wire.Request {
	return &wire.Request{
		Model:     "fake-model",
		MaxTokens: 1024,
		Messages:  []wire.Message{{Role: wire.RoleUser, Content: []wire.Block{wire.Text("hi")}}},
		PaneID:    "w-1",
		TurnID:    "turn-1",
	}
}

func TestOpenAIRequestTranslation(t *testing.T) {
	f := newOAFake(t, oaSSEHandler(true, oaTextChunk("ok"), oaFinishChunk("stop")))
	const key = "sk-test-KEY-123"
	p := f.provider(key, nil)

	cc := wire.Ephemeral()
	sys2 := wire.Text("skills: none")
	sys2.CacheControl = cc
	role := wire.Text("<role>\nbe nice\n</role>")
	first := wire.Text("list files")
	first.CacheControl = cc
	mem := wire.Text("<memories>\nm\n</memories>")
	lastRes := wire.ToolResult("call_2", "boom", true)
	lastRes.CacheControl = cc
	tool2 := wire.Tool{Name: "skill", Description: "Skills", InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`), CacheControl: cc}
	req := &wire.Request{
		Model:     "gpt-x",
		MaxTokens: 4096,
		System:    []wire.Block{wire.Text("You are cicy."), sys2},
		Tools: []wire.Tool{
			{Name: "shell", Description: "Run a command", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
			tool2,
		},
		Messages: []wire.Message{
			{Role: wire.RoleUser, Content: []wire.Block{role, first}},
			{Role: wire.RoleAssistant, Content: []wire.Block{
				{Type: wire.TypeThinking, Thinking: "hmm"},
				wire.Text("Looking."),
				{Type: wire.TypeToolUse, ID: "call_1", Name: "shell", Input: json.RawMessage(`{"command":"ls"}`)},
				{Type: wire.TypeToolUse, ID: "call_2", Name: "shell", Input: json.RawMessage(`{"command":"false"}`)},
			}},
			{Role: wire.RoleUser, Content: []wire.Block{
				wire.Text("and then?"),
				wire.ToolResult("call_1", "a.txt\nb.txt", false),
				lastRes,
				mem,
			}},
			{Role: wire.RoleAssistant, Content: []wire.Block{{Type: wire.TypeToolUse, ID: "call_3", Name: "skill", Input: json.RawMessage(`{}`)}}},
			{Role: wire.RoleUser, Content: []wire.Block{wire.ToolResult("call_3", "error: no such skill", true)}},
		},
		PaneID: "w-7",
		TurnID: "turn-abc",
	}
	resp, err := p.Stream(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.StopReason != "end_turn" || len(resp.Content) != 1 || resp.Content[0].Text != "ok" {
		t.Fatalf("response = %+v", resp)
	}
	// Same request again: the bytes must not change.
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatalf("Stream 2: %v", err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	if string(reqs[0].Body) != string(reqs[1].Body) {
		t.Fatalf("body not byte-stable:\n%s\n%s", reqs[0].Body, reqs[1].Body)
	}
	body := string(reqs[0].Body)

	want := `{"model":"gpt-x","messages":[` +
		`{"role":"system","content":"You are cicy.\n\nskills: none"},` +
		`{"role":"user","content":"<role>\nbe nice\n</role>\n\nlist files"},` +
		`{"role":"assistant","content":"Looking.","tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"command\":\"ls\"}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"shell","arguments":"{\"command\":\"false\"}"}}]},` +
		`{"role":"tool","content":"a.txt\nb.txt","tool_call_id":"call_1"},` +
		`{"role":"tool","content":"error: boom","tool_call_id":"call_2"},` +
		`{"role":"user","content":"and then?\n\n<memories>\nm\n</memories>"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"skill","arguments":"{}"}}]},` +
		`{"role":"tool","content":"error: no such skill","tool_call_id":"call_3"}],` +
		`"tools":[` +
		`{"type":"function","function":{"name":"shell","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}},` +
		`{"type":"function","function":{"name":"skill","description":"Skills","parameters":{"type":"object","properties":{"name":{"type":"string"}}}}}],` +
		`"max_tokens":4096,"stream":true,"stream_options":{"include_usage":true}}`
	if body != want {
		t.Fatalf("body mismatch\n got: %s\nwant: %s", body, want)
	}

	// Structural checks, independent of the golden string.
	if strings.Contains(body, "cache_control") || strings.Contains(body, "hmm") {
		t.Errorf("body carries cache_control or thinking: %s", body)
	}
	var doc struct {
		Messages []struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Function struct {
					Arguments any `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Stream        bool `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(reqs[0].Body, &doc); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	var roles []string
	for _, m := range doc.Messages {
		roles = append(roles, m.Role)
		for _, tc := range m.ToolCalls {
			if _, ok := tc.Function.Arguments.(string); !ok {
				t.Errorf("tool_calls arguments is %T, want string", tc.Function.Arguments)
			}
		}
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,tool,user,assistant,tool" {
		t.Errorf("roles = %s", got)
	}
	if !doc.Stream || doc.StreamOptions == nil || !doc.StreamOptions.IncludeUsage {
		t.Errorf("stream/stream_options wrong: %s", body)
	}

	h := reqs[0].Header
	checks := map[string]string{
		"Authorization":  "Bearer " + key,
		"Content-Type":   "application/json",
		"Accept":         "text/event-stream",
		"X-Cicy-Pane":    "w-7",
		"X-Cicy-Turn-Id": "turn-abc",
		"X-Cicy-Aux":     "",
	}
	for k, v := range checks {
		if got := h.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if reqs[0].Path != "/v1/chat/completions" {
		t.Errorf("path = %s", reqs[0].Path)
	}
}

func TestOpenAIAuxNoToolsNoKey(t *testing.T) {
	f := newOAFake(t, oaSSEHandler(true, oaTextChunk("summary"), oaFinishChunk("stop")))
	p := f.provider("", nil)
	req := &wire.Request{
		Model:    "m",
		Messages: []wire.Message{{Role: wire.RoleUser, Content: []wire.Block{wire.Text("summarise")}}},
		PaneID:   "w-2",
		TurnID:   "ignored-for-aux",
		Aux:      "compact",
	}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	r := f.requests()[0]
	want := `{"model":"m","messages":[{"role":"user","content":"summarise"}],"stream":true,"stream_options":{"include_usage":true}}`
	if string(r.Body) != want {
		t.Fatalf("body\n got: %s\nwant: %s", r.Body, want)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["tools"]; ok {
		t.Errorf("tools field present without tools")
	}
	if r.Header.Get("X-Cicy-Aux") != "compact" || r.Header.Get("X-Cicy-Turn-Id") != "" || r.Header.Get("X-Cicy-Pane") != "w-2" {
		t.Errorf("cicy headers = %v", r.Header)
	}
	if r.Header.Get("Authorization") != "" {
		t.Errorf("Authorization sent without a key")
	}
}

func TestOpenAIStreamedText(t *testing.T) {
	f := newOAFake(t, oaSSEHandler(true,
		`{"id":"c1","object":"chat.completion.chunk","model":"fake-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		oaTextChunk("Hel"), oaTextChunk("lo"), oaTextChunk(", world"), oaFinishChunk("stop"),
		oaUsageChunk(`{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}`)))
	p := f.provider("k", nil)
	var events []wire.Event
	resp, err := p.Stream(context.Background(), oaSimpleReq(), func(e wire.Event) { events = append(events, e) })
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(resp.Content) != 1 || resp.Content[0].Type != wire.TypeText || resp.Content[0].Text != "Hello, world" {
		t.Fatalf("content = %+v", resp.Content)
	}
	if resp.StopReason != "end_turn" || resp.Model != "fake-model" {
		t.Errorf("stop=%q model=%q", resp.StopReason, resp.Model)
	}
	var deltas []string
	for _, e := range events {
		if e.Type != "text_delta" {
			t.Errorf("unexpected event %+v", e)
		}
		deltas = append(deltas, e.Text)
	}
	if strings.Join(deltas, "|") != "Hel|lo|, world" {
		t.Errorf("deltas = %q", deltas)
	}
	if resp.Usage != (wire.Usage{InputTokens: 12, OutputTokens: 3}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
}

func TestOpenAIStreamedToolCall(t *testing.T) {
	f := newOAFake(t, oaSSEHandler(true,
		oaTextChunk("Let me look."),
		oaToolChunk(0, "call_a", "shell", ""),
		oaToolChunk(0, "", "", `{"comm`),
		oaToolChunk(0, "", "", `and": "ls `),
		oaToolChunk(0, "", "", `-la"}`),
		oaToolChunk(1, "call_b", "skill", `{"name"`),
		oaToolChunk(1, "", "", `:"go"}`),
		oaFinishChunk("tool_calls")))
	p := f.provider("k", nil)
	var events []wire.Event
	resp, err := p.Stream(context.Background(), oaSimpleReq(), func(e wire.Event) { events = append(events, e) })
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.StopReason != "tool_use" {
		t.Errorf("stop = %q", resp.StopReason)
	}
	if len(resp.Content) != 3 || resp.Content[0].Text != "Let me look." {
		t.Fatalf("content = %+v", resp.Content)
	}
	tu := resp.Content[1]
	if tu.Type != wire.TypeToolUse || tu.ID != "call_a" || tu.Name != "shell" || tu.BadInput {
		t.Fatalf("tool_use = %+v", tu)
	}
	var in map[string]string
	if err := json.Unmarshal(tu.Input, &in); err != nil || in["command"] != "ls -la" {
		t.Errorf("input = %s (%v)", tu.Input, err)
	}
	if b := resp.Content[2]; b.ID != "call_b" || b.Name != "skill" || string(b.Input) != `{"name":"go"}` {
		t.Errorf("second tool_use = %+v input %s", b, b.Input)
	}
	var names []string
	for _, e := range events {
		if e.Type == "tool_use" {
			names = append(names, e.Name)
		}
	}
	if strings.Join(names, ",") != "shell,skill" {
		t.Errorf("tool_use events = %v", names)
	}
	// The assembled tool calls go back out as strings on the next round.
	next := oaSimpleReq()
	next.Messages = append(next.Messages, wire.Message{Role: wire.RoleAssistant, Content: resp.Content})
	body, err := openAIBody(next)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"arguments":"{\"command\": \"ls -la\"}"`) {
		t.Errorf("round-trip body = %s", body)
	}
}

func TestOpenAIUsageCachedTokens(t *testing.T) {
	f := newOAFake(t,
		oaSSEHandler(true, oaTextChunk("a"), oaFinishChunk("stop"),
			oaUsageChunk(`{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,"prompt_tokens_details":{"cached_tokens":800}}`)),
		// DeepSeek's fields.
		oaSSEHandler(true, oaTextChunk("b"), oaFinishChunk("stop"),
			oaUsageChunk(`{"prompt_tokens":300,"completion_tokens":7,"prompt_cache_hit_tokens":256,"prompt_cache_miss_tokens":44}`)),
	)
	p := f.provider("k", nil)
	resp, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (wire.Usage{InputTokens: 200, OutputTokens: 50, CacheReadInputTokens: 800}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	resp, err = p.Stream(context.Background(), oaSimpleReq(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (wire.Usage{InputTokens: 44, OutputTokens: 7, CacheReadInputTokens: 256}); resp.Usage != want {
		t.Errorf("deepseek usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestOpenAIInvalidToolArguments(t *testing.T) {
	f := newOAFake(t, oaSSEHandler(true,
		oaToolChunk(0, "call_x", "shell", `{"command": "echo `),
		oaFinishChunk("length")))
	p := f.provider("k", nil)
	resp, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(resp.Content) != 1 {
		t.Fatalf("content = %+v", resp.Content)
	}
	b := resp.Content[0]
	if b.Type != wire.TypeToolUse || !b.BadInput || string(b.Input) != "{}" || b.ID != "call_x" {
		t.Errorf("block = %+v input %s", b, b.Input)
	}
	if resp.StopReason != "max_tokens" {
		t.Errorf("stop = %q", resp.StopReason)
	}
}

func TestOpenAIRetryAfter429(t *testing.T) {
	f := newOAFake(t,
		oaJSONHandler(429, `{"error":{"type":"rate_limit_error","message":"slow down","code":"rate_limit_exceeded"}}`, "retry-after", "2"),
		oaSSEHandler(true, oaTextChunk("fine"), oaFinishChunk("stop")))
	var sleeps []time.Duration
	p := f.provider("k", &sleeps)
	resp, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Content[0].Text != "fine" {
		t.Errorf("content = %+v", resp.Content)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
	if len(sleeps) != 1 || sleeps[0] != 2*time.Second {
		t.Errorf("sleeps = %v, want [2s]", sleeps)
	}
}

func TestOpenAI401NotRetried(t *testing.T) {
	const key = "sk-very-secret-4242"
	f := newOAFake(t, oaJSONHandler(401, `{"error":{"message":"Incorrect API key provided: `+key+`. Check it.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	var sleeps []time.Duration
	p := f.provider(key, &sleeps)
	_, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	if err == nil {
		t.Fatal("want an error")
	}
	var ae *wire.APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Retryable {
		t.Fatalf("err = %#v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "401") || !strings.Contains(msg, "Incorrect API key provided") {
		t.Errorf("message = %q", msg)
	}
	if strings.Contains(msg, key) || strings.Contains(ae.Message, key) {
		t.Errorf("message leaks the key: %q", msg)
	}
	if n := len(f.requests()); n != 1 || len(sleeps) != 0 {
		t.Errorf("requests = %d sleeps = %v, want 1 and none", n, sleeps)
	}
}

func TestOpenAINonJSON502(t *testing.T) {
	page := "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>" + strings.Repeat("upstream unavailable ", 100) + "</body></html>"
	f := newOAFake(t, oaJSONHandler(502, page, "Content-Type", "text/html"))
	var sleeps []time.Duration
	p := f.provider("k", &sleeps)
	_, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	var ae *wire.APIError
	if !errors.As(err, &ae) || ae.Status != 502 || !ae.Retryable {
		t.Fatalf("err = %#v", err)
	}
	if n := len(f.requests()); n != 3 || len(sleeps) != 2 {
		t.Errorf("requests = %d sleeps = %v, want 3 and 2", n, sleeps)
	}
	if !strings.Contains(ae.Message, "502 Bad Gateway") || len(ae.Message) > 210 || strings.Contains(ae.Message, "\n") {
		t.Errorf("snippet = %q (%d bytes)", ae.Message, len(ae.Message))
	}
}

func TestOpenAIStreamCut(t *testing.T) {
	f := newOAFake(t, oaSSEHandler(false, oaTextChunk("half an ans")))
	var sleeps []time.Duration
	p := f.provider("k", &sleeps)
	p.Retry.Attempts = 1
	_, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	var ae *wire.APIError
	if !errors.As(err, &ae) || !ae.Retryable || ae.Status != 0 {
		t.Fatalf("err = %#v", err)
	}

	// With attempts left, the cut stream is retried and the next one wins.
	f2 := newOAFake(t, oaSSEHandler(false, oaTextChunk("half")), oaSSEHandler(true, oaTextChunk("whole"), oaFinishChunk("stop")))
	p2 := f2.provider("k", nil)
	resp, err := p2.Stream(context.Background(), oaSimpleReq(), nil)
	if err != nil || resp.Content[0].Text != "whole" || len(f2.requests()) != 2 {
		t.Fatalf("resp = %+v err = %v requests = %d", resp, err, len(f2.requests()))
	}
}

func TestOpenAIFinishWithoutDone(t *testing.T) {
	f := newOAFake(t, oaSSEHandler(false, oaTextChunk("done"), oaFinishChunk("stop")))
	p := f.provider("k", nil)
	p.Retry.Attempts = 1
	resp, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	if err != nil || resp.Content[0].Text != "done" || resp.StopReason != "end_turn" {
		t.Fatalf("resp = %+v err = %v", resp, err)
	}
}

func TestOpenAIMidStreamError(t *testing.T) {
	f := newOAFake(t, oaSSEHandler(false, oaTextChunk("x"), `{"error":{"type":"server_error","message":"model crashed"}}`))
	p := f.provider("k", nil)
	p.Retry.Attempts = 1
	_, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	var ae *wire.APIError
	if !errors.As(err, &ae) || !ae.Retryable || ae.Message != "model crashed" {
		t.Fatalf("err = %#v", err)
	}
}

func TestOpenAINonStreamJSON(t *testing.T) {
	f := newOAFake(t, oaJSONHandler(200, `{"id":"c9","object":"chat.completion","model":"llama3","choices":[{"index":0,"message":{"role":"assistant","content":"Running it.","tool_calls":[{"id":"call_9","type":"function","function":{"name":"shell","arguments":"{\"command\":\"pwd\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":32}}}`))
	p := f.provider("", nil)
	var events []wire.Event
	resp, err := p.Stream(context.Background(), oaSimpleReq(), func(e wire.Event) { events = append(events, e) })
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Model != "llama3" || resp.StopReason != "tool_use" || len(resp.Content) != 2 {
		t.Fatalf("resp = %+v", resp)
	}
	if resp.Content[0].Text != "Running it." || resp.Content[1].ID != "call_9" || string(resp.Content[1].Input) != `{"command":"pwd"}` {
		t.Errorf("content = %+v", resp.Content)
	}
	if resp.Usage != (wire.Usage{InputTokens: 8, OutputTokens: 9, CacheReadInputTokens: 32}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if len(events) != 2 {
		t.Errorf("events = %+v", events)
	}
}

func TestOpenAIToolCallsUnderStop(t *testing.T) {
	// Some servers finish tool calls with "stop"; the answer still has a tool_use.
	f := newOAFake(t, oaSSEHandler(true, oaToolChunk(0, "call_1", "shell", `{"command":"id"}`), oaFinishChunk("stop")))
	p := f.provider("k", nil)
	resp, err := p.Stream(context.Background(), oaSimpleReq(), nil)
	if err != nil || resp.StopReason != "tool_use" || len(resp.Content) != 1 || resp.Content[0].Name != "shell" {
		t.Fatalf("resp = %+v err = %v", resp, err)
	}
}
