package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// canned is an upstream that answers every request with one status,
// content type and body; cut ends the body mid-answer (the connection is
// closed after it).
type canned struct {
	status int
	ctype  string
	body   string
	cut    bool
}

func (c canned) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", c.ctype)
	if c.cut {
		w.Header().Set("Content-Length", "1000000") // more than will come
	}
	w.WriteHeader(c.status)
	_, _ = io.WriteString(w, c.body)
	if c.cut {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // the upstream breaks off
	}
}

// answerOf sends one main-loop request of api through a gateway in front
// of up and returns the answer the gateway told Activity.
func answerOf(t *testing.T, api API, stream bool, up http.Handler) Answer {
	t.Helper()
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	gw, act := answerGateway(t, srv.URL)
	path := map[API]string{Anthropic: "/v1/messages", Chat: "/v1/chat/completions", Responses: "/v1/responses"}[api]
	body := `{"model":"m","max_tokens":100,"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
		`,"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`
	req, _ := http.NewRequest(http.MethodPost, gw.URL()+path, strings.NewReader(body))
	req.Header.Set("x-api-key", paneToken)
	req.Header.Set("Authorization", "Bearer "+paneToken)
	resp, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return act.waitEnd(t)
}

// answerGateway is a gateway in front of the upstream at url (both APIs),
// telling act of its main-loop requests.
func answerGateway(t *testing.T, url string) (*Gateway, *activity) {
	t.Helper()
	l := logrus.New()
	l.SetOutput(io.Discard)
	act := &activity{}
	gw, err := New(Config{
		Upstreams:  Upstreams{Anthropic: url, OpenAI: url + "/v1"},
		Credential: func(string) string { return "sk-real" },
		Panes:      panes{paneToken: paneID},
		Usage:      &recorder{},
		Activity:   act,
		Log:        logrus.NewEntry(l),
	})
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, gw)
	return gw, act
}

// waitEnd waits until a request's end is told and returns its answer.
func (a *activity) waitEnd(t *testing.T) Answer { t.Helper(); return a.waitEnded(t, 1) }

// waitEnded waits until n requests' ends are told (the gateway tells the
// end after it records the call) and returns the newest answer.
func (a *activity) waitEnded(t *testing.T, n int) Answer {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); int(a.ended.Load()) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d request ends told, want %d", a.ended.Load(), n)
		}
	}
	ans, _ := a.last()
	return ans
}

const sse = "text/event-stream"

func TestAnswers(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("word ", (1<<20)/5) // a 1 MB answer
	for _, tc := range []struct {
		name   string
		api    API
		stream bool
		up     canned
		text   string // the answer's text (its start, for big)
		tools  int
		err    string // a part of the failure, "" for none
		cut    int    // bytes left out
	}{
		{name: "anthropic stream", api: Anthropic, stream: true, up: canned{200, sse,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":3}}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"All \"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"done.\"}}\n\n" +
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", false}, text: "All done."},
		{name: "anthropic stream, tool call only", api: Anthropic, stream: true, up: canned{200, sse,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"content\":[]}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{}}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", false}, tools: 1},
		{name: "anthropic stream error event", api: Anthropic, stream: true, up: canned{200, sse,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"content\":[]}}\n\n" +
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", false},
			err: "overloaded_error: Overloaded"},
		{name: "anthropic stream cut mid-answer", api: Anthropic, stream: true, up: canned{200, sse,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"content\":[]}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half\"}}\n\n", true},
			text: "Half", err: "upstream broke off"},
		{name: "anthropic plain", api: Anthropic, up: canned{200, "application/json",
			`{"model":"m","content":[{"type":"text","text":"Plain "},{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"text","text":"answer"}],"usage":{"input_tokens":1}}`, false},
			text: "Plain answer", tools: 1},
		{name: "anthropic 429", api: Anthropic, up: canned{429, "application/json",
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`, false},
			err: "the upstream answered 429: rate_limit_error: Number of requests has exceeded your rate limit"},
		{name: "anthropic 1 MB answer", api: Anthropic, up: canned{200, "application/json",
			`{"model":"m","content":[{"type":"text","text":"` + big + `"}]}`, false},
			text: big[:MaxAnswerText], cut: len(big) - MaxAnswerText},
		{name: "chat stream", api: Chat, stream: true, up: canned{200, sse,
			"data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
				"data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Chat \"}}]}\n\n" +
				"data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer\"},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: {\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n" +
				"data: [DONE]\n\n", false}, text: "Chat answer"},
		{name: "chat stream tool calls", api: Chat, stream: true, up: canned{200, sse,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n" +
				"data: [DONE]\n\n", false}, tools: 2},
		{name: "chat stream without its end", api: Chat, stream: true, up: canned{200, sse,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Trunc\"}}]}\n\n", false},
			text: "Trunc", err: "before its answer was complete"},
		{name: "chat plain", api: Chat, up: canned{200, "application/json",
			`{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Chat plain"},"finish_reason":"stop"}]}`, false},
			text: "Chat plain"},
		{name: "chat 401", api: Chat, up: canned{401, "application/json",
			`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, false},
			err: "the upstream answered 401: invalid_request_error: Incorrect API key provided"},
		{name: "responses stream", api: Responses, stream: true, up: canned{200, sse,
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"output\":[]}}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Resp\"}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"onses\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"model\":\"m\",\"output\":[" +
				"{\"type\":\"reasoning\",\"summary\":[]},{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Responses\"}]}]," +
				"\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n", false}, text: "Responses"},
		{name: "responses stream function call", api: Responses, stream: true, up: canned{200, sse,
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"name\":\"shell\",\"arguments\":\"{}\",\"call_id\":\"c\"}]}}\n\n", false},
			tools: 1},
		{name: "responses failed", api: Responses, stream: true, up: canned{200, sse,
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"output\":[],\"error\":{\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota\"}}}\n\n", false},
			err: "insufficient_quota: You exceeded your current quota"},
		{name: "responses error event", api: Responses, stream: true, up: canned{200, sse,
			"event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down\"}\n\n", false},
			err: "rate_limit_exceeded: Slow down"},
		{name: "responses plain", api: Responses, up: canned{200, "application/json",
			`{"id":"r","model":"m","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Plain resp"}]}]}`, false},
			text: "Plain resp"},
		{name: "responses 500 of another shape", api: Responses, up: canned{500, "text/html", "<html>bad gateway</html>", false},
			err: "the upstream answered 500: <html>bad gateway</html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := answerOf(t, tc.api, tc.stream, tc.up)
			if a.Text != tc.text || a.ToolCalls != tc.tools || a.Cut != tc.cut {
				t.Errorf("text %.60q (%d bytes, %d cut), %d tool calls; want %.60q (%d bytes, %d cut), %d", a.Text, len(a.Text), a.Cut, a.ToolCalls, tc.text, len(tc.text), tc.cut, tc.tools)
			}
			if tc.err == "" && a.Error != "" || !strings.Contains(a.Error, tc.err) || a.Failed() != (tc.err != "") {
				t.Errorf("error %q (failed %v), want one holding %q", a.Error, a.Failed(), tc.err)
			}
			if a.Cancelled || a.Started.IsZero() || a.Ended.Before(a.Started) {
				t.Errorf("answer %+v", a)
			}
			if strings.Contains(a.Error, "sk-real") {
				t.Errorf("the key in the error: %q", a.Error)
			}
		})
	}
}

// TestAnswerUnreachable: a connection error is the request's failure.
func TestAnswerUnreachable(t *testing.T) {
	t.Parallel()
	gw, act := answerGateway(t, deadUpstream)
	req, _ := http.NewRequest(http.MethodPost, gw.URL()+"/v1/messages", strings.NewReader(`{"model":"m","messages":[]}`))
	req.Header.Set("x-api-key", paneToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if a := act.waitEnd(t); !a.Failed() || !strings.Contains(a.Error, "could not be reached") || a.Status != http.StatusBadGateway {
		t.Fatalf("answer %+v", a)
	}
}

// holdOpen is an upstream that sends a whole stream, then keeps the
// connection open until the client goes.
type holdOpen struct{ body string }

func (h holdOpen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", sse)
	_, _ = io.WriteString(w, h.body)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestAnswerClientHangsUpAfterTheEnd: an agent that reads the stream's
// last event and hangs up before the upstream closes it (Codex does) had
// the whole answer; one that hangs up before the end cancelled it.
func TestAnswerClientHangsUpAfterTheEnd(t *testing.T) {
	t.Parallel()
	whole := "event: response.output_text.delta\ndata: {\"delta\":\"Hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\"}]}]}}\n\n"
	for _, tc := range []struct {
		name, body, until string
		cancelled         bool
		text              string
	}{
		{"after the end", whole, "response.completed", false, "Hi there"},
		{"before the end", "event: response.output_text.delta\ndata: {\"delta\":\"Hi\"}\n\n", "Hi", true, "Hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(holdOpen{tc.body})
			t.Cleanup(srv.Close)
			gw, act := answerGateway(t, srv.URL)
			req, _ := http.NewRequest(http.MethodPost, gw.URL()+"/v1/responses", strings.NewReader(`{"model":"m","stream":true,"input":"hi"}`))
			req.Header.Set("Authorization", "Bearer "+paneToken)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			buf := make([]byte, 4096)
			for !strings.Contains(string(got), tc.until) {
				n, err := resp.Body.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					t.Fatalf("read: %v (%q)", err, got)
				}
			}
			resp.Body.Close() // hang up
			if a := act.waitEnd(t); a.Cancelled != tc.cancelled || a.Failed() || a.Text != tc.text {
				t.Fatalf("answer %+v", a)
			}
		})
	}
}
