package fakellm

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRequestsInOrderAndLog(t *testing.T) {
	var log syncBuffer
	s := startServer(t, &log)

	send(t, http.MethodHead, s.URL+"/", nil, nil)
	resp := send(t, http.MethodGet, s.URL+"/v1/models", nil, map[string]string{"X-Test": "models"})
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	decodeBody(t, resp, &models)
	if len(models.Data) == 0 || models.Data[0].ID != "fake-model" {
		t.Errorf("models = %+v", models)
	}
	postJSON(t, s.URL+"/v1/chat/completions", chatBody(params{prompt: "one"}))
	postJSON(t, s.URL+"/v1/messages?beta=true", anthropicBody(params{prompt: "two"}))
	postJSON(t, s.URL+"/v1/responses", responsesBody(params{prompt: "three"}))

	reqs := s.Requests()
	var got []string
	for _, r := range reqs {
		got = append(got, r.Method+" "+r.Path)
	}
	want := []string{"HEAD /", "GET /v1/models", "POST /v1/chat/completions",
		"POST /v1/messages?beta=true", "POST /v1/responses"}
	if !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	if reqs[1].Header.Get("X-Test") != "models" || reqs[1].Body != nil {
		t.Errorf("GET record = %+v", reqs[1])
	}
	for i, prompt := range []string{"one", "two", "three"} {
		if !bytes.Contains(reqs[2+i].Body, []byte(`"`+prompt)) {
			t.Errorf("request %d body %s lacks %q", 2+i, reqs[2+i].Body, prompt)
		}
	}

	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), len(want), log.String())
	}
	for i, line := range lines {
		var entry struct {
			TS      float64           `json:"ts"`
			Method  string            `json:"method"`
			Path    string            `json:"path"`
			Headers map[string]string `json:"headers"`
			Body    json.RawMessage   `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %d %q: %v", i, line, err)
		}
		if entry.Method+" "+entry.Path != want[i] || entry.TS == 0 || entry.Headers["User-Agent"] == "" {
			t.Errorf("log line %d = %+v", i, entry)
		}
		if i >= 2 && !json.Valid(entry.Body) {
			t.Errorf("log line %d body %s", i, entry.Body)
		}
	}

	// The copy is the caller's own.
	reqs[0].Method = "CHANGED"
	reqs[1].Header.Set("X-Test", "changed")
	if again := s.Requests(); again[0].Method != http.MethodHead || again[1].Header.Get("X-Test") != "models" {
		t.Errorf("Requests shares its records with the server")
	}
}

func TestHeadAndNotFound(t *testing.T) {
	s := startServer(t, nil)
	if resp := send(t, http.MethodHead, s.URL+"/", nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD / = %d", resp.StatusCode)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/nothing"},
		{http.MethodPost, "/v1/nothing"},
		{http.MethodGet, "/v1/messages"},
		{http.MethodPost, "/v1/models"},
	} {
		resp := send(t, c.method, s.URL+c.path, []byte("{}"), nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s = %d, want 404", c.method, c.path, resp.StatusCode)
			continue
		}
		if got := anthropicErrorType(t, resp); got != "not_found_error" {
			t.Errorf("%s %s error type %q", c.method, c.path, got)
		}
	}
}

func TestCountTokens(t *testing.T) {
	s := startServer(t, nil)
	body := anthropicBody(params{prompt: "[[status=500]] count me", tools: true})
	resp := postJSON(t, s.URL+"/v1/messages/count_tokens?beta=true", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: count_tokens must ignore [[status]]", resp.StatusCode)
	}
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	decodeBody(t, resp, &got)
	if want := len(mustJSON(t, body)) / 4; got.InputTokens != want {
		t.Errorf("input_tokens = %d, want %d", got.InputTokens, want)
	}
}

func TestContentEncodings(t *testing.T) {
	s := startServer(t, nil)
	body := mustJSON(t, chatBody(params{prompt: "[[reply=deflated]]"}))
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(body)
	zw.Close()
	resp := send(t, http.MethodPost, s.URL+"/v1/chat/completions", z.Bytes(), map[string]string{"Content-Encoding": "deflate"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("deflate: status %d", resp.StatusCode)
	}
	wantText(t, apis[1], parseChat(t, resp, false), "deflated")

	for _, enc := range []string{"zstd", "br"} {
		resp := send(t, http.MethodPost, s.URL+"/v1/responses", []byte("(^_^)"), map[string]string{"Content-Encoding": enc})
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("%s: status %d, want 415", enc, resp.StatusCode)
		}
		openAIErrorType(t, resp)
	}

	resp = send(t, http.MethodPost, s.URL+"/v1/messages", []byte("{not json"), nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad JSON: status %d, want 400", resp.StatusCode)
	}

	reqs := s.Requests()
	if got := string(reqs[1].Body); !strings.Contains(got, `"_error"`) || !strings.Contains(got, "zstd") {
		t.Errorf("zstd record body = %s", got)
	}
	if got := string(reqs[3].Body); got != `{"_raw":"{not json"}` {
		t.Errorf("bad JSON record body = %s", got)
	}
}

func TestToolDirective(t *testing.T) {
	s := startServer(t, nil)
	for _, stream := range []bool{false, true} {
		p := params{prompt: `[[tool=Read {"file_path": "/etc/hosts", "bogus": 1}]]`, tools: true, stream: stream}
		r := parseAnthropic(t, postJSON(t, s.URL+"/v1/messages", anthropicBody(p)), stream)
		if r.tool != "Read" || r.stop != "tool_use" || len(r.args) != 1 || r.args["file_path"] != "/etc/hosts" {
			t.Errorf("stream=%v: got %+v", stream, r)
		}
	}
	// A tool the request does not offer falls back to the reply.
	p := params{prompt: `[[tool=Nope {}]] [[reply=fallback]]`, tools: true}
	r := parseAnthropic(t, postJSON(t, s.URL+"/v1/messages", anthropicBody(p)), false)
	wantText(t, apis[0], r, "fallback")
}

func TestCodexShellTool(t *testing.T) {
	s := startServer(t, nil)
	body := responsesBody(params{prompt: "[[shell=echo hi]]"})
	body["tools"] = []any{m{"type": "function", "name": "shell", "parameters": schemaOf(m{
		"command": m{"type": "array", "items": m{"type": "string"}},
		"workdir": m{"type": "string"},
	}, "command")}}
	r := parseResponses(t, postJSON(t, s.URL+"/v1/responses", body), false)
	if r.tool != "shell" || !jsonEqual(r.args, m{"command": []string{"bash", "-lc", "echo hi"}}) {
		t.Errorf("got %+v", r)
	}
}

func TestPromptSelection(t *testing.T) {
	s := startServer(t, nil)

	// Claude Code merges the user turns of failed requests into one
	// message: only its last text part counts.
	body := anthropicBody(params{prompt: "say hi"})
	msg := body["messages"].([]any)[0].(m)
	msg["content"] = []any{m{"type": "text", "text": "[[status=529]]"}, m{"type": "text", "text": "say hi"}}
	resp := postJSON(t, s.URL+"/v1/messages", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("an old directive in an earlier text part was obeyed: %d", resp.StatusCode)
	}

	// Codex context injected after the prompt is not the prompt.
	body = responsesBody(params{prompt: "[[reply=from prompt]]"})
	body["input"] = append(body["input"].([]any), inputMessage("user", "<environment_context>[[reply=no]]</environment_context>"))
	wantText(t, apis[2], parseResponses(t, postJSON(t, s.URL+"/v1/responses", body), false), "from prompt")

	// A Responses input may be a plain string; chat content may be parts.
	body = m{"model": "m", "input": "[[reply=string input]]"}
	wantText(t, apis[2], parseResponses(t, postJSON(t, s.URL+"/v1/responses", body), false), "string input")
	body = chatBody(params{})
	body["messages"] = []any{m{"role": "user", "content": []any{m{"type": "text", "text": "[[reply=parts]]"}}}}
	wantText(t, apis[1], parseChat(t, postJSON(t, s.URL+"/v1/chat/completions", body), false), "parts")
}

func TestChatStreamWithoutUsage(t *testing.T) {
	s := startServer(t, nil)
	body := chatBody(params{prompt: "hi", stream: true})
	delete(body, "stream_options")
	events := readSSE(t, postJSON(t, s.URL+"/v1/chat/completions", body))
	for _, e := range events {
		if strings.Contains(e.data, `"usage"`) {
			t.Errorf("usage chunk without include_usage: %s", e.data)
		}
	}
	if events[len(events)-1].data != "[DONE]" {
		t.Errorf("stream does not end with [DONE]")
	}
}

// TestDelayHonoursDisconnect checks a held turn ends when the client goes.
func TestDelayHonoursDisconnect(t *testing.T) {
	s := newServer(nil)
	for _, a := range apis {
		for _, stream := range []bool{false, true} {
			body := mustJSON(t, a.body(params{prompt: "[[delay=30]]", tools: true, stream: stream}))
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, a.pathFor(stream), bytes.NewReader(body))
			rec := httptest.NewRecorder()
			start := time.Now()
			s.handle(rec, req)
			cancel()
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s stream=%v: handler ran %v after the client left", a.name, stream, d)
			}
			out, _ := io.ReadAll(rec.Body)
			if bytes.Contains(out, []byte(defaultReply)) {
				t.Errorf("%s stream=%v: content written after the client left: %s", a.name, stream, out)
			}
		}
	}
}

func TestStartBadAddress(t *testing.T) {
	if _, err := Start("127.0.0.1:-1", nil); err == nil {
		t.Fatal("Start on a bad address succeeded")
	}
}

// Codex offers each MCP server's tools as a Responses namespace tool; a
// directive names a member <namespace>__<tool>, and the call names the
// namespace and the member apart, as Codex reads it.
func TestNamespaceTool(t *testing.T) {
	s := startServer(t, nil)
	body := responsesBody(params{prompt: `[[tool=mcp__cicy__dispatch {"to": "w-2", "bogus": 1}]]`})
	body["tools"] = []any{m{"type": "namespace", "name": "mcp__cicy", "description": "Tools in the mcp__cicy namespace.",
		"tools": []any{m{"type": "function", "name": "dispatch", "parameters": schemaOf(m{"to": m{"type": "string"}}, "to")}}}}
	var out struct {
		Output []struct {
			Type, Name, Namespace, Arguments string
		}
	}
	decodeBody(t, postJSON(t, s.URL+"/v1/responses", body), &out)
	if len(out.Output) != 1 {
		t.Fatalf("got %+v", out)
	}
	if c := out.Output[0]; c.Type != "function_call" || c.Name != "dispatch" || c.Namespace != "mcp__cicy" || c.Arguments != `{"to":"w-2"}` {
		t.Errorf("got %+v", c)
	}
}
