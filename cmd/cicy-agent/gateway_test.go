package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/fakellm"
	"github.com/cicy-ai/cicy-agent/pane"
)

// The real Claude Code, Codex and opencode, each in a pane, reach their
// model only through the supervisor's gateway. Two recording proxies, one
// on each side of the gateway, show that what each CLI received is byte for
// byte what the upstream sent, that the ledger holds exactly the usage the
// upstream reported for each pane's requests (side calls flagged aux),
// that the real key reached the upstream but no pane, and that a request
// without a pane's token is refused.
func TestGatewayRealCLIs(t *testing.T) {
	t.Parallel()
	if !haveCLIs() {
		t.Skip("the real CLI agents are not installed (make clis)")
	}
	const realKey = "sk-REAL-gateway-test-0123456789abcdef"
	fake, err := fakellm.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	upstream := startTap(t, fake.URL)
	gwPort := freePort(t)
	client := startTap(t, "http://127.0.0.1:"+gwPort)

	home := filepath.Join(t.TempDir(), "home")
	env := append(os.Environ(), "CICY_HOME="+home,
		"PATH="+cliDir+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+upstream.url, "ANTHROPIC_API_KEY="+realKey,
		"OPENAI_BASE_URL="+upstream.url+"/v1", "OPENAI_API_KEY="+realKey,
		"CICY_GATEWAY_PORT="+gwPort, "CICY_GATEWAY_URL="+client.url)
	t.Cleanup(func() { stopHome(home, env) })

	panes := map[string]string{}
	for _, c := range [][]string{{"claude"}, {"codex", "--model", "fake-model"}, {"opencode", "--model", "fake-model"}} {
		args := append([]string{"create", c[0], "--type", c[0], "--allow-all", "--backend", "pty"}, c[1:]...)
		panes[c[0]] = strings.TrimSpace(runCicy(t, env, args...))
	}
	for agent, id := range panes {
		waitPaneState(t, env, id, "idle", 180*time.Second)
		runCicy(t, env, "dispatch", "--to", id, "gateway "+agent+" [[cache=40/8]] [[shell=echo via-gateway]]")
	}
	for i := 1; i <= len(panes); i++ {
		runCicy(t, env, "wait", strconv.Itoa(i), "--timeout", "120s")
	}

	var rep api.UsageReport
	if err := json.Unmarshal([]byte(runCicy(t, env, "usage", "--by", "pane", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	ups := upstream.all()
	for agent, id := range panes {
		checkLedger(t, agent, id, rep, ups)
	}
	checkSameBytes(t, client.all(), ups)
	if len(ups) == 0 || !strings.Contains(ups[0].header.Get("X-Api-Key")+ups[0].header.Get("Authorization"), realKey) {
		t.Errorf("the upstream did not get the real key")
	}
	checkKeyNowhere(t, home, realKey)
	checkRefused(t, "http://127.0.0.1:"+gwPort)
}

// stopHome shuts the home's supervisor down and kills what is left.
func stopHome(home string, env []string) {
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "shutdown")
	cmd.Env = env
	_ = cmd.Run()
	// With what its panes left running, their cgroups and its socket.
	_ = pane.NewTmuxServer(home, nil).KillServer()
	for _, pid := range paneProcesses(home) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// waitPaneState waits until the pane is in state want (see
// awaitPaneState), showing its screen if it never is.
func waitPaneState(t *testing.T, env []string, id, want string, d time.Duration) {
	t.Helper()
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CICY_HOME="); ok {
			home = v
		}
	}
	if err := awaitPaneState(home, id, want, d); err != nil {
		t.Fatalf("%v:\n%s", err, runCicy(t, env, "screen", id))
	}
}

// freePort is a port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// exchange is one request and answer a tap saw.
type exchange struct {
	path    string
	header  http.Header
	reqBody []byte
	answer  []byte
	status  int
}

// tap is a reverse proxy that keeps every exchange, the answer's bytes
// exactly as they passed.
type tap struct {
	url string
	mu  sync.Mutex
	ex  []*exchange
}

func startTap(t *testing.T, target string) *tap {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &tap{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{DisableCompression: true}
	rp.ModifyResponse = func(resp *http.Response) error {
		x := resp.Request.Context().Value(exchangeKey{}).(*exchange)
		x.status = resp.StatusCode
		resp.Body = &teeBody{ReadCloser: resp.Body, x: x, mu: &r.mu}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		x := &exchange{path: req.URL.Path, header: req.Header.Clone(), reqBody: body}
		r.mu.Lock()
		r.ex = append(r.ex, x)
		r.mu.Unlock()
		rp.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), exchangeKey{}, x)))
	})}
	go srv.Serve(ln) //nolint:errcheck // ends at Close
	t.Cleanup(func() { srv.Close() })
	r.url = "http://" + ln.Addr().String()
	return r
}

// all is a copy of the exchanges so far.
func (r *tap) all() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]exchange, 0, len(r.ex))
	for _, x := range r.ex {
		c := *x
		c.answer = slices.Clone(x.answer)
		out = append(out, c)
	}
	return out
}

type exchangeKey struct{}

type teeBody struct {
	io.ReadCloser
	x  *exchange
	mu *sync.Mutex
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.x.answer = append(b.x.answer, p[:n]...)
	b.mu.Unlock()
	return n, err
}

// checkLedger: the pane's calls and tokens in the ledger are those of its
// upstream exchanges, as read from the upstream's own answers; its side
// calls are counted apart.
func checkLedger(t *testing.T, agent, id string, rep api.UsageReport, ups []exchange) {
	t.Helper()
	var want api.UsageSums
	for _, x := range ups {
		if x.header.Get("X-Cicy-Pane") != id {
			continue
		}
		u := answerUsage(t, x)
		want.Calls++
		want.InputTokens += u.InputTokens
		want.OutputTokens += u.OutputTokens
		want.CacheReadInputTokens += u.CacheReadInputTokens
		want.CacheCreationInputTokens += u.CacheCreationInputTokens
		if isTitleCall(x) {
			want.AuxCalls++
		}
	}
	var got api.UsageSums
	for _, g := range rep.Groups {
		if g.Key == id {
			got = g.UsageSums
		}
	}
	if want.Calls == 0 || got.Calls != want.Calls || got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens ||
		got.CacheReadInputTokens != want.CacheReadInputTokens || got.CacheCreationInputTokens != want.CacheCreationInputTokens || got.AuxCalls != want.AuxCalls {
		t.Errorf("%s (%s): ledger %+v, upstream reported %+v", agent, id, got, want)
	}
	if want.CacheReadInputTokens == 0 {
		t.Errorf("%s: no cache reads reported: the [[cache]] directive did not reach the upstream", agent)
	}
}

// isTitleCall reports a title-generation side call: opencode's title
// agent, Codex's thread title (marked in its turn metadata header).
func isTitleCall(x exchange) bool {
	return bytes.Contains(x.reqBody, []byte("You are a title generator")) ||
		strings.Contains(x.header.Get("X-Codex-Turn-Metadata"), `"thread_source":"thread_title"`)
}

// answerUsage reads an answer's usage from its raw bytes, in Anthropic's
// additive shape, independently of the gateway.
func answerUsage(t *testing.T, x exchange) api.Usage {
	t.Helper()
	var u api.Usage
	for _, data := range sseData(x.answer) {
		var ev struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
			Usage   json.RawMessage `json:"usage"`
			Resp    json.RawMessage `json:"response"`
		}
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "message_start":
			var m struct {
				Usage json.RawMessage `json:"usage"`
			}
			_ = json.Unmarshal(ev.Message, &m)
			mergeAnthropic(&u, m.Usage)
		case ev.Type == "message_delta":
			mergeAnthropic(&u, ev.Usage)
		case ev.Type == "response.completed":
			var r struct {
				Usage json.RawMessage `json:"usage"`
			}
			_ = json.Unmarshal(ev.Resp, &r)
			u = openAIUsage(r.Usage)
		case len(ev.Usage) > 0 && string(ev.Usage) != "null" && ev.Type == "":
			u = openAIUsage(ev.Usage) // a Chat Completions usage chunk
		}
	}
	return u
}

// sseData are the data payloads of an event stream.
func sseData(b []byte) [][]byte {
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			out = append(out, bytes.TrimSpace(d))
		}
	}
	return out
}

// mergeAnthropic sets the fields an Anthropic usage object carries.
func mergeAnthropic(u *api.Usage, raw json.RawMessage) {
	var a map[string]int64
	if json.Unmarshal(raw, &a) != nil {
		return
	}
	for k, dst := range map[string]*int64{"input_tokens": &u.InputTokens, "output_tokens": &u.OutputTokens,
		"cache_read_input_tokens": &u.CacheReadInputTokens, "cache_creation_input_tokens": &u.CacheCreationInputTokens} {
		if v, ok := a[k]; ok {
			*dst = v
		}
	}
}

// openAIUsage maps OpenAI usage (either API) to the additive shape: input
// excludes cached tokens.
func openAIUsage(raw json.RawMessage) api.Usage {
	var w struct {
		Prompt        int64 `json:"prompt_tokens"`
		Completion    int64 `json:"completion_tokens"`
		In            int64 `json:"input_tokens"`
		Out           int64 `json:"output_tokens"`
		PromptDetails struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		InDetails struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	}
	_ = json.Unmarshal(raw, &w)
	in, out, cached := w.Prompt+w.In, w.Completion+w.Out, w.PromptDetails.Cached+w.InDetails.Cached
	return api.Usage{InputTokens: in - cached, OutputTokens: out, CacheReadInputTokens: cached}
}

// checkSameBytes: every answer a CLI got is byte for byte the upstream's
// answer to the same request (but for a usage chunk the gateway asked for
// on the CLI's behalf, which it drops).
func checkSameBytes(t *testing.T, clients, ups []exchange) {
	t.Helper()
	if len(clients) != len(ups) {
		t.Errorf("the CLIs made %d requests, the upstream saw %d", len(clients), len(ups))
	}
	used := map[int]bool{}
	for _, c := range clients {
		i := -1
		for j, u := range ups {
			if !used[j] && sameRequest(c.reqBody, u.reqBody) {
				i = j
				break
			}
		}
		if i < 0 {
			t.Errorf("%s: no upstream request like the CLI's", c.path)
			continue
		}
		used[i] = true
		want := ups[i].answer
		if !bytes.Equal(c.reqBody, ups[i].reqBody) {
			want = dropUsageOnlyChunk(want) // include_usage was added upstream
		}
		if !bytes.Equal(c.answer, want) {
			t.Errorf("%s: the CLI got %d bytes, the upstream sent %d (%d to pass on); first difference at %d", c.path, len(c.answer), len(ups[i].answer), len(want), firstDiff(c.answer, want))
		}
	}
}

// sameRequest compares two request bodies, but for stream_options.
func sameRequest(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return false
	}
	delete(ma, "stream_options")
	delete(mb, "stream_options")
	ja, _ := json.Marshal(ma)
	jb, _ := json.Marshal(mb)
	return bytes.Equal(ja, jb)
}

// dropUsageOnlyChunk removes a Chat Completions chunk with usage and no
// choices from an event stream.
func dropUsageOnlyChunk(b []byte) []byte {
	var out []byte
	for _, ev := range bytes.SplitAfter(b, []byte("\n\n")) {
		if bytes.Contains(ev, []byte(`"choices":[]`)) && bytes.Contains(ev, []byte(`"usage":{`)) {
			continue
		}
		out = append(out, ev...)
	}
	return out
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// checkKeyNowhere: no pane process has the real key in its environment
// (each has a pane token), and no file of the panes' folders or
// workspaces holds it.
func checkKeyNowhere(t *testing.T, home, key string) {
	t.Helper()
	pids := paneProcesses(home)
	if len(pids) == 0 {
		t.Fatal("no pane processes")
	}
	tokens := 0
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue // ended meanwhile
		}
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("process %d of a pane has the real key in its environment", pid)
		}
		if bytes.Contains(b, []byte("cicy-pane-")) {
			tokens++
		}
	}
	if tokens == 0 {
		t.Error("no pane process has a gateway token")
	}
	for _, dir := range []string{filepath.Join(home, "panes"), filepath.Join(home, "workspaces")} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(key)) {
				t.Errorf("%s holds the real key", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkRefused: no token, or one no pane has, is a 401 with a one-line
// reason in the API's own error shape.
func checkRefused(t *testing.T, gw string) {
	t.Helper()
	for _, c := range []struct{ key, want string }{{"", "no pane token"}, {"cicy-pane-0000", "unknown pane token"}} {
		req, _ := http.NewRequest(http.MethodPost, gw+"/v1/messages", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("anthropic-version", "2023-06-01")
		if c.key != "" {
			req.Header.Set("x-api-key", c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(b, &e) != nil || e.Type != "error" ||
			!strings.Contains(e.Error.Message, c.want) || strings.Contains(e.Error.Message, "\n") {
			t.Errorf("key %q: %d %s", c.key, resp.StatusCode, b)
		}
	}
}
