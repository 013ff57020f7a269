package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

func mustParse(t *testing.T, doc string) *ScriptRules {
	t.Helper()
	s, err := ParseScript([]byte(doc))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	return s
}

// userReq is a main-turn request whose last user message holds blocks.
func userReq(pane string, blocks ...wire.Block) *wire.Request {
	return &wire.Request{
		Model:  "m",
		System: []wire.Block{wire.Text("You are the support agent.")},
		Messages: []wire.Message{
			{Role: wire.RoleUser, Content: []wire.Block{wire.Text("earlier")}},
			{Role: wire.RoleAssistant, Content: []wire.Block{wire.Text("ok")}},
			{Role: wire.RoleUser, Content: blocks},
		},
		PaneID: pane,
	}
}

func textOf(resp *wire.Response) string {
	var sb strings.Builder
	for _, b := range resp.Content {
		if b.Type == wire.TypeText {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

const matchingRules = `
rules:
  - match: {aux: compact}
    reply: {text: "SUMMARY"}
  - match: {aux: "*", last_user: "^remember"}
    reply: {text: "any-aux"}
  - match: {tool_result: true}
    reply: {text: "saw result: {{tool_result}}"}
  - match: {pane: "^w-"}
    reply: {text: "worker {{pane}}"}
  - match: {system: "planner"}
    reply: {text: "planning"}
  - match: {last_user: "(?i)^build (\\w+) for (\\w+)"}
    reply: {text: "building {{1}} for {{2}} ({{3}}) from '{{last_user}}'"}
  - match: {last_user: "^hello"}
    reply: {text: "first hello"}
  - match: {last_user: "hello"}
    reply: {text: "second hello"}
`

func TestScriptMatching(t *testing.T) {
	planner := userReq("m-1", wire.Text("anything"))
	planner.System = []wire.Block{wire.Text("intro"), wire.Text("You are the planner.")}
	withAux := func(aux string, r *wire.Request) *wire.Request { r.Aux = aux; return r }

	for _, tc := range []struct {
		name string
		req  *wire.Request
		want string
	}{
		{"aux compact", withAux("compact", userReq("m-1", wire.Text("hello"))), "SUMMARY"},
		{"aux star matches aux", withAux("memory", userReq("m-1", wire.Text("remember this"))), "any-aux"},
		{"aux star matches main", userReq("m-1", wire.Text("remember this")), "any-aux"},
		{"empty aux skips aux requests", withAux("memory", userReq("m-1", wire.Text("hello"))), ""},
		{"tool_result present", userReq("w-1", wire.ToolResult("toolu_1", "42 files", false)), "saw result: 42 files"},
		{"pane regex", userReq("w-2", wire.Text("do it")), "worker w-2"},
		{"system regex", planner, "planning"},
		{"capture groups", userReq("m-1", wire.Text("Build api for linux")), "building api for linux () from 'Build api for linux'"},
		{"first match wins", userReq("m-1", wire.Text("hello world")), "first hello"},
		{"later rule", userReq("m-1", wire.Text("say hello")), "second hello"},
		{"role and memories excluded", userReq("m-1",
			wire.Text("<role>\nyou are helpful\n</role>"), wire.Text("hello again"), wire.Text("<memories>\nlikes tea\n</memories>")),
			"first hello"},
		{"a CLI's tagged context excluded", userReq("m-1",
			wire.Text("<system-reminder>\nContents of CLAUDE.md\n</system-reminder>\n"), wire.Text(" <environment_context cwd=\"/w\"></environment_context>"),
			wire.Text("hello there")),
			"first hello"},
		{"text that only looks tagged is kept", userReq("m-1", wire.Text("<b>bold</i> hello")), "second hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, matchingRules)
			resp, err := s.Respond(tc.req, nil)
			if tc.want == "" {
				var ae *wire.APIError
				if !errors.As(err, &ae) {
					t.Fatalf("want a no-match error, got %v, %+v", err, resp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(resp); got != tc.want {
				t.Fatalf("text %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScriptToolResultFalse(t *testing.T) {
	s := mustParse(t, `
rules:
  - match: {tool_result: false}
    reply: {text: "fresh"}
  - reply: {text: "after tools"}
`)
	for _, tc := range []struct {
		req  *wire.Request
		want string
	}{
		{userReq("p", wire.Text("hi")), "fresh"},
		{userReq("p", wire.ToolResult("t", "out", false), wire.Text("note")), "after tools"},
	} {
		resp, err := s.Respond(tc.req, nil)
		if err != nil || textOf(resp) != tc.want {
			t.Fatalf("got %v %v, want %q", resp, err, tc.want)
		}
	}
}

func TestScriptLastToolResultAndLastUserText(t *testing.T) {
	s := mustParse(t, `
rules:
  - reply: {text: "[{{last_user}}] [{{tool_result}}] [{{9}}]"}
`)
	req := userReq("p", wire.ToolResult("a", "first", false), wire.Text("one"), wire.ToolResult("b", "second", true), wire.Text("two"))
	resp, err := s.Respond(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := textOf(resp), "[one\n\ntwo] [second] []"; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
}

func TestScriptToolOutput(t *testing.T) {
	s := mustParse(t, `
rules:
  - match: {tool_output: '(?s)Output:\n(\w+) (\d+)'}
    reply: {text: "{{o1}} is {{o2}}{{o3}}"}
  - match: {tool_result: true}
    reply: {text: "other output"}
  - reply: {text: "no tool"}
`)
	for _, tc := range []struct {
		req  *wire.Request
		want string
	}{
		{userReq("p", wire.ToolResult("t", "Wall time: 1s\nOutput:\nanswer 42\n", false)), "answer is 42"},
		{userReq("p", wire.ToolResult("t", "answer 42", false)), "other output"},
		{userReq("p", wire.Text("Output:\nanswer 42")), "no tool"},
	} {
		resp, err := s.Respond(tc.req, nil)
		if err != nil || textOf(resp) != tc.want {
			t.Errorf("got %v %v, want %q", resp, err, tc.want)
		}
	}
	if _, err := ParseScript([]byte("rules:\n  - match: {tool_output: '('}\n")); err == nil || !strings.Contains(err.Error(), "match.tool_output") {
		t.Errorf("a bad tool_output regex: %v", err)
	}
}

func TestScriptTimes(t *testing.T) {
	s := mustParse(t, `
rules:
  - times: 2
    error: {status: 529, type: overloaded_error, message: busy}
  - reply: {text: "done"}
`)
	req := userReq("p", wire.Text("hi"))
	for i, wantErr := range []bool{true, true, false, false} {
		resp, err := s.Respond(req, nil)
		if (err != nil) != wantErr {
			t.Fatalf("call %d: err %v, want error %v", i, err, wantErr)
		}
		if !wantErr && textOf(resp) != "done" {
			t.Fatalf("call %d: text %q", i, textOf(resp))
		}
	}
}

func TestScriptNoMatch(t *testing.T) {
	s := mustParse(t, `
rules:
  - match: {last_user: "^never$"}
    reply: {text: "x"}
`)
	long := strings.Repeat("é", 100) + "\"tail"
	_, err := s.Respond(userReq("p", wire.Text(long)), nil)
	var ae *wire.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("want *wire.APIError, got %T %v", err, err)
	}
	want := `no script rule matches this request (last user text: "` + strings.Repeat("é", 80) + `")`
	if ae.Status != 400 || ae.Type != "invalid_request_error" || ae.Retryable || ae.Message != want {
		t.Fatalf("got %+v, want 400 invalid_request_error, not retryable, message %q", ae, want)
	}
}

func TestScriptErrorRules(t *testing.T) {
	for _, tc := range []struct {
		yaml      string
		status    int
		typ       string
		retryable bool
		after     float64
	}{
		{"{status: 529, type: overloaded_error, message: Overloaded}", 529, "overloaded_error", true, 0},
		{"{status: 429, type: rate_limit_error, retry_after: 3}", 429, "rate_limit_error", true, 3},
		{"{status: 500, type: api_error}", 500, "api_error", true, 0},
		{"{status: 408}", 408, "", true, 0},
		{"{status: 409}", 409, "", true, 0},
		{"{status: 400, type: invalid_request_error}", 400, "invalid_request_error", false, 0},
		{"{status: 401, type: authentication_error}", 401, "authentication_error", false, 0},
		{"{status: 404, type: not_found_error}", 404, "not_found_error", false, 0},
		{"{status: 400, type: overloaded_error}", 400, "overloaded_error", true, 0},
	} {
		t.Run(tc.yaml, func(t *testing.T) {
			s := mustParse(t, "rules:\n  - error: "+tc.yaml+"\n")
			_, err := s.Respond(userReq("p", wire.Text("hi")), nil)
			var ae *wire.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("want *wire.APIError, got %v", err)
			}
			if ae.Status != tc.status || ae.Type != tc.typ || ae.Retryable != tc.retryable || ae.RetryAfterSeconds != tc.after || ae.Message == "" {
				t.Fatalf("got %+v", ae)
			}
		})
	}
}

func TestScriptToolCalls(t *testing.T) {
	s := mustParse(t, `
rules:
  - match: {last_user: "^run (.+)"}
    reply:
      text: "running"
      tool_calls:
        - name: shell
          input: {timeout: 30, command: "{{1}}", cwd: /tmp}
        - name: workers
        - name: dispatch
          input: {worker: w-1, task: {title: "{{pane}} asks", tags: [a, "{{1}}"]}}
  - match: {tool_result: true}
    reply:
      stop_reason: max_tokens
      tool_calls: [{name: skill, input: {}}]
`)
	resp, err := s.Respond(userReq("m-1", wire.Text("run ls -la")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != "tool_use" || len(resp.Content) != 4 || resp.Content[0].Text != "running" {
		t.Fatalf("response %+v", resp)
	}
	want := []struct{ id, name, input string }{
		{"toolu_script_1", "shell", `{"command":"ls -la","cwd":"/tmp","timeout":30}`},
		{"toolu_script_2", "workers", `{}`},
		{"toolu_script_3", "dispatch", `{"task":{"tags":["a","ls -la"],"title":"m-1 asks"},"worker":"w-1"}`},
	}
	for i, w := range want {
		b := resp.Content[i+1]
		if b.Type != wire.TypeToolUse || b.ID != w.id || b.Name != w.name || string(b.Input) != w.input {
			t.Fatalf("block %d: %+v (input %s), want %+v", i+1, b, b.Input, w)
		}
	}
	if resp.Usage.OutputTokens != 2+30 {
		t.Fatalf("output tokens %d, want ceil(7/4)+10*3", resp.Usage.OutputTokens)
	}

	// The id counter belongs to the rules value and keeps counting.
	resp, err = s.Respond(userReq("m-1", wire.ToolResult("toolu_script_1", "ok", false)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 1 || resp.Content[0].ID != "toolu_script_4" || resp.StopReason != "max_tokens" {
		t.Fatalf("response %+v", resp)
	}
}

func TestScriptUsageFromSim(t *testing.T) {
	s := mustParse(t, "rules:\n  - reply: {text: \"hi there\"}\n")
	sim, _ := newTestSim()
	c := &convo{system: "sys"}
	c.add(wire.RoleUser, "hello")
	req := c.request()
	prefix, total := upToLastBreakpoint(t, req)

	first, err := s.Respond(req, sim)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Respond(req, sim)
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage != (wire.Usage{InputTokens: total - prefix, OutputTokens: 2, CacheCreationInputTokens: prefix}) {
		t.Fatalf("first usage %+v", first.Usage)
	}
	if second.Usage != (wire.Usage{InputTokens: total - prefix, OutputTokens: 2, CacheReadInputTokens: prefix}) {
		t.Fatalf("second usage %+v", second.Usage)
	}
	if first.Model != "claude-test" {
		t.Fatalf("model %q, want the request's", first.Model)
	}
}

func TestParseScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"bad yaml", "rules:\n  - match: {last_user: [\n", []string{"line"}},
		{"unknown field", "rules:\n  - match:\n      last_usr: x\n", []string{"line 3", "last_usr"}},
		{"wrong type", "rules:\n  - times: many\n", []string{"line 2"}},
		{"bad regex", "rules:\n  - reply: {text: a}\n  - match: {last_user: \"(\"}\n", []string{"rules[1]", "line 3", "match.last_user"}},
		{"bad pane regex", "rules:\n  - match: {pane: \"[\"}\n", []string{"rules[0]", "match.pane"}},
		{"bad system regex", "rules:\n  - match: {system: \"*\"}\n", []string{"rules[0]", "match.system"}},
		{"bad status", "rules:\n  - error: {status: 200}\n", []string{"rules[0]", "error.status"}},
		{"empty", "", []string{"no rules"}},
		{"no rules", "rules: []\n", []string{"no rules"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScript([]byte(tc.doc))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("rules:\n  - reply: {text: ok}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("rules:\n  - reply: {text: ok}\n  - match: {bogus: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadScript(good); err != nil || len(s.Rules) != 1 {
		t.Fatalf("LoadScript(good): %v", err)
	}
	_, err := LoadScript(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("LoadScript(bad) = %v, want the path and line 3", err)
	}
	if _, err := LoadScript(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("LoadScript(missing) = %v", err)
	}
}

func TestScriptRulesBuiltInCode(t *testing.T) {
	s := &ScriptRules{Rules: []ScriptRule{{Match: ScriptMatch{LastUser: "^(a+)$"}, Reply: ScriptReply{Text: "{{1}}!"}}}}
	resp, err := s.Respond(userReq("p", wire.Text("aaa")), nil)
	if err != nil || textOf(resp) != "aaa!" {
		t.Fatalf("got %v %v", resp, err)
	}
	bad := &ScriptRules{Rules: []ScriptRule{{Match: ScriptMatch{Pane: "("}}}}
	if _, err := bad.Respond(userReq("p", wire.Text("x")), nil); err == nil {
		t.Fatal("want a bad-regex error")
	}
}

// recordSleep replaces Retry.Sleep and records the waits.
type recordSleep struct {
	mu sync.Mutex
	d  []time.Duration
}

func (r *recordSleep) sleep(_ context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.d = append(r.d, d)
	return nil
}

func TestScriptStreamRetriesAndEmits(t *testing.T) {
	rules := mustParse(t, `
rules:
  - times: 1
    error: {status: 529, type: overloaded_error, message: Overloaded, retry_after: 2.5}
  - times: 1
    error: {status: 429, type: rate_limit_error, message: slow down, retry_after: 1}
  - reply:
      text: "one two three four five six seven"
      tool_calls: [{name: shell, input: {command: ls}}, {name: skill}]
`)
	rec := &recordSleep{}
	s := &Script{Rules: rules, Sim: NewCacheSim(nil), Retry: Retry{Sleep: rec.sleep}}
	var events []wire.Event
	resp, err := s.Stream(context.Background(), userReq("p", wire.Text("go")), func(e wire.Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.d) != 2 || rec.d[0] != 2500*time.Millisecond || rec.d[1] != time.Second {
		t.Fatalf("slept %v, want the retry-afters [2.5s 1s]", rec.d)
	}
	var text strings.Builder
	var deltas int
	var tools []string
	for _, e := range events {
		switch e.Type {
		case "text_delta":
			deltas++
			text.WriteString(e.Text)
		case "tool_use":
			tools = append(tools, e.Name)
		}
	}
	if text.String() != "one two three four five six seven" || deltas < 2 {
		t.Fatalf("%d deltas joining to %q", deltas, text.String())
	}
	if strings.Join(tools, ",") != "shell,skill" {
		t.Fatalf("tool events %v", tools)
	}
	if textOf(resp) != text.String() || resp.StopReason != "tool_use" {
		t.Fatalf("response %+v", resp)
	}
}

func TestScriptStreamErrors(t *testing.T) {
	rules := mustParse(t, `
rules:
  - match: {last_user: fatal}
    error: {status: 400, type: invalid_request_error, message: bad}
  - error: {status: 529, type: overloaded_error}
`)
	rec := &recordSleep{}
	s := &Script{Rules: rules, Retry: Retry{Attempts: 3, Sleep: rec.sleep}}

	_, err := s.Stream(context.Background(), userReq("p", wire.Text("fatal")), nil)
	var ae *wire.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || len(rec.d) != 0 {
		t.Fatalf("400: err %v after %d sleeps, want no retry", err, len(rec.d))
	}
	_, err = s.Stream(context.Background(), userReq("p", wire.Text("x")), nil)
	if !errors.As(err, &ae) || ae.Status != 529 || len(rec.d) != 2 {
		t.Fatalf("529: err %v after %d sleeps, want 2 retries then the error", err, len(rec.d))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Stream(ctx, userReq("p", wire.Text("x")), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := (&Script{}).Stream(context.Background(), userReq("p", wire.Text("x")), nil); err == nil {
		t.Fatal("no rules: want an error")
	}
}

func TestScriptConcurrentPanes(t *testing.T) {
	rules := mustParse(t, `
rules:
  - reply: {text: "hi {{pane}}", tool_calls: [{name: shell}]}
`)
	s := &Script{Rules: rules, Sim: NewCacheSim(nil)}
	var wg sync.WaitGroup
	ids := make(chan string, 64)
	for i := range 8 {
		wg.Go(func() {
			for range 8 {
				c := &convo{system: "sys"}
				c.add(wire.RoleUser, "hello")
				req := c.request()
				req.PaneID = string(rune('a' + i))
				resp, err := s.Stream(context.Background(), req, func(wire.Event) {})
				if err != nil {
					t.Error(err)
					return
				}
				ids <- resp.Content[1].ID
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("duplicate tool id %s", id)
		}
		seen[id] = true
	}
	if len(seen) != 64 {
		t.Fatalf("%d ids, want 64", len(seen))
	}
}
