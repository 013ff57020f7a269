package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/fakellm"
)

// dropUsageChunk removes the Chat Completions usage-only chunk from raw
// upstream bytes, as the gateway must when it asked for it.
func dropUsageChunk(raw []byte) []byte {
	var out []byte
	for _, ev := range bytes.SplitAfter(raw, []byte("\n\n")) {
		if bytes.Contains(ev, []byte(`"choices":[]`)) && bytes.Contains(ev, []byte(`"usage":{`)) {
			continue
		}
		out = append(out, ev...)
	}
	return out
}

func TestPassThroughAndUsage(t *testing.T) {
	rg := startRig(t, nil)
	n := 0
	for _, stream := range []bool{false, true} {
		for _, sh := range []shape{
			claudeCode("say hi [[cache=40/5]]", stream),
			codex("say hi [[cache=30]]", stream),
			opencode("say hi [[cache=20]]", stream, true),
			opencode("say hi [[cache=10]]", stream, false),
			geminiCLI("say hi [[cache=15]]", stream),
		} {
			n++
			name := sh.name + map[bool]string{false: "/plain", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) { checkPassThrough(t, rg, sh, stream, n) })
		}
	}
	if s, e := rg.act.started.Load(), rg.act.ended.Load(); s != int32(n) || e != int32(n) {
		t.Errorf("activity started %d ended %d, want %d", s, e, n)
	}
}

// checkPassThrough sends sh as the n-th request and checks the bytes the
// client got, the recorded call and the request the upstream got.
func checkPassThrough(t *testing.T, rg *rig, sh shape, stream bool, n int) {
	resp, got := rg.post(t, sh.path, sh.header, sh.body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	sent := rg.tap.body(t, n)
	wantBytes := sent
	if sh.name == "chat-no-usage" && stream {
		wantBytes = dropUsageChunk(sent)
		if bytes.Equal(wantBytes, sent) {
			t.Fatalf("upstream sent no usage chunk:\n%s", sent)
		}
		if bytes.Contains(got, []byte(`"usage"`)) {
			t.Errorf("the client got the usage chunk it did not ask for:\n%s", got)
		}
	}
	if !bytes.Equal(got, wantBytes) {
		t.Errorf("client bytes differ from upstream bytes\nclient:   %q\nupstream: %q", got, wantBytes)
	}
	if stream && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	checkCall(t, rg.rec.wait(t, n), sh, stream, reported(t, sh.api, sent))
	checkUpstreamRequest(t, rg, sh)
}

// checkCall checks a recorded call against what the upstream reported.
func checkCall(t *testing.T, c Call, sh shape, stream bool, w want) {
	t.Helper()
	if w.cacheRead == 0 {
		t.Fatalf("upstream reported no cache reads: %+v", w)
	}
	if c.Pane != paneID || c.API != sh.api || c.Aux != "" || c.Stream != stream ||
		c.Status != http.StatusOK || c.Err != "" || c.Model != w.model {
		t.Errorf("call %+v (want model %q)", c, w.model)
	}
	if c.InputTokens != w.in || c.OutputTokens != w.out || c.CacheReadTokens != w.cacheRead || c.CacheCreationTokens != w.cacheWrite {
		t.Errorf("tokens in/out/read/write %d/%d/%d/%d, upstream reported %+v",
			c.InputTokens, c.OutputTokens, c.CacheReadTokens, c.CacheCreationTokens, w)
	}
	if c.Latency <= 0 {
		t.Errorf("latency %v", c.Latency)
	}
}

// checkUpstreamRequest checks the last request upstream: the real key in
// the API's header, X-Cicy-Pane, no pane token anywhere, the client's
// query kept, and include_usage added for a streaming chat without it.
func checkUpstreamRequest(t *testing.T, rg *rig, sh shape) {
	t.Helper()
	reqs := rg.tap.fake.Requests()
	r := reqs[len(reqs)-1]
	if got := r.Header.Get("X-Cicy-Pane"); got != paneID {
		t.Errorf("X-Cicy-Pane %q", got)
	}
	checkUpstreamAuth(t, sh, r)
	for k, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, paneToken) {
				t.Errorf("upstream header %s carries the pane token", k)
			}
		}
	}
	if bytes.Contains(r.Body, []byte(paneToken)) {
		t.Errorf("upstream body carries the pane token")
	}
	var body struct {
		Stream        bool `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(r.Body, &body)
	if sh.api == Chat && body.Stream && (body.StreamOptions == nil || !body.StreamOptions.IncludeUsage) {
		t.Errorf("streaming chat went upstream without include_usage: %s", r.Body)
	}
	if sh.name == "chat-no-usage" && !body.Stream && body.StreamOptions != nil {
		t.Errorf("a plain chat request was changed: %s", r.Body)
	}
}

func TestAuxSideCalls(t *testing.T) {
	rg := startRig(t, nil)
	title := opencode("say hi", true, true)
	title.body["messages"] = []m{{"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
		{"role": "user", "content": "Generate a title for this conversation:\n"}, {"role": "user", "content": "say hi\n"}}
	delete(title.body, "tools")

	codexTitle := codex("Generate a concise, single-line task title…\n\nUser prompt:\nsay hi", true)
	codexTitle.header.Set("x-codex-turn-metadata", `{"request_kind":"turn","thread_source":"thread_title"}`)

	quota := claudeCode("quota", false)
	quota.body["max_tokens"] = 1
	quota.body["model"] = "claude-haiku-4-5"

	count := claudeCode("say hi", false)
	count.path = "/v1/messages/count_tokens?beta=true"
	delete(count.body, "stream")

	cicyAux := claudeCode("remember this", true)
	cicyAux.header.Set("X-Cicy-Aux", "memory")

	// Qwen Code's follow-up suggestion offers the turn's tools.
	qwenSuggest := opencode("[SUGGESTION MODE: Suggest what the user might naturally type next.]", true, true)

	// pi's compaction: its summarization system prompt, no tools.
	piCompact := opencode("The messages above are a conversation to summarize.", true, true)
	piCompact.body["messages"] = []m{{"role": "system", "content": "You are a context summarization assistant. Your task is to read a conversation"},
		{"role": "user", "content": "<conversation>say hi</conversation>\n\nThe messages above are a conversation to summarize."}}
	delete(piCompact.body, "tools")

	cases := []struct {
		sh  shape
		aux string
	}{{title, "title"}, {codexTitle, "title"}, {quota, "quota"}, {count, "count_tokens"}, {cicyAux, "memory"},
		{qwenSuggest, "suggestion"}, {piCompact, "compact"}, {claudeCode("say hi", true), ""}}
	for i, c := range cases {
		resp, got := rg.post(t, c.sh.path, c.sh.header, c.sh.body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d: status %d: %s", i, resp.StatusCode, got)
		}
		call := rg.rec.wait(t, i+1)
		if call.Aux != c.aux {
			t.Errorf("case %d (%s): aux %q, want %q", i, c.sh.name, call.Aux, c.aux)
		}
	}
	reqs := rg.tap.fake.Requests()
	if reqs[4].Header.Get("X-Cicy-Aux") != "" {
		t.Errorf("X-Cicy-Aux went upstream")
	}
	if reqs[3].Path != "/v1/messages/count_tokens?beta=true" {
		t.Errorf("count_tokens went to %q", reqs[3].Path)
	}
	if s := rg.act.started.Load(); s != 1 {
		t.Errorf("activity started %d times, want once (aux calls are not the main loop)", s)
	}
}

func TestRefusedWithoutToken(t *testing.T) {
	rg := startRig(t, nil)
	for _, sh := range []shape{claudeCode("hi", true), codex("hi", true), opencode("hi", false, true), geminiCLI("hi", true)} {
		for _, tok := range []string{"", "wrong-token"} {
			h := sh.header.Clone()
			h.Del("x-api-key")
			h.Del("x-goog-api-key")
			h.Del("Authorization")
			if tok != "" {
				h.Set("Authorization", "Bearer "+tok)
			}
			resp, got := rg.post(t, sh.path, h, sh.body)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("%s token %q: status %d", sh.name, tok, resp.StatusCode)
			}
			if bytes.Count(got, []byte("\n")) != 0 || !bytes.Contains(got, []byte("pane token")) {
				t.Errorf("reason %s", got)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
					Status  string `json:"status"`
				} `json:"error"`
			}
			if err := json.Unmarshal(got, &e); err != nil || e.Error.Message == "" {
				t.Fatalf("error body %s: %v", got, err)
			}
			if (sh.api == Gemini) != (e.Error.Status == "UNAUTHENTICATED") {
				t.Errorf("%s: error shape %s", sh.name, got)
			}
			if (sh.api == Anthropic) != (e.Type == "error" && e.Error.Type == "authentication_error") {
				t.Errorf("%s: error shape %s", sh.name, got)
			}
		}
	}
	if n := len(rg.tap.fake.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the upstream", n)
	}
	if n := len(rg.rec.all()); n != 0 {
		t.Errorf("%d refused requests recorded", n)
	}
}

func TestAuthTokenCredentialAndHeaders(t *testing.T) {
	rg := startRig(t, map[string]string{"ANTHROPIC_AUTH_TOKEN": anthKey})
	sh := claudeCode("hi", false)
	sh.header.Set("Connection", "X-Hop")
	sh.header.Set("X-Hop", "1")
	sh.header.Set("Proxy-Authorization", "Basic abc")
	sh.header.Set("X-Cicy-Pane", "w-999")
	sh.header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	if resp, got := rg.post(t, sh.path, sh.header, sh.body); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	r := rg.tap.fake.Requests()[0]
	if r.Header.Get("Authorization") != "Bearer "+anthKey || r.Header.Get("X-Api-Key") != "" {
		t.Errorf("auth token not sent as Bearer")
	}
	for _, h := range []string{"X-Hop", "Proxy-Authorization"} {
		if r.Header.Get(h) != "" {
			t.Errorf("hop-by-hop header %s forwarded", h)
		}
	}
	if r.Header.Get("X-Cicy-Pane") != paneID {
		t.Errorf("X-Cicy-Pane %q: the client's own was kept", r.Header.Get("X-Cicy-Pane"))
	}
	if r.Header.Get("Anthropic-Beta") == "" || r.Header.Get("X-Claude-Code-Session-Id") == "" {
		t.Errorf("end-to-end headers lost: %v", r.Header)
	}
}

func TestUpstreamErrorPassesThrough(t *testing.T) {
	rg := startRig(t, nil)
	for i, sh := range []shape{claudeCode("[[status=529]]", true), codex("[[status=500]]", true), opencode("[[status=429]]", true, false), geminiCLI("[[status=503]]", true)} {
		resp, got := rg.post(t, sh.path, sh.header, sh.body)
		sent := rg.tap.body(t, i+1)
		if resp.StatusCode < 400 || !bytes.Equal(got, sent) {
			t.Errorf("%s: status %d body %q, upstream sent %q", sh.name, resp.StatusCode, got, sent)
		}
		if c := rg.rec.wait(t, i+1); c.Status != resp.StatusCode {
			t.Errorf("recorded status %d", c.Status)
		}
	}
	if n := len(rg.tap.fake.Requests()); n != 4 {
		t.Errorf("upstream saw %d requests: the gateway retried", n)
	}
}

// An upstream that echoes the key it got in its error (fakellm's 401 does,
// as some proxies do) never shows the real key to the client.
func TestEchoedKeyTakenOutOfErrors(t *testing.T) {
	const key = "sk-ant-REAL-echoed-0123456789"
	rg := startRig(t, map[string]string{"ANTHROPIC_API_KEY": key, "OPENAI_API_KEY": key, "GEMINI_API_KEY": key})
	for i, sh := range []shape{claudeCode("[[status=401]]", true), codex("[[status=401]]", false), geminiCLI("[[status=401]]", true)} {
		resp, got := rg.post(t, sh.path, sh.header, sh.body)
		sent := rg.tap.body(t, i+1)
		if !bytes.Contains(sent, []byte(key)) {
			t.Fatalf("%s: the fake upstream did not echo the key: %q", sh.name, sent)
		}
		if resp.StatusCode != 401 || bytes.Contains(got, []byte(key)) || !bytes.Contains(got, []byte("[redacted]")) {
			t.Errorf("%s: status %d body %q", sh.name, resp.StatusCode, got)
		}
	}
}

// deadUpstream is an address nothing listens on. Not a port a test
// listened on and closed: the system hands that one to the next listener,
// maybe another package's test server running alongside (a closed port
// answered TestAnswerUnreachable as another test's gateway). Port 1 is
// below the range ports are picked from for a listener on port 0.
const deadUpstream = "http://127.0.0.1:1"

func TestDeadUpstreamIs502(t *testing.T) {
	rg := startRigTo(t, startTap(t), Upstreams{Anthropic: deadUpstream, OpenAI: deadUpstream + "/v1"}, nil)
	for i, sh := range []shape{claudeCode("hi", true), opencode("hi", true, true)} {
		resp, got := rg.post(t, sh.path, sh.header, sh.body)
		if resp.StatusCode != http.StatusBadGateway || !bytes.Contains(got, []byte("upstream unreachable")) {
			t.Errorf("%s: status %d body %s", sh.name, resp.StatusCode, got)
		}
		if strings.Contains(string(got), deadUpstream) {
			t.Errorf("502 body names the upstream URL: %s", got)
		}
		if c := rg.rec.wait(t, i+1); c.Status != http.StatusBadGateway || c.Err == "" {
			t.Errorf("recorded %+v", c)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openStream starts a held stream through the gateway and returns once
// the first event has arrived; cancel drops the client.
func openStream(t *testing.T, rg *rig, sh shape) (cancel func(), first string) {
	t.Helper()
	data, _ := json.Marshal(sh.body)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rg.gw.URL()+sh.path, bytes.NewReader(data))
	req.Header = sh.header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return cancel, line
}

func TestClientGoneEndsUpstream(t *testing.T) {
	rg := startRig(t, nil)
	cancel, first := openStream(t, rg, claudeCode("[[delay=60]] hi", true))
	if !strings.HasPrefix(first, "event: message_start") {
		t.Fatalf("first line %q", first)
	}
	if rg.tap.open.Load() != 1 {
		t.Fatalf("upstream requests open: %d; the upstream's proxy logged %q; the gateway's log:\n%s", rg.tap.open.Load(), rg.tap.errs.String(), rg.logs.String())
	}
	cancel()
	waitFor(t, "upstream request to end", func() bool { return rg.tap.open.Load() == 0 })
	c := rg.rec.wait(t, 1)
	w := reported(t, Anthropic, rg.tap.body(t, 1))
	if c.Err == "" || c.InputTokens != w.in || c.InputTokens == 0 || c.Status != http.StatusOK {
		t.Errorf("call %+v, upstream reported %+v", c, w)
	}
	if rg.act.ended.Load() != 1 {
		t.Errorf("activity not ended")
	}
}

func TestCloseEndsEverything(t *testing.T) {
	tp := startTap(t)
	rg := startRigTo(t, tp, Upstreams{Anthropic: tp.url, OpenAI: tp.url + "/v1"}, nil)
	openStream(t, rg, codex("[[delay=60]] hi", true))
	done := make(chan error)
	go func() { done <- rg.gw.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung with a stream open")
	}
	waitFor(t, "upstream request to end", func() bool { return tp.open.Load() == 0 })
	if c := rg.rec.wait(t, 1); c.Err == "" {
		t.Errorf("cut stream recorded as complete: %+v", c)
	}
}

func TestNewAddress(t *testing.T) {
	rg := startRig(t, nil)
	_, err := New(Config{Addr: rg.gw.Addr(), Panes: panes{}, Usage: &recorder{}})
	if err == nil || !strings.Contains(err.Error(), rg.gw.Addr()) || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("taken port: %v", err)
	}
	for _, addr := range []string{"0.0.0.0:0", "localhost:0", ":0", "192.168.1.1:80"} {
		if g, err := New(Config{Addr: addr, Panes: panes{}, Usage: &recorder{}}); err == nil {
			g.Close()
			t.Errorf("%s accepted", addr)
		}
	}
	if _, err := New(Config{}); err == nil {
		t.Errorf("no Panes/Usage accepted")
	}
}

func TestPreflightAndUnknownRoute(t *testing.T) {
	rg := startRig(t, nil)
	resp, err := http.Head(rg.gw.URL() + "/")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD /: %v %v", resp, err)
	}
	resp, got := rg.post(t, "/v1/embeddings", http.Header{"Authorization": {"Bearer " + paneToken}}, m{})
	if resp.StatusCode != http.StatusNotFound || !bytes.Contains(got, []byte(`"error"`)) {
		t.Errorf("unknown route: %d %s", resp.StatusCode, got)
	}
}

// checkUpstreamAuth checks the upstream request r carries the real key in
// the API's header, and the path the client asked for.
func checkUpstreamAuth(t *testing.T, sh shape, r fakellm.Request) {
	t.Helper()
	switch sh.api {
	case Anthropic:
		if r.Header.Get("X-Api-Key") != anthKey || r.Header.Get("Authorization") != "" {
			t.Errorf("upstream auth: x-api-key set %v, authorization %q", r.Header.Get("X-Api-Key") != "", r.Header.Get("Authorization"))
		}
		if r.Path != "/v1/messages?beta=true" {
			t.Errorf("upstream path %q", r.Path)
		}
	case Gemini:
		if r.Header.Get("X-Goog-Api-Key") != geminiKey || r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			t.Errorf("upstream auth wrong")
		}
		if r.Path != sh.path {
			t.Errorf("upstream path %q, want %q", r.Path, sh.path)
		}
	default:
		if r.Header.Get("Authorization") != "Bearer "+openaiKey || r.Header.Get("X-Api-Key") != "" {
			t.Errorf("upstream auth wrong")
		}
	}
}

// An upstream that echoes the key inside a streamed error (an event:
// error of Messages or Responses, a Chat Completions chunk's error) never
// shows the real key to the client, nor in the answer the gateway tells.
func TestEchoedKeyTakenOutOfStreamedErrors(t *testing.T) {
	const key = "sk-REAL-streamed-<echo>-0123456789"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("x-api-key") + r.Header.Get("x-goog-api-key") + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		msg, _ := json.Marshal("invalid key " + got)
		w.Header().Set("Content-Type", "text/event-stream")
		switch {
		case strings.Contains(r.URL.Path, "/messages"):
			fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\n")
			fmt.Fprintf(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":%s}}\n\n", msg)
		case strings.Contains(r.URL.Path, "/responses"):
			fmt.Fprintf(w, "event: error\ndata: {\"type\":\"error\",\"message\":%s}\n\n", msg)
		default: // Chat Completions, Gemini
			fmt.Fprintf(w, "data: {\"error\":{\"message\":%s}}\n\n", msg)
		}
	}))
	t.Cleanup(up.Close)
	rg := startRigTo(t, startTap(t), Upstreams{Anthropic: up.URL, OpenAI: up.URL + "/v1", Gemini: up.URL},
		map[string]string{"ANTHROPIC_API_KEY": key, "OPENAI_API_KEY": key, "GEMINI_API_KEY": key})
	for _, sh := range []shape{claudeCode("hi", true), codex("hi", true), opencode("hi", true, true), geminiCLI("hi", true)} {
		resp, got := rg.post(t, sh.path, sh.header, sh.body)
		if resp.StatusCode != 200 || bytes.Contains(got, []byte("REAL")) || !bytes.Contains(got, []byte("[redacted]")) {
			t.Errorf("%s: status %d body %q", sh.name, resp.StatusCode, got)
		}
		if a, ok := rg.act.last(); !ok || strings.Contains(a.Error, "REAL") || !strings.Contains(a.Error, "[redacted]") {
			t.Errorf("%s: the answer told: %+v", sh.name, a)
		}
	}
}

// An upstream (or a proxy before it) that answers 200 with a plain JSON
// body echoing the key — an error some put in a successful answer, a
// debug echo of the request — never shows the real key to the client.
func TestEchoedKeyTakenOutOfPlainAnswers(t *testing.T) {
	const key = "sk-REAL-plain-<echo>-0123456789"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("x-api-key") + r.Header.Get("x-goog-api-key") + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		msg, _ := json.Marshal("you sent " + got)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"error":{"message":%s},"padding":"%s"}`, msg, strings.Repeat("x", 100<<10))
	}))
	t.Cleanup(up.Close)
	rg := startRigTo(t, startTap(t), Upstreams{Anthropic: up.URL, OpenAI: up.URL + "/v1", Gemini: up.URL},
		map[string]string{"ANTHROPIC_API_KEY": key, "OPENAI_API_KEY": key, "GEMINI_API_KEY": key})
	for _, sh := range []shape{claudeCode("hi", false), codex("hi", false), opencode("hi", false, false), geminiCLI("hi", false)} {
		resp, got := rg.post(t, sh.path, sh.header, sh.body)
		if resp.StatusCode != 200 || bytes.Contains(got, []byte("REAL")) || !bytes.Contains(got, []byte("[redacted]")) {
			t.Errorf("%s: status %d body %.200q", sh.name, resp.StatusCode, got)
		}
	}
}
