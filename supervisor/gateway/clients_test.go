package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// This file builds requests shaped like the real CLIs' (trimmed; see the
// request logs of Claude Code 2.1.332, Codex 0.171.0 and opencode
// 1.18.33), and reads usage out of raw upstream answers independently of
// the gateway's own reader.

type m = map[string]any

// shape is one client's request.
type shape struct {
	name   string
	api    API
	path   string
	header http.Header
	body   m
}

// claudeCode is a Claude Code main-loop request.
func claudeCode(prompt string, stream bool) shape {
	h := http.Header{}
	h.Set("anthropic-version", "2023-06-01")
	h.Set("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14")
	h.Set("x-api-key", paneToken)
	h.Set("x-app", "cli")
	h.Set("User-Agent", "claude-cli/2.1.332 (external, sdk-cli)")
	h.Set("X-Claude-Code-Session-Id", "0b0f4c1e-5d2a-4bd8-9d51-3d3c6a7b9e10")
	return shape{name: "claude", api: Anthropic, path: "/v1/messages?beta=true", header: h, body: m{
		"model": "claude-opus-5-5", "max_tokens": 128000, "stream": stream,
		"system": []m{
			{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.a89; cc_entrypoint=sdk-cli;"},
			{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": m{"type": "ephemeral"}},
		},
		"tools": []m{{"name": "Bash", "description": "Run a command", "input_schema": m{
			"type": "object", "properties": m{"command": m{"type": "string"}, "timeout": m{"type": "number"}},
			"required": []string{"command"}}}},
		"messages": []m{
			{"role": "user", "content": []m{
				{"type": "text", "text": "<system-reminder>\nAttribution…</system-reminder>\n"},
				{"type": "text", "text": prompt}}},
			{"role": "system", "content": []m{{"type": "text", "text": "# Environment\n…"}}},
		},
	}}
}

// codex is a Codex main-loop request (Responses).
func codex(prompt string, stream bool) shape {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+paneToken)
	h.Set("originator", "codex_exec")
	h.Set("accept", "text/event-stream")
	h.Set("x-codex-turn-metadata", `{"session_id":"s","turn_id":"t","request_kind":"turn","thread_source":"user","model":"fake-model"}`)
	return shape{name: "codex", api: Responses, path: "/v1/responses", header: h, body: m{
		"model": "fake-model", "stream": stream, "store": false, "tool_choice": "auto",
		"prompt_cache_key": "thread-1",
		"tools": []m{{"type": "function", "name": "exec_command", "parameters": m{
			"type": "object", "properties": m{"cmd": m{"type": "string"}}, "required": []string{"cmd"}}}},
		"input": []m{
			{"type": "message", "role": "developer", "content": []m{{"type": "input_text", "text": "You are a coding agent running in the Codex CLI"}}},
			{"type": "message", "role": "user", "content": []m{{"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}}},
			{"type": "message", "role": "user", "content": []m{{"type": "input_text", "text": prompt}}},
		},
	}}
}

// opencode is an opencode main-loop request (Chat Completions); usage
// says whether it asks for the usage chunk, as opencode does.
func opencode(prompt string, stream, usage bool) shape {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+paneToken)
	h.Set("User-Agent", "opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14")
	body := m{
		"model": "fake-model", "max_tokens": 32000, "stream": stream, "tool_choice": "auto",
		"tools": []m{{"type": "function", "function": m{"name": "bash", "parameters": m{
			"type": "object", "properties": m{"command": m{"type": "string"}}, "required": []string{"command"}}}}},
		"messages": []m{
			{"role": "system", "content": "You are opencode, an interactive CLI tool"},
			{"role": "user", "content": prompt + "\n"},
		},
	}
	name := "opencode"
	if usage {
		body["stream_options"] = m{"include_usage": true}
	} else {
		name = "chat-no-usage"
	}
	return shape{name: name, api: Chat, path: "/v1/chat/completions", header: h, body: body}
}

// qwenCode is a Qwen Code 0.24 request: Chat Completions, streamed with
// usage, its shell tool run_shell_command.
func qwenCode(prompt string) shape {
	sh := opencode(prompt, true, true)
	sh.name = "qwen"
	sh.header.Set("User-Agent", "QwenCode/0.24.4 (linux; x64)")
	sh.body["tools"] = []m{{"type": "function", "function": m{"name": "run_shell_command", "parameters": m{
		"type": "object", "properties": m{"command": m{"type": "string"}, "is_background": m{"type": "boolean"}, "description": m{"type": "string"}},
		"required": []string{"command"}}}}}
	sh.body["messages"] = []m{{"role": "system", "content": "You are Qwen Code, an interactive CLI agent"}, {"role": "user", "content": prompt}}
	return sh
}

// want is usage in the additive shape.
type want struct {
	model                          string
	in, out, cacheRead, cacheWrite int64
}

// reported reads the usage an upstream answer reports, by decoding every
// JSON document in it.
func reported(t *testing.T, api API, raw []byte) want {
	t.Helper()
	var docs []m
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		var d m
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("answer %q: %v", raw, err)
		}
		docs = append(docs, d)
	} else {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || line == "[DONE]" {
				continue
			}
			var d m
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				t.Fatalf("event %q: %v", line, err)
			}
			docs = append(docs, d)
		}
	}
	var w want
	for _, d := range docs {
		for _, obj := range []any{d, d["message"], d["response"]} {
			o, _ := obj.(m)
			if mdl, _ := o["model"].(string); mdl != "" {
				w.model = mdl
			}
			if u, ok := o["usage"].(m); ok {
				w.apply(api, u)
			}
		}
	}
	return w
}

func num(v any) (int64, bool) {
	f, ok := v.(float64)
	return int64(f), ok
}

func (w *want) apply(api API, u m) {
	if api == Anthropic {
		for k, dst := range map[string]*int64{"input_tokens": &w.in, "output_tokens": &w.out,
			"cache_read_input_tokens": &w.cacheRead, "cache_creation_input_tokens": &w.cacheWrite} {
			if n, ok := num(u[k]); ok {
				*dst = n
			}
		}
		return
	}
	prompt, _ := num(u["prompt_tokens"])
	if p, ok := num(u["input_tokens"]); ok {
		prompt = p
	}
	w.out, _ = num(u["completion_tokens"])
	if o, ok := num(u["output_tokens"]); ok {
		w.out = o
	}
	var cached int64
	for _, k := range []string{"prompt_tokens_details", "input_tokens_details"} {
		if d, ok := u[k].(m); ok {
			cached, _ = num(d["cached_tokens"])
		}
	}
	w.in, w.cacheRead = prompt-cached, cached
}
