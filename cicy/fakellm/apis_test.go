package fakellm

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
)

// This file holds, for each of the three APIs, a request builder shaped
// like the real client's requests and a response parser that checks the
// stream's framing and event order.

// params describe a test request.
type params struct {
	prompt     string
	tools      bool           // offer the client's tools, shell tool included
	toolResult string         // when set, the conversation ends with this result of a shell call
	schema     map[string]any // when set, ask for structured output
	stream     bool
}

// result is a parsed model answer, whatever the API.
type result struct {
	text      string
	tool      string         // the called tool, if any
	args      map[string]any // its arguments
	stop      string         // stop_reason, finish_reason, or the Responses output item type
	inTokens  int
	outTokens int
}

// api adapts the shared tests to one API.
type api struct {
	name               string
	path               string
	streamPath         string // the path of a streamed request, when not path
	stopText, stopTool string
	shellTool          string
	shellArgs          func(cmd string) map[string]any
	body               func(p params) map[string]any
	parse              func(t *testing.T, resp *http.Response, stream bool) result
	errorType          func(t *testing.T, resp *http.Response) string
}

// pathFor is the path of a request, streamed or not.
func (a api) pathFor(stream bool) string {
	if stream && a.streamPath != "" {
		return a.streamPath
	}
	return a.path
}

var apis = []api{
	{
		name: "anthropic", path: "/v1/messages?beta=true",
		stopText: "end_turn", stopTool: "tool_use",
		shellTool: "Bash",
		shellArgs: func(cmd string) map[string]any { return map[string]any{"command": cmd} },
		body:      anthropicBody, parse: parseAnthropic, errorType: anthropicErrorType,
	},
	{
		name: "chat", path: "/v1/chat/completions",
		stopText: "stop", stopTool: "tool_calls",
		shellTool: "bash",
		shellArgs: func(cmd string) map[string]any {
			return map[string]any{"command": cmd, "description": shellDesc}
		},
		body: chatBody, parse: parseChat, errorType: openAIErrorType,
	},
	{
		name: "responses", path: "/v1/responses",
		stopText: "message", stopTool: "function_call",
		shellTool: "exec_command",
		shellArgs: func(cmd string) map[string]any { return map[string]any{"cmd": cmd} },
		body:      responsesBody, parse: parseResponses, errorType: openAIErrorType,
	},
	{
		name: "gemini", path: "/v1beta/models/gemini-2.5-pro:generateContent",
		streamPath: "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
		stopText:   "STOP", stopTool: "STOP",
		shellTool: "run_shell_command",
		shellArgs: func(cmd string) map[string]any {
			return map[string]any{"command": cmd, "description": shellDesc}
		},
		body: geminiBody, parse: parseGemini, errorType: geminiErrorType,
	},
}

type m = map[string]any

func schemaOf(props m, required ...string) m {
	return m{"type": "object", "properties": props, "required": required}
}

// ---------------------------------------------------------------- Anthropic

// claudeBash is Claude Code's Bash tool, trimmed.
var claudeBash = m{
	"name": "Bash", "description": "Executes a given bash command",
	"input_schema": schemaOf(m{
		"command":     m{"type": "string"},
		"timeout":     m{"type": "number"},
		"description": m{"type": "string"},
	}, "command"),
}

var claudeRead = m{
	"name": "Read", "description": "Reads a file",
	"input_schema": schemaOf(m{"file_path": m{"type": "string"}, "limit": m{"type": "integer"}}, "file_path"),
}

func anthropicBody(p params) map[string]any {
	msgs := []any{
		m{"role": "user", "content": []any{
			m{"type": "text", "text": "<system-reminder>\nAttribution [[reply=not me]]</system-reminder>\n"},
			m{"type": "text", "text": p.prompt},
		}},
		// Claude Code puts a system message after the user turn.
		m{"role": "system", "content": []any{m{"type": "text", "text": "# Environment"}},
			"output_config": m{"effort": "medium"}},
	}
	if p.toolResult != "" {
		msgs = append(msgs,
			m{"role": "assistant", "content": []any{
				m{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": m{"command": "echo sample"}}}},
			m{"role": "user", "content": []any{
				m{"type": "tool_result", "tool_use_id": "toolu_1", "content": p.toolResult,
					"is_error": false, "cache_control": m{"type": "ephemeral"}}}})
	}
	body := m{
		"model": "claude-test", "max_tokens": 128000, "stream": p.stream,
		"thinking": m{"type": "adaptive"}, "output_config": m{"effort": "medium"},
		"system":   []any{m{"type": "text", "text": "You are a Claude agent."}},
		"messages": msgs,
	}
	if p.tools {
		body["tools"] = []any{claudeRead, claudeBash}
	}
	if p.schema != nil {
		body["output_config"] = m{"format": m{"type": "json_schema", "schema": p.schema}}
	}
	return body
}

func parseAnthropic(t *testing.T, resp *http.Response, stream bool) result {
	t.Helper()
	type block struct {
		Type  string         `json:"type"`
		Text  string         `json:"text"`
		Name  string         `json:"name"`
		Input map[string]any `json:"input"`
	}
	type usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	if !stream {
		var msg struct {
			Type       string  `json:"type"`
			Role       string  `json:"role"`
			Content    []block `json:"content"`
			StopReason string  `json:"stop_reason"`
			Usage      usage   `json:"usage"`
		}
		decodeBody(t, resp, &msg)
		if msg.Type != "message" || msg.Role != "assistant" || len(msg.Content) != 1 {
			t.Fatalf("message = %+v", msg)
		}
		c := msg.Content[0]
		return result{text: c.Text, tool: c.Name, args: c.Input, stop: msg.StopReason,
			inTokens: msg.Usage.InputTokens, outTokens: msg.Usage.OutputTokens}
	}

	var r result
	var argsJSON string
	events := readSSE(t, resp)
	if got := names(events); !slices.Equal(got, anthropicEvents) {
		t.Errorf("events = %v\nwant     %v", got, anthropicEvents)
	}
	for _, e := range events {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Usage usage `json:"usage"`
			} `json:"message"`
			ContentBlock block `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			t.Fatalf("event %s: %v", e.name, err)
		}
		if ev.Type != e.name {
			t.Errorf("event %q carries type %q", e.name, ev.Type)
		}
		switch e.name {
		case "message_start":
			r.inTokens = ev.Message.Usage.InputTokens
		case "content_block_start":
			r.tool = ev.ContentBlock.Name
		case "content_block_delta":
			r.text += ev.Delta.Text
			argsJSON += ev.Delta.PartialJSON
		case "message_delta":
			r.stop, r.outTokens = ev.Delta.StopReason, ev.Usage.OutputTokens
		}
	}
	if r.tool != "" {
		if err := json.Unmarshal([]byte(argsJSON), &r.args); err != nil {
			t.Fatalf("tool input %q: %v", argsJSON, err)
		}
	}
	return r
}

// anthropicEvents is the event order of every Anthropic stream.
var anthropicEvents = []string{"message_start", "ping", "content_block_start", "content_block_delta",
	"content_block_stop", "message_delta", "message_stop"}

func anthropicErrorType(t *testing.T, resp *http.Response) string {
	t.Helper()
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	decodeBody(t, resp, &body)
	if body.Type != "error" || body.Error.Message == "" {
		t.Errorf("error body = %+v", body)
	}
	return body.Error.Type
}

// --------------------------------------------------------- Chat Completions

// opencodeBash is opencode's bash tool, trimmed.
var opencodeBash = m{"type": "function", "function": m{
	"name": "bash", "description": "Runs a command",
	"parameters": schemaOf(m{
		"command":     m{"type": "string"},
		"description": m{"type": "string"},
		"workdir":     m{"type": "string"},
	}, "command", "description"),
}}

var opencodeRead = m{"type": "function", "function": m{
	"name": "read", "parameters": schemaOf(m{"filePath": m{"type": "string"}}, "filePath"),
}}

func chatBody(p params) map[string]any {
	msgs := []any{
		m{"role": "system", "content": "You are opencode."},
		m{"role": "user", "content": p.prompt + "\n"},
	}
	if p.toolResult != "" {
		msgs = append(msgs,
			m{"role": "assistant", "content": "", "tool_calls": []any{m{"id": "call_1", "type": "function",
				"function": m{"name": "bash", "arguments": `{"command":"echo sample"}`}}}},
			m{"role": "tool", "tool_call_id": "call_1", "content": p.toolResult})
	}
	body := m{"model": "fake-model", "max_tokens": 32000, "stream": p.stream, "messages": msgs, "tools": []any{}}
	if p.stream {
		body["stream_options"] = m{"include_usage": true}
	}
	if p.tools {
		body["tools"] = []any{opencodeBash, opencodeRead}
		body["tool_choice"] = "auto"
	}
	if p.schema != nil {
		body["response_format"] = m{"type": "json_schema", "json_schema": m{"name": "out", "schema": p.schema}}
	}
	return body
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chatToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatChoice struct {
	Message struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		ToolCalls []chatToolCall `json:"tool_calls"`
	} `json:"message"`
	Delta struct {
		Role      string         `json:"role"`
		Content   string         `json:"content"`
		ToolCalls []chatToolCall `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type chatCompletion struct {
	Object  string       `json:"object"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
}

func parseChat(t *testing.T, resp *http.Response, stream bool) result {
	t.Helper()
	var r result
	var argsJSON string
	if !stream {
		var c chatCompletion
		decodeBody(t, resp, &c)
		if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Usage == nil {
			t.Fatalf("completion = %+v", c)
		}
		msg := c.Choices[0].Message
		if msg.Content != nil {
			r.text = *msg.Content
		}
		if len(msg.ToolCalls) == 1 {
			r.tool, argsJSON = msg.ToolCalls[0].Function.Name, msg.ToolCalls[0].Function.Arguments
		}
		r.stop = *c.Choices[0].FinishReason
		r.inTokens, r.outTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
	} else {
		r, argsJSON = parseChatStream(t, readSSE(t, resp))
	}
	if r.tool != "" {
		if err := json.Unmarshal([]byte(argsJSON), &r.args); err != nil {
			t.Fatalf("tool arguments %q: %v", argsJSON, err)
		}
	}
	return r
}

// parseChatStream checks the chunk order (role, content or tool calls,
// finish, usage, [DONE]) and collects the answer.
func parseChatStream(t *testing.T, events []sseEvent) (result, string) {
	t.Helper()
	var r result
	var argsJSON string
	if len(events) < 4 || events[len(events)-1].data != "[DONE]" {
		t.Fatalf("stream does not end with [DONE] after at least 3 chunks: %+v", events)
	}
	chunks := events[:len(events)-1]
	for i, e := range chunks {
		if e.name != "" {
			t.Errorf("chunk %d has event name %q", i, e.name)
		}
		var c chatCompletion
		if err := json.Unmarshal([]byte(e.data), &c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d object = %q", i, c.Object)
		}
		last := i == len(chunks)-1
		switch {
		case last:
			if len(c.Choices) != 0 || c.Usage == nil {
				t.Fatalf("last chunk is not the usage chunk: %s", e.data)
			}
			r.inTokens, r.outTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
		case i == 0:
			if len(c.Choices) != 1 || c.Choices[0].Delta.Role != "assistant" {
				t.Fatalf("first chunk has no assistant role: %s", e.data)
			}
		case r.stop != "":
			t.Fatalf("chunk after finish_reason: %s", e.data)
		default:
			if len(c.Choices) != 1 {
				t.Fatalf("chunk %d: %s", i, e.data)
			}
			ch := c.Choices[0]
			r.text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Function.Name != "" {
					r.tool = tc.Function.Name
				}
				argsJSON += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				r.stop = *ch.FinishReason
			}
		}
	}
	return r, argsJSON
}

func openAIErrorType(t *testing.T, resp *http.Response) string {
	t.Helper()
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	decodeBody(t, resp, &body)
	if body.Error.Message == "" {
		t.Errorf("error body = %+v", body)
	}
	return body.Error.Type
}

// ---------------------------------------------------------------- Responses

// codexExecCommand is Codex's exec_command tool, trimmed.
var codexExecCommand = m{
	"type": "function", "name": "exec_command", "strict": false,
	"parameters": schemaOf(m{
		"cmd":           m{"type": "string"},
		"justification": m{"type": "string"},
	}, "cmd"),
}

func inputMessage(role, text string) m {
	return m{"type": "message", "role": role, "content": []any{m{"type": "input_text", "text": text}}}
}

func responsesBody(p params) map[string]any {
	input := []any{
		inputMessage("developer", "You are a coding agent running in the Codex CLI."),
		inputMessage("user", "<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>"),
		inputMessage("user", p.prompt),
	}
	if p.toolResult != "" {
		input = append(input,
			m{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"echo sample"}`, "call_id": "call_1"},
			m{"type": "function_call_output", "call_id": "call_1", "output": p.toolResult})
	}
	body := m{"model": "fake-model", "stream": p.stream, "store": false, "instructions": nil,
		"tool_choice": "auto", "parallel_tool_calls": true, "input": input}
	if p.tools {
		body["tools"] = []any{codexExecCommand, m{"type": "web_search"}}
	}
	if p.schema != nil {
		body["text"] = m{"format": m{"type": "json_schema", "name": "out", "strict": true, "schema": p.schema}}
	}
	return body
}

type responsesItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Name      string `json:"name"`
	CallID    string `json:"call_id"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type responsesObject struct {
	Object string          `json:"object"`
	Status string          `json:"status"`
	Output []responsesItem `json:"output"`
	Usage  *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// resultOf reads a completed response.
func (o responsesObject) resultOf(t *testing.T) result {
	t.Helper()
	if o.Object != "response" || o.Status != "completed" || len(o.Output) != 1 || o.Usage == nil {
		t.Fatalf("response = %+v", o)
	}
	it := o.Output[0]
	r := result{stop: it.Type, inTokens: o.Usage.InputTokens, outTokens: o.Usage.OutputTokens}
	switch it.Type {
	case "message":
		r.text = it.Content[0].Text
	case "function_call":
		r.tool = it.Name
		if it.CallID == "" {
			t.Errorf("function call without call_id: %+v", it)
		}
		if err := json.Unmarshal([]byte(it.Arguments), &r.args); err != nil {
			t.Fatalf("arguments %q: %v", it.Arguments, err)
		}
	}
	return r
}

var (
	responsesTextEvents = []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed"}
	responsesToolEvents = []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
)

func parseResponses(t *testing.T, resp *http.Response, stream bool) result {
	t.Helper()
	if !stream {
		var o responsesObject
		decodeBody(t, resp, &o)
		return o.resultOf(t)
	}
	events := readSSE(t, resp)
	var (
		done    responsesObject
		deltas  string
		argsOut string
	)
	for i, e := range events {
		var ev struct {
			Type     string          `json:"type"`
			Seq      int             `json:"sequence_number"`
			Delta    string          `json:"delta"`
			Text     string          `json:"text"`
			Args     string          `json:"arguments"`
			Response responsesObject `json:"response"`
		}
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			t.Fatalf("event %s: %v", e.name, err)
		}
		if ev.Type != e.name || ev.Seq != i {
			t.Errorf("event %d %q: type %q, sequence_number %d", i, e.name, ev.Type, ev.Seq)
		}
		switch e.name {
		case "response.output_text.delta", "response.function_call_arguments.delta":
			deltas += ev.Delta
		case "response.output_text.done":
			argsOut = ev.Text
		case "response.function_call_arguments.done":
			argsOut = ev.Args
		case "response.completed":
			done = ev.Response
		}
	}
	r := done.resultOf(t)
	want := responsesTextEvents
	if r.tool != "" {
		want = responsesToolEvents
	}
	if got := names(events); !slices.Equal(got, want) {
		t.Errorf("events = %v\nwant     %v", got, want)
	}
	if deltas != argsOut {
		t.Errorf("deltas add up to %q, done event says %q", deltas, argsOut)
	}
	return r
}

// ------------------------------------------------------------------ Gemini

// geminiShell is Gemini CLI's run_shell_command tool, trimmed.
var geminiShell = m{
	"name": "run_shell_command", "description": "Runs a shell command",
	"parametersJsonSchema": schemaOf(m{
		"command":     m{"type": "string"},
		"description": m{"type": "string"},
		"dir_path":    m{"type": "string"},
	}, "command"),
}

var geminiRead = m{
	"name": "read_file", "parametersJsonSchema": schemaOf(m{"file_path": m{"type": "string"}}, "file_path"),
}

func geminiText(role, text string) m {
	return m{"role": role, "parts": []any{m{"text": text}}}
}

func geminiBody(p params) map[string]any {
	contents := []any{
		geminiText("user", "<session_context>\nThis is the Gemini CLI. [[reply=not me]]\n</session_context>"),
		geminiText("user", p.prompt),
	}
	if p.toolResult != "" {
		contents = append(contents,
			m{"role": "model", "parts": []any{
				m{"text": "thinking [[reply=not me]]", "thought": true},
				m{"functionCall": m{"id": "call_1", "name": "run_shell_command", "args": m{"command": "echo sample"}}}}},
			m{"role": "user", "parts": []any{
				m{"functionResponse": m{"id": "call_1", "name": "run_shell_command", "response": m{"output": p.toolResult}}}}})
	}
	body := m{
		"contents":          contents,
		"systemInstruction": m{"parts": []any{m{"text": "You are Gemini CLI."}}},
		"generationConfig":  m{"temperature": 1, "thinkingConfig": m{"includeThoughts": true}},
	}
	if p.tools {
		body["tools"] = []any{m{"functionDeclarations": []any{geminiRead, geminiShell}}}
	}
	if p.schema != nil {
		body["generationConfig"] = m{"responseMimeType": "application/json", "responseJsonSchema": p.schema}
	}
	return body
}

// addGemini takes one response (a chunk) into r; it reports whether it
// was the last (it has the finishReason).
func addGemini(t *testing.T, g apitest.GeminiResponse, r *result) bool {
	t.Helper()
	if len(g.Candidates) != 1 || g.Candidates[0].Content.Role != "model" {
		t.Fatalf("response = %+v", g)
	}
	c := g.Candidates[0]
	for _, p := range c.Content.Parts {
		r.text += p.Text
		if fc := p.FunctionCall; fc != nil {
			if fc.ID == "" {
				t.Errorf("function call without id: %+v", fc)
			}
			r.tool, r.args = fc.Name, fc.Args
		}
	}
	if c.FinishReason == "" {
		return false
	}
	r.stop = c.FinishReason
	if g.UsageMetadata == nil {
		t.Fatalf("the last response has no usageMetadata")
	}
	r.inTokens, r.outTokens = g.UsageMetadata.PromptTokenCount, g.UsageMetadata.CandidatesTokenCount
	return true
}

func parseGemini(t *testing.T, resp *http.Response, stream bool) result {
	t.Helper()
	var r result
	if !stream {
		var g apitest.GeminiResponse
		decodeBody(t, resp, &g)
		if !addGemini(t, g, &r) {
			t.Errorf("answer without finishReason")
		}
		return r
	}
	events := readSSE(t, resp)
	for i, e := range events {
		if e.name != "" {
			t.Errorf("event %d has a name %q", i, e.name)
		}
		var g apitest.GeminiResponse
		if err := json.Unmarshal([]byte(e.data), &g); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if last := addGemini(t, g, &r); last != (i == len(events)-1) {
			t.Errorf("chunk %d of %d has finishReason %v", i, len(events), last)
		}
	}
	return r
}

func geminiErrorType(t *testing.T, resp *http.Response) string {
	t.Helper()
	var body struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	decodeBody(t, resp, &body)
	if body.Error.Message == "" || body.Error.Code != resp.StatusCode {
		t.Errorf("error body = %+v", body)
	}
	return body.Error.Status
}
