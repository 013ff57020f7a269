package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
)

// scriptRules answer the tests below.
const scriptRules = `
rules:
  - match: {aux: title}
    reply: {text: A scripted title}
  - match: {last_user: 'overload me'}
    error: {status: 529, type: overloaded_error, message: scripted overload}
  - match: {last_user: 'make a file', tool_result: false}
    reply:
      text: Making it.
      tool_calls:
        - name: shell
          input: {command: echo hi > f.txt, cwd: sub dir}
        - name: todo
          input: {item: "{{pane}}"}
  - match: {tool_result: true}
    reply: {text: 'Done: {{tool_result}}'}
  - match: {pane: '^w-7$', last_user: 'who am i'}
    reply: {text: 'You are {{pane}}.'}
  - match: {aux: '*'}
    reply: {text: 'Scripted answer to: {{last_user}}'}
`

// fixedScript is a ScriptSource with rules that never change.
type fixedScript struct{ s *provider.Script }

func (f fixedScript) Script() (*provider.Script, error) {
	if f.s == nil {
		return nil, errors.New("the script provider needs CICY_SCRIPT")
	}
	return f.s, nil
}

// startScriptRig is a gateway whose upstream is the scripted model with
// rules (none: the rules cannot be loaded).
func startScriptRig(t *testing.T, rules string) *rig {
	t.Helper()
	var src fixedScript
	if rules != "" {
		r, err := provider.ParseScript([]byte(rules))
		if err != nil {
			t.Fatal(err)
		}
		src.s = &provider.Script{Rules: r, Sim: provider.NewCacheSim(nil)}
	}
	logs := &syncBuf{}
	l := logrus.New()
	l.SetOutput(logs)
	l.SetLevel(logrus.DebugLevel)
	rg := &rig{rec: &recorder{}, act: &activity{}, logs: logs}
	gw, err := New(Config{
		Panes:     panes{paneToken: paneID},
		Usage:     rg.rec,
		Activity:  rg.act,
		Log:       logrus.NewEntry(l),
		Transport: NewScriptTransport(src, logrus.NewEntry(l)),
	})
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, gw)
	rg.gw = gw
	return rg
}

// toolCall is a tool call read from an answer.
type toolCall struct {
	name string
	args m
}

// answer is what a client reads from an answer, whatever the API.
type answer struct {
	text  string
	calls []toolCall
}

// readAnswer decodes an answer of api, plain or streamed.
func readAnswer(t *testing.T, api API, raw []byte) answer {
	t.Helper()
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return readStream(t, api, raw)
	}
	var d struct {
		Content []struct {
			Type, Text, Name string
			Input            m
		} `json:"content"`
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct{ Name, Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	var a answer
	switch api {
	case Anthropic:
		for _, b := range d.Content {
			if b.Type == "text" {
				a.text += b.Text
			} else {
				a.calls = append(a.calls, toolCall{b.Name, b.Input})
			}
		}
	case Chat:
		msg := d.Choices[0].Message
		if msg.Content != nil {
			a.text = *msg.Content
		}
		for _, c := range msg.ToolCalls {
			a.calls = append(a.calls, toolCall{c.Function.Name, argsJSON(t, c.Function.Arguments)})
		}
	case Responses:
		a = responsesOutput(t, d.Output)
	}
	return a
}

// responsesOutput reads the output items of a Responses answer.
func responsesOutput(t *testing.T, items []json.RawMessage) answer {
	t.Helper()
	var a answer
	for _, raw := range items {
		var it struct {
			Type, Name, Arguments string
			Content               []struct{ Text string }
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		if it.Type == "message" {
			a.text += it.Content[0].Text
		} else {
			a.calls = append(a.calls, toolCall{it.Name, argsJSON(t, it.Arguments)})
		}
	}
	return a
}

func argsJSON(t *testing.T, s string) m {
	t.Helper()
	var args m
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		t.Fatalf("arguments %q: %v", s, err)
	}
	return args
}

// readStream reassembles a streamed answer from its deltas (Responses:
// from response.completed).
func readStream(t *testing.T, api API, raw []byte) answer {
	t.Helper()
	var a answer
	args := map[int]*strings.Builder{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ev struct {
			Type         string
			Index        int
			ContentBlock struct{ Type, Name string } `json:"content_block"`
			Delta        json.RawMessage
			Choices      []struct {
				Delta struct {
					Content   string
					ToolCalls []struct {
						Index    int
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
			}
			Response struct{ Output []json.RawMessage }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		switch {
		case api == Responses && ev.Type == "response.completed":
			return responsesOutput(t, ev.Response.Output)
		case api == Anthropic && ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use":
			a.calls = append(a.calls, toolCall{name: ev.ContentBlock.Name})
			args[len(a.calls)-1] = &strings.Builder{}
		case api == Anthropic && ev.Type == "content_block_delta":
			var d struct {
				Type, Text  string
				PartialJSON string `json:"partial_json"`
			}
			if err := json.Unmarshal(ev.Delta, &d); err != nil {
				t.Fatalf("delta %s: %v", ev.Delta, err)
			}
			if d.Type == "text_delta" {
				a.text += d.Text
			} else {
				args[len(a.calls)-1].WriteString(d.PartialJSON)
			}
		case api == Chat && len(ev.Choices) > 0:
			d := ev.Choices[0].Delta
			a.text += d.Content
			for _, tc := range d.ToolCalls {
				if tc.Function.Name != "" {
					a.calls = append(a.calls, toolCall{name: tc.Function.Name})
					args[tc.Index] = &strings.Builder{}
				}
				args[tc.Index].WriteString(tc.Function.Arguments)
			}
		}
	}
	for i := range a.calls {
		a.calls[i].args = argsJSON(t, args[i].String())
	}
	return a
}

// scriptShapes are the clients' requests, streamed and not.
func scriptShapes(prompt string) []shape {
	return []shape{
		claudeCode(prompt, false), claudeCode(prompt, true),
		codex(prompt, false), codex(prompt, true),
		opencode(prompt, false, true), opencode(prompt, true, true), opencode(prompt, true, false),
		qwenCode(prompt),
	}
}

// TestScriptShellCall: a scripted shell call reaches each client as a call
// of its own shell tool, in its shape, beside the text and the other call,
// and the usage recorded is what the client was told.
func TestScriptShellCall(t *testing.T) {
	rg := startScriptRig(t, scriptRules)
	want := map[string]toolCall{
		"claude":        {"Bash", m{"command": "cd 'sub dir' && echo hi > f.txt"}},
		"codex":         {"exec_command", m{"cmd": "cd 'sub dir' && echo hi > f.txt"}},
		"opencode":      {"bash", m{"command": "cd 'sub dir' && echo hi > f.txt"}},
		"chat-no-usage": {"bash", m{"command": "cd 'sub dir' && echo hi > f.txt"}},
		"qwen":          {"run_shell_command", m{"command": "cd 'sub dir' && echo hi > f.txt", "description": "a scripted command"}},
	}
	for i, sh := range scriptShapes("please make a file") {
		resp, raw := rg.post(t, sh.path, sh.header, sh.body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", sh.name, resp.StatusCode, raw)
		}
		a := readAnswer(t, sh.api, raw)
		w := want[sh.name]
		if a.text != "Making it." || len(a.calls) != 2 || a.calls[0].name != w.name || !jsonEqual(a.calls[0].args, w.args) ||
			a.calls[1].name != "todo" || a.calls[1].args["item"] != paneID {
			t.Errorf("%s stream=%v: got %+v, want text, %v and todo(%s)", sh.name, sh.body["stream"], a, w, paneID)
		}
		call := rg.rec.wait(t, i+1)
		got := reported(t, sh.api, raw)
		if sh.name == "chat-no-usage" {
			if bytes.Contains(raw, []byte(`"usage"`)) {
				t.Errorf("the usage chunk reached a client that did not ask for it")
			}
		} else if call.InputTokens != got.in || call.OutputTokens != got.out || call.CacheReadTokens != got.cacheRead {
			t.Errorf("%s: recorded %+v, the client was told %+v", sh.name, call, got)
		}
		if call.InputTokens+call.CacheReadTokens+call.CacheCreationTokens == 0 || call.OutputTokens == 0 || call.Pane != paneID {
			t.Errorf("%s: recorded %+v", sh.name, call)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestScriptToolResult: the round after a tool call sees its result, in
// each API's shape of a tool output.
func TestScriptToolResult(t *testing.T) {
	rg := startScriptRig(t, scriptRules)
	claude := claudeCode("make a file", false)
	claude.body["messages"] = append(claude.body["messages"].([]m),
		m{"role": "assistant", "content": []m{{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": m{"command": "ls"}}}},
		m{"role": "user", "content": []m{{"type": "tool_result", "tool_use_id": "toolu_1", "content": []m{{"type": "text", "text": "f.txt"}}}}})
	cx := codex("make a file", true)
	cx.body["input"] = append(cx.body["input"].([]m),
		m{"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": `{"cmd":"ls"}`},
		m{"type": "function_call_output", "call_id": "call_1", "output": "f.txt"})
	oc := opencode("make a file", true, true)
	oc.body["messages"] = append(oc.body["messages"].([]m),
		m{"role": "assistant", "content": nil, "tool_calls": []m{{"id": "call_1", "type": "function", "function": m{"name": "bash", "arguments": `{"command":"ls"}`}}}},
		m{"role": "tool", "tool_call_id": "call_1", "content": "f.txt"})
	for _, sh := range []shape{claude, cx, oc} {
		resp, raw := rg.post(t, sh.path, sh.header, sh.body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", sh.name, resp.StatusCode, raw)
		}
		if a := readAnswer(t, sh.api, raw); a.text != "Done: f.txt" || len(a.calls) != 0 {
			t.Errorf("%s: got %+v", sh.name, a)
		}
	}
}

// TestScriptMatchesPaneAndAux: rules see the pane the gateway found and
// the side-call kind it recognised.
func TestScriptMatchesPaneAndAux(t *testing.T) {
	rg := startScriptRig(t, scriptRules)
	for _, sh := range scriptShapes("who am i") {
		_, raw := rg.post(t, sh.path, sh.header, sh.body)
		if a := readAnswer(t, sh.api, raw); a.text != "You are "+paneID+"." {
			t.Errorf("%s: got %+v", sh.name, a)
		}
	}
	title := opencode("say hi", true, true)
	title.body["messages"] = []m{{"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
		{"role": "user", "content": "say hi\n"}}
	codexTitle := codex("Generate a concise, single-line task title…\n\nUser prompt:\nsay hi", false)
	codexTitle.header.Set("x-codex-turn-metadata", `{"request_kind":"turn","thread_source":"thread_title"}`)
	spoofed := claudeCode("who am i", false)
	spoofed.header.Set("X-Cicy-Aux", "title") // a client's own is not believed
	for _, c := range []struct {
		sh   shape
		want string
	}{{title, "A scripted title"}, {codexTitle, "A scripted title"}, {spoofed, "You are " + paneID + "."}} {
		_, raw := rg.post(t, c.sh.path, c.sh.header, c.sh.body)
		if a := readAnswer(t, c.sh.api, raw); a.text != c.want {
			t.Errorf("%s: got %+v, want %q", c.sh.name, a, c.want)
		}
	}
}

// TestScriptErrors: a scripted error, and rules that cannot be loaded,
// reach the client in its API's error shape.
func TestScriptErrors(t *testing.T) {
	rg := startScriptRig(t, scriptRules)
	for _, sh := range scriptShapes("overload me") {
		resp, raw := rg.post(t, sh.path, sh.header, sh.body)
		if resp.StatusCode != 529 {
			t.Fatalf("%s: status %d: %s", sh.name, resp.StatusCode, raw)
		}
		if got := errorOf(t, sh.api, raw); got != "overloaded_error: scripted overload" {
			t.Errorf("%s: error %q", sh.name, got)
		}
	}
	none := startScriptRig(t, "")
	for _, sh := range scriptShapes("hi") {
		resp, raw := none.post(t, sh.path, sh.header, sh.body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: status %d: %s", sh.name, resp.StatusCode, raw)
		}
		if got := errorOf(t, sh.api, raw); !strings.Contains(got, "CICY_SCRIPT") {
			t.Errorf("%s: error %q", sh.name, got)
		}
	}
}

// errorOf is "type: message" of an API error body.
func errorOf(t *testing.T, api API, raw []byte) string {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("error body %s: %v", raw, err)
	}
	if (api == Anthropic) != (e.Type == "error") {
		t.Errorf("%s error in the wrong shape: %s", api, raw)
	}
	return e.Error.Type + ": " + e.Error.Message
}

// TestScriptCountTokensAndCache: count_tokens counts the prompt as the
// usage does, and a request repeated reads its prefix from the simulated
// cache — Claude Code's at its breakpoints, the OpenAI clients' at the
// end, as OpenAI caches by itself.
func TestScriptCountTokensAndCache(t *testing.T) {
	rg := startScriptRig(t, scriptRules)
	count := claudeCode("say hi", false)
	count.path = "/v1/messages/count_tokens?beta=true"
	_, raw := rg.post(t, count.path, count.header, count.body)
	var n struct {
		InputTokens int64 `json:"input_tokens"`
	}
	if err := json.Unmarshal(raw, &n); err != nil || n.InputTokens == 0 {
		t.Fatalf("count_tokens: %s (%v)", raw, err)
	}
	calls := 1
	for _, sh := range []shape{claudeCode("say hi", false), codex("say hi", true), opencode("say hi", false, true)} {
		for round := range 2 {
			rg.post(t, sh.path, sh.header, sh.body)
			calls++
			c := rg.rec.wait(t, calls)
			prompt := c.InputTokens + c.CacheReadTokens + c.CacheCreationTokens
			if sh.name == "claude" && prompt != n.InputTokens {
				t.Errorf("claude: prompt %d tokens, count_tokens said %d", prompt, n.InputTokens)
			}
			if round == 1 && c.CacheReadTokens == 0 {
				t.Errorf("%s: the repeated request read nothing from the cache: %+v", sh.name, c)
			}
		}
	}
}
