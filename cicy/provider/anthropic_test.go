package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// sleepRecorder records the backoff sleeps of a Retry instead of sleeping.
type sleepRecorder struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleepRecorder) sleeps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newAnthropic returns a provider for srv with 3 attempts and recorded
// sleeps.
func newAnthropic(srv *apitest.Server) (*provider.Anthropic, *sleepRecorder) {
	rec := &sleepRecorder{}
	return &provider.Anthropic{
		BaseURL: srv.URL,
		APIKey:  "test-key",
		Retry:   provider.Retry{Attempts: 3, Sleep: rec.sleep},
	}, rec
}

func simpleRequest() *wire.Request {
	return &wire.Request{
		Model: "claude-test", MaxTokens: 100, PaneID: "w-7", TurnID: "t-abc",
		System:   []wire.Block{wire.Text("sys")},
		Messages: []wire.Message{{Role: wire.RoleUser, Content: []wire.Block{wire.Text("hi")}}},
	}
}

func stream(t *testing.T, p *provider.Anthropic, req *wire.Request) (*wire.Response, []wire.Event, error) {
	t.Helper()
	var evs []wire.Event
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := p.Stream(ctx, req, func(e wire.Event) { evs = append(evs, e) })
	return resp, evs, err
}

func alwaysText(text string) func(int, *apitest.Recorded) apitest.Reply {
	return func(int, *apitest.Recorded) apitest.Reply {
		return apitest.Reply{Resp: apitest.TextResponse(text, wire.Usage{InputTokens: 1, OutputTokens: 1})}
	}
}

func TestAnthropicHeadersAPIKey(t *testing.T) {
	srv := apitest.NewAnthropic(t, alwaysText("ok"))
	p, _ := newAnthropic(srv)
	p.BaseURL += "/" // a trailing slash must not double the path
	req := simpleRequest()
	if _, _, err := stream(t, p, req); err != nil {
		t.Fatal(err)
	}
	if req.Stream {
		t.Errorf("Stream modified the caller's request (Stream set to true)")
	}
	rs := srv.Requests()
	if len(rs) != 1 {
		t.Fatalf("%d requests, want 1", len(rs))
	}
	r := rs[0]
	if r.Method != "POST" || r.Path != "/v1/messages" {
		t.Errorf("request line %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	want := map[string]string{
		"anthropic-version": "2023-06-01",
		"x-api-key":         "test-key",
		"Authorization":     "",
		"X-Cicy-Pane":       "w-7",
		"X-Cicy-Turn-Id":    "t-abc",
		"X-Cicy-Aux":        "",
		"Content-Type":      "application/json",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(string(r.Body), `"stream":true`) || !r.Req.Stream {
		t.Errorf("body has no \"stream\":true: %s", r.Body)
	}
	for _, leak := range []string{"w-7", "t-abc", "PaneID", "TurnID"} {
		if strings.Contains(string(r.Body), leak) {
			t.Errorf("body carries %q, which belongs in a header: %s", leak, r.Body)
		}
	}
	if r.Req.Model != "claude-test" || r.Req.MaxTokens != 100 || len(r.Req.Messages) != 1 {
		t.Errorf("decoded request: %+v", r.Req)
	}
}

func TestAnthropicHeadersAuthTokenAndAux(t *testing.T) {
	srv := apitest.NewAnthropic(t, alwaysText("ok"))
	p, _ := newAnthropic(srv)
	p.APIKey, p.AuthToken = "", "tok-123"
	req := simpleRequest()
	req.Aux = "compact"
	if _, _, err := stream(t, p, req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if got := r.Header.Get("Authorization"); got != "Bearer tok-123" {
		t.Errorf("Authorization = %q, want Bearer tok-123", got)
	}
	if got := r.Header.Get("x-api-key"); got != "" {
		t.Errorf("x-api-key = %q with only an auth token", got)
	}
	if got := r.Header.Get("X-Cicy-Aux"); got != "compact" {
		t.Errorf("X-Cicy-Aux = %q, want compact", got)
	}
	if _, ok := r.Header["X-Cicy-Turn-Id"]; ok {
		t.Errorf("an aux call carries X-Cicy-Turn-Id %q", r.Header.Get("X-Cicy-Turn-Id"))
	}
	if got := r.Header.Get("X-Cicy-Pane"); got != "w-7" {
		t.Errorf("X-Cicy-Pane = %q", got)
	}
}

func TestAnthropicAssemblesTextAndToolUse(t *testing.T) {
	usage := wire.Usage{InputTokens: 11, OutputTokens: 22, CacheCreationInputTokens: 33, CacheReadInputTokens: 44}
	srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
		return apitest.Reply{Resp: &wire.Response{
			Model: "claude-x",
			Content: []wire.Block{
				wire.Text("Let me look — ünïcode ok."),
				{Type: wire.TypeToolUse, ID: "toolu_1", Name: "shell", Input: json.RawMessage(`{"command":"ls -la","timeout":5}`)},
			},
			StopReason: "tool_use",
			Usage:      usage,
		}}
	})
	p, _ := newAnthropic(srv)
	resp, evs, err := stream(t, p, simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "claude-x" || resp.StopReason != "tool_use" {
		t.Errorf("model %q stop %q", resp.Model, resp.StopReason)
	}
	if resp.Usage != usage {
		t.Errorf("usage %+v, want %+v", resp.Usage, usage)
	}
	if len(resp.Content) != 2 {
		t.Fatalf("content %+v", resp.Content)
	}
	if b := resp.Content[0]; b.Type != wire.TypeText || b.Text != "Let me look — ünïcode ok." {
		t.Errorf("text block %+v", b)
	}
	b := resp.Content[1]
	if b.Type != wire.TypeToolUse || b.ID != "toolu_1" || b.Name != "shell" || b.BadInput {
		t.Errorf("tool_use block %+v", b)
	}
	var in struct {
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	if err := json.Unmarshal(b.Input, &in); err != nil || in.Command != "ls -la" || in.Timeout != 5 {
		t.Errorf("tool input %s (%v)", b.Input, err)
	}
	var text string
	var deltas, toolEvents int
	for _, e := range evs {
		switch e.Type {
		case "text_delta":
			text += e.Text
			deltas++
		case "tool_use":
			toolEvents++
			if e.Name != "shell" {
				t.Errorf("tool_use event names %q", e.Name)
			}
		}
	}
	if text != "Let me look — ünïcode ok." || deltas != 2 {
		t.Errorf("text events %q in %d deltas, want the text in 2", text, deltas)
	}
	if toolEvents != 1 {
		t.Errorf("%d tool_use events, want 1", toolEvents)
	}
}

func TestAnthropicRetriesRateLimitWithRetryAfter(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		after  string
		want   time.Duration
	}{
		{"429", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "1", time.Second},
		{"529 overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "2", 2 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := apitest.NewAnthropic(t, func(n int, _ *apitest.Recorded) apitest.Reply {
				if n == 0 {
					return apitest.Reply{Status: c.status, Header: map[string]string{"retry-after": c.after}, RawBody: c.body}
				}
				return apitest.Reply{Resp: apitest.TextResponse("after retry", wire.Usage{})}
			})
			p, rec := newAnthropic(srv)
			resp, _, err := stream(t, p, simpleRequest())
			if err != nil {
				t.Fatalf("not retried: %v", err)
			}
			if got := resp.Content[0].Text; got != "after retry" {
				t.Errorf("answer %q", got)
			}
			if n := srv.Len(); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
			if s := rec.sleeps(); len(s) != 1 || s[0] != c.want {
				t.Errorf("sleeps %v, want [%v] (the retry-after)", s, c.want)
			}
		})
	}
}

func TestAnthropicOverloadedIsRetryableEvenAsOtherStatus(t *testing.T) {
	// Some gateways relay overloaded_error with a 4xx status.
	srv := apitest.NewAnthropic(t, func(n int, _ *apitest.Recorded) apitest.Reply {
		return apitest.Reply{Status: 429, RawBody: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}
	})
	p, rec := newAnthropic(srv)
	_, _, err := stream(t, p, simpleRequest())
	var ae *wire.APIError
	if !errors.As(err, &ae) || !ae.Retryable || ae.Status != 429 || ae.Type != "overloaded_error" {
		t.Fatalf("error %#v", err)
	}
	if srv.Len() != 3 || len(rec.sleeps()) != 2 {
		t.Errorf("%d requests, %d sleeps; want 3 and 2", srv.Len(), len(rec.sleeps()))
	}
}

func TestAnthropicUnauthorizedIsNotRetried(t *testing.T) {
	srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
		return apitest.Reply{Status: 401, RawBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}
	})
	p, rec := newAnthropic(srv)
	_, _, err := stream(t, p, simpleRequest())
	if err == nil {
		t.Fatal("no error for 401")
	}
	if srv.Len() != 1 || len(rec.sleeps()) != 0 {
		t.Errorf("%d requests and %d sleeps for a 401, want 1 and 0", srv.Len(), len(rec.sleeps()))
	}
	msg := err.Error()
	if !strings.Contains(msg, "401") || !strings.Contains(msg, "invalid x-api-key") {
		t.Errorf("error %q does not name the status and the message", msg)
	}
	if strings.Contains(msg, "test-key") {
		t.Errorf("error %q carries the key", msg)
	}
	var ae *wire.APIError
	if !errors.As(err, &ae) || ae.Retryable || ae.Status != 401 || ae.Type != "authentication_error" {
		t.Errorf("error %#v", err)
	}
}

func TestAnthropicOtherClientErrorsAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 403, 404} {
		srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
			return apitest.Reply{Status: status, RawBody: `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`}
		})
		p, _ := newAnthropic(srv)
		if _, _, err := stream(t, p, simpleRequest()); err == nil {
			t.Errorf("%d: no error", status)
		}
		if srv.Len() != 1 {
			t.Errorf("%d: %d requests, want 1", status, srv.Len())
		}
	}
}

func TestAnthropicNonJSONErrorBody(t *testing.T) {
	html := "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n" +
		strings.Repeat("<p>padding padding padding</p>\n", 100) + "</body>\n</html>\n"
	t.Run("retried then succeeds", func(t *testing.T) {
		srv := apitest.NewAnthropic(t, func(n int, _ *apitest.Recorded) apitest.Reply {
			if n == 0 {
				return apitest.Reply{Status: 502, RawBody: html}
			}
			return apitest.Reply{Resp: apitest.TextResponse("fine", wire.Usage{})}
		})
		p, _ := newAnthropic(srv)
		if _, _, err := stream(t, p, simpleRequest()); err != nil {
			t.Fatal(err)
		}
		if srv.Len() != 2 {
			t.Errorf("%d requests, want 2", srv.Len())
		}
	})
	t.Run("attempts exhausted gives a short snippet", func(t *testing.T) {
		srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
			return apitest.Reply{Status: 502, RawBody: html}
		})
		p, _ := newAnthropic(srv)
		_, _, err := stream(t, p, simpleRequest())
		var ae *wire.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("error %v is not an APIError", err)
		}
		if srv.Len() != 3 {
			t.Errorf("%d requests, want 3 (all attempts)", srv.Len())
		}
		msg := err.Error()
		if !strings.Contains(msg, "502") || !strings.Contains(msg, "Bad Gateway") {
			t.Errorf("error %q names neither the status nor the body", msg)
		}
		if len(msg) > 260 || strings.Contains(msg, "\n") {
			t.Errorf("error is not a short single-line snippet (%d bytes): %q", len(msg), msg)
		}
	})
}

func TestAnthropicStreamCutMidBlock(t *testing.T) {
	full := &wire.Response{Content: []wire.Block{wire.Text("a complete answer")}, StopReason: "end_turn", Usage: wire.Usage{InputTokens: 5, OutputTokens: 3}}
	t.Run("next attempt whole", func(t *testing.T) {
		srv := apitest.NewAnthropic(t, func(n int, _ *apitest.Recorded) apitest.Reply {
			if n == 0 {
				// message_start, content_block_start, first text_delta: cut
				// in the middle of the text block.
				return apitest.Reply{Resp: full, CutAfterEvents: 3}
			}
			return apitest.Reply{Resp: full}
		})
		p, rec := newAnthropic(srv)
		resp, _, err := stream(t, p, simpleRequest())
		if err != nil {
			t.Fatalf("cut stream not retried: %v", err)
		}
		if len(resp.Content) != 1 || resp.Content[0].Text != "a complete answer" {
			t.Errorf("content %+v (a half block from the cut attempt leaked in?)", resp.Content)
		}
		if srv.Len() != 2 || len(rec.sleeps()) != 1 {
			t.Errorf("%d requests, %d sleeps; want 2 and 1", srv.Len(), len(rec.sleeps()))
		}
	})
	t.Run("every attempt cut", func(t *testing.T) {
		srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
			return apitest.Reply{Resp: full, CutAfterEvents: 3}
		})
		p, _ := newAnthropic(srv)
		_, _, err := stream(t, p, simpleRequest())
		var ae *wire.APIError
		if !errors.As(err, &ae) || !ae.Retryable {
			t.Fatalf("error %#v, want a retryable APIError", err)
		}
		if srv.Len() != 3 {
			t.Errorf("%d requests, want 3", srv.Len())
		}
	})
	t.Run("cut before message_stop", func(t *testing.T) {
		// Every block complete, only message_delta and message_stop
		// missing: still not a whole message.
		srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
			return apitest.Reply{Resp: full, CutAfterEvents: 5}
		})
		p, _ := newAnthropic(srv)
		if _, _, err := stream(t, p, simpleRequest()); err == nil {
			t.Fatal("a stream without message_stop was accepted")
		}
	})
}

func TestAnthropicEmptyBody(t *testing.T) {
	srv := apitest.NewAnthropic(t, func(n int, _ *apitest.Recorded) apitest.Reply {
		if n == 0 {
			return apitest.Reply{} // 200, no body, no content type
		}
		return apitest.Reply{Resp: apitest.TextResponse("second time", wire.Usage{})}
	})
	p, _ := newAnthropic(srv)
	resp, _, err := stream(t, p, simpleRequest())
	if err != nil {
		t.Fatalf("empty 200 body not retried: %v", err)
	}
	if resp.Content[0].Text != "second time" || srv.Len() != 2 {
		t.Errorf("answer %+v after %d requests", resp.Content, srv.Len())
	}

	srv = apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply { return apitest.Reply{} })
	p, _ = newAnthropic(srv)
	_, _, err = stream(t, p, simpleRequest())
	var ae *wire.APIError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("error %v, want an APIError saying the response was empty", err)
	}
}

func TestAnthropicJSONReply(t *testing.T) {
	srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
		return apitest.Reply{JSON: true, Resp: &wire.Response{
			Content: []wire.Block{
				wire.Text("plain json"),
				{Type: wire.TypeToolUse, ID: "toolu_9", Name: "skill", Input: json.RawMessage(`{"name":"x"}`)},
			},
			StopReason: "tool_use",
			Usage:      wire.Usage{InputTokens: 7, OutputTokens: 8, CacheReadInputTokens: 9},
		}}
	})
	p, _ := newAnthropic(srv)
	resp, _, err := stream(t, p, simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 2 || resp.Content[0].Text != "plain json" || resp.Content[1].Name != "skill" ||
		string(resp.Content[1].Input) != `{"name":"x"}` || resp.Content[1].BadInput {
		t.Errorf("content %+v", resp.Content)
	}
	if resp.StopReason != "tool_use" || resp.Usage != (wire.Usage{InputTokens: 7, OutputTokens: 8, CacheReadInputTokens: 9}) {
		t.Errorf("stop %q usage %+v", resp.StopReason, resp.Usage)
	}
}

func TestAnthropicToolInputCutOff(t *testing.T) {
	srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
		r := apitest.ToolResponse("toolu_2", "shell", json.RawMessage(`{"command":"echo hel`), wire.Usage{})
		r.StopReason = "max_tokens"
		return apitest.Reply{Resp: r}
	})
	p, _ := newAnthropic(srv)
	resp, _, err := stream(t, p, simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 1 {
		t.Fatalf("content %+v", resp.Content)
	}
	b := resp.Content[0]
	if !b.BadInput || string(b.Input) != "{}" || b.ID != "toolu_2" || b.Name != "shell" {
		t.Errorf("cut-off tool input: %+v, want BadInput with input {}", b)
	}
}

func TestAnthropicToolWithoutInput(t *testing.T) {
	// A tool called with no arguments streams no (or an empty) partial
	// JSON: that is input {}, not bad input.
	srv := apitest.NewAnthropic(t, func(int, *apitest.Recorded) apitest.Reply {
		return apitest.Reply{Resp: apitest.ToolResponse("toolu_3", "skill", json.RawMessage(""), wire.Usage{})}
	})
	p, _ := newAnthropic(srv)
	resp, _, err := stream(t, p, simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if b := resp.Content[0]; b.BadInput || string(b.Input) != "{}" {
		t.Errorf("empty tool input: %+v", b)
	}
}

func TestAnthropicCancel(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := apitest.NewAnthropic(t, func(_ int, r *apitest.Recorded) apitest.Reply {
		select {
		case <-release:
		case <-r.Context.Done():
		}
		return apitest.Reply{Resp: apitest.TextResponse("late", wire.Usage{})}
	})
	p, rec := newAnthropic(srv)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := p.Stream(ctx, simpleRequest(), nil); errc <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stream did not return after cancel")
	}
	if srv.Len() != 1 || len(rec.sleeps()) != 0 {
		t.Errorf("cancelled call retried: %d requests, %d sleeps", srv.Len(), len(rec.sleeps()))
	}
}

func TestAnthropicErrorEventMidStream(t *testing.T) {
	sse := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	srv := apitest.NewAnthropic(t, func(n int, _ *apitest.Recorded) apitest.Reply {
		if n == 0 {
			return apitest.Reply{Header: map[string]string{"Content-Type": "text/event-stream"}, RawBody: sse}
		}
		return apitest.Reply{Resp: apitest.TextResponse("recovered", wire.Usage{})}
	})
	p, _ := newAnthropic(srv)
	resp, _, err := stream(t, p, simpleRequest())
	if err != nil {
		t.Fatalf("an overloaded_error event was not retried: %v", err)
	}
	if resp.Content[0].Text != "recovered" || srv.Len() != 2 {
		t.Errorf("answer %+v after %d requests", resp.Content, srv.Len())
	}
}

func TestAnthropicRetryAfterIsCapped(t *testing.T) {
	srv := apitest.NewAnthropic(t, func(n int, _ *apitest.Recorded) apitest.Reply {
		if n == 0 {
			return apitest.Reply{Status: 429, Header: map[string]string{"retry-after": "3600"},
				RawBody: `{"type":"error","error":{"type":"rate_limit_error","message":"later"}}`}
		}
		return apitest.Reply{Resp: apitest.TextResponse("ok", wire.Usage{})}
	})
	p, rec := newAnthropic(srv)
	if _, _, err := stream(t, p, simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if s := rec.sleeps(); len(s) != 1 || s[0] != 60*time.Second {
		t.Errorf("sleeps %v, want [1m0s] (retry-after capped by MaxRetryAfter)", s)
	}
}
