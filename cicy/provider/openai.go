package provider

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// OpenAI speaks Chat Completions with streaming (OpenAI, DeepSeek, Ollama,
// vLLM, LiteLLM). The request comes in Anthropic-shaped and the response
// goes out Anthropic-shaped; the translation happens here, at the edge.
type OpenAI struct {
	BaseURL string // e.g. http://127.0.0.1:8080/v1 ; the request goes to BaseURL + "/chat/completions"
	APIKey  string // Authorization: Bearer; may be empty for local servers
	HTTP    *http.Client
	Retry   Retry
}

const openAIDefaultBaseURL = "https://api.openai.com/v1"

// Stream sends req as a streamed chat completion and assembles the answer.
func (o *OpenAI) Stream(ctx context.Context, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error) {
	body, err := openAIBody(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	resp, err := o.Retry.Do(ctx, func() (*wire.Response, error) {
		r, err := o.once(ctx, body, req, onEvent)
		return r, o.scrub(err)
	})
	if err != nil {
		return nil, err
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	return resp, nil
}

func (o *OpenAI) once(ctx context.Context, body []byte, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error) {
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		base = openAIDefaultBaseURL
	}
	h := http.Header{}
	if o.APIKey != "" {
		h.Set("Authorization", "Bearer "+o.APIKey)
	}
	resp, err := postStream(ctx, o.HTTP, base+"/chat/completions", body, h, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return nil, openAIHTTPError(resp)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return readOpenAISSE(ctx, resp.Body, onEvent)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, netError("reading the response failed", err)
	}
	// Some servers stream without saying so.
	if t := bytes.TrimSpace(b); bytes.HasPrefix(t, []byte("data:")) || bytes.HasPrefix(t, []byte(":")) {
		return readOpenAISSE(ctx, bytes.NewReader(b), onEvent)
	}
	return decodeChatCompletion(b, onEvent)
}

// scrub removes the API key from an error's text, whatever echoed it.
func (o *OpenAI) scrub(err error) error {
	if err == nil || o.APIKey == "" {
		return err
	}
	var ae *wire.APIError
	if errors.As(err, &ae) {
		ae.Message = strings.ReplaceAll(ae.Message, o.APIKey, "[redacted]")
		ae.Type = strings.ReplaceAll(ae.Type, o.APIKey, "[redacted]")
		return err
	}
	if strings.Contains(err.Error(), o.APIKey) {
		return errors.New(strings.ReplaceAll(err.Error(), o.APIKey, "[redacted]"))
	}
	return err
}

// ---------------------------------------------------------------- request

type oaRequest struct {
	Model         string           `json:"model"`
	Messages      []oaMessage      `json:"messages"`
	Tools         []oaTool         `json:"tools,omitempty"`
	ToolChoice    string           `json:"tool_choice,omitempty"` // "none" on a turn's final round
	MaxTokens     int              `json:"max_tokens,omitempty"`
	Stream        bool             `json:"stream"`
	StreamOptions *oaStreamOptions `json:"stream_options,omitempty"`
}

type oaStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function oaFunctionCall `json:"function"`
}

type oaFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaTool struct {
	Type     string        `json:"type"`
	Function oaFunctionDef `json:"function"`
}

type oaFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

func oaStr(s string) *string { return &s }

// openAIBody translates an Anthropic-shaped request into a Chat Completions
// body. Structs fix the key order, so equal requests give equal bytes.
func openAIBody(req *wire.Request) ([]byte, error) {
	out := oaRequest{
		Model:         req.Model,
		Messages:      openAIMessages(req),
		MaxTokens:     req.MaxTokens,
		Stream:        true,
		StreamOptions: &oaStreamOptions{IncludeUsage: true},
	}
	if req.ToolChoice != nil && len(req.Tools) > 0 {
		out.ToolChoice = req.ToolChoice.Type
	}
	for _, t := range req.Tools {
		params := t.InputSchema
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, oaTool{
			Type:     "function",
			Function: oaFunctionDef{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func oaJoinTexts(blocks []wire.Block) (string, bool) {
	var parts []string
	for _, b := range blocks {
		if b.Type == wire.TypeText && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n"), len(parts) > 0
}

func openAIMessages(req *wire.Request) []oaMessage {
	msgs := []oaMessage{}
	if sys, ok := oaJoinTexts(req.System); ok {
		msgs = append(msgs, oaMessage{Role: "system", Content: oaStr(sys)})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case wire.RoleAssistant:
			am := oaMessage{Role: "assistant"}
			if text, ok := oaJoinTexts(m.Content); ok {
				am.Content = oaStr(text)
			}
			for _, b := range m.Content {
				if b.Type != wire.TypeToolUse {
					continue
				}
				args := string(bytes.TrimSpace(b.Input))
				if args == "" || args == "null" {
					args = "{}"
				}
				am.ToolCalls = append(am.ToolCalls, oaToolCall{
					ID: b.ID, Type: "function",
					Function: oaFunctionCall{Name: b.Name, Arguments: args},
				})
			}
			if am.Content == nil && len(am.ToolCalls) == 0 {
				am.Content = oaStr("")
			}
			msgs = append(msgs, am)
		default: // user
			for _, b := range m.Content {
				if b.Type != wire.TypeToolResult {
					continue
				}
				content := b.Content
				if b.IsError && !strings.HasPrefix(strings.ToLower(content), "error") {
					if content == "" {
						content = "error"
					} else {
						content = "error: " + content
					}
				}
				msgs = append(msgs, oaMessage{Role: "tool", Content: oaStr(content), ToolCallID: b.ToolUseID})
			}
			if text, ok := oaJoinTexts(m.Content); ok {
				msgs = append(msgs, oaMessage{Role: "user", Content: oaStr(text)})
			}
		}
	}
	return msgs
}

// ---------------------------------------------------------------- errors

// oaErrorDoc is an error document: {"error":{"type","message","code"}}, or
// {"error":"message"} (Ollama and some proxies).
type oaErrorDoc struct {
	Error json.RawMessage `json:"error"`
}

// parse returns the error's type and message; ok is false when there is
// no usable error.
func (d oaErrorDoc) parse() (typ, msg string, ok bool) {
	raw := bytes.TrimSpace(d.Error)
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", false
	}
	if raw[0] == '"' {
		if json.Unmarshal(raw, &msg) == nil && msg != "" {
			return "", msg, true
		}
		return "", "", false
	}
	var e struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return "", "", false
	}
	typ = e.Type
	if typ == "" {
		typ = oaCodeString(e.Code)
	}
	if typ == "" && e.Message == "" {
		return "", "", false
	}
	return typ, e.Message, true
}

// oaString reads a JSON value that is a string, or nothing or null ("").
// It reports false for any other value.
func oaString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return "", false
}

// oaCodeString renders an error code given as a string or a number.
func oaCodeString(raw json.RawMessage) string {
	if s, ok := oaString(raw); ok {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// openAIHTTPError reads an error response: the JSON error document when
// there is one, else the first bytes of whatever came back.
func openAIHTTPError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ae := &wire.APIError{Status: resp.StatusCode, RetryAfterSeconds: parseRetryAfter(resp.Header)}
	if ae.RetryAfterSeconds == 0 {
		// OpenAI also sends retry-after-ms.
		if ms, err := strconv.ParseFloat(strings.TrimSpace(resp.Header.Get("retry-after-ms")), 64); err == nil && ms > 0 {
			ae.RetryAfterSeconds = ms / 1000
		}
	}
	var doc oaErrorDoc
	if json.Unmarshal(b, &doc) == nil {
		if typ, msg, ok := doc.parse(); ok {
			ae.Type, ae.Message = typ, msg
			if ae.Message == "" {
				ae.Message = resp.Status
			}
		}
	}
	if ae.Type == "" && ae.Message == "" {
		ae.Message = bodySnippet(b, resp.Status)
	}
	ae.Retryable = retryableStatus(resp.StatusCode) || ae.Type == "overloaded_error"
	return ae
}

// oaStreamError is an error the server reports inside a 200 response.
func oaStreamError(typ, msg string) *wire.APIError {
	ae := &wire.APIError{Type: typ, Message: msg}
	if ae.Message == "" {
		ae.Message = "the model reported an error mid-stream"
	}
	switch typ {
	case "server_error", "api_error", "overloaded_error", "rate_limit_error", "rate_limit_exceeded", "timeout", "service_unavailable":
		ae.Retryable = true
	default:
		if n, err := strconv.Atoi(typ); err == nil {
			ae.Retryable = retryableStatus(n)
		}
	}
	return ae
}

// ---------------------------------------------------------------- response

// OpenAIUsage is an OpenAI usage object: Chat Completions' (prompt_tokens
// …) or Responses' (input_tokens …), DeepSeek's cache fields included.
type OpenAIUsage struct {
	PromptTokens        int64         `json:"prompt_tokens"`
	CompletionTokens    int64         `json:"completion_tokens"`
	PromptTokensDetails *CachedTokens `json:"prompt_tokens_details"`
	// Responses
	InputTokens        int64         `json:"input_tokens"`
	OutputTokens       int64         `json:"output_tokens"`
	InputTokensDetails *CachedTokens `json:"input_tokens_details"`
	// DeepSeek
	PromptCacheHitTokens  *int64 `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens *int64 `json:"prompt_cache_miss_tokens"`
}

// CachedTokens is the detail object that counts cached prompt tokens.
type CachedTokens struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// Wire maps OpenAI usage (cached tokens are part of the prompt tokens) to
// Anthropic's additive form.
func (u *OpenAIUsage) Wire() wire.Usage {
	prompt, out := u.PromptTokens+u.InputTokens, u.CompletionTokens+u.OutputTokens
	var cached int64
	for _, d := range []*CachedTokens{u.PromptTokensDetails, u.InputTokensDetails} {
		if d != nil {
			cached += d.CachedTokens
		}
	}
	if cached == 0 && u.PromptCacheHitTokens != nil {
		cached = *u.PromptCacheHitTokens
	}
	input := prompt - cached
	if prompt == 0 && u.PromptCacheMissTokens != nil {
		input = *u.PromptCacheMissTokens
	}
	return wire.Usage{InputTokens: max(input, 0), OutputTokens: out, CacheReadInputTokens: cached}
}

type oaToolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// argumentsText is the arguments fragment: normally a JSON string; an
// object sent as-is (some local servers) is taken verbatim.
func (d *oaToolCallDelta) argumentsText() string {
	raw := bytes.TrimSpace(d.Function.Arguments)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	return string(raw)
}

type oaChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Content   *string           `json:"content"`
			ToolCalls []oaToolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		Message *struct {
			Content   json.RawMessage   `json:"content"`
			ToolCalls []oaToolCallDelta `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *OpenAIUsage `json:"usage"`
	oaErrorDoc
}

// oaAssembler builds a response from chunks (or from one whole completion).
type oaAssembler struct {
	resp    wire.Response
	text    strings.Builder
	calls   []*oaCallAcc
	byIndex map[int]*oaCallAcc
	finish  string
	onEvent func(wire.Event)
}

type oaCallAcc struct {
	id, name string
	args     strings.Builder
}

func newOAAssembler(onEvent func(wire.Event)) *oaAssembler {
	return &oaAssembler{byIndex: map[int]*oaCallAcc{}, onEvent: onEvent}
}

func (a *oaAssembler) emit(e wire.Event) {
	if a.onEvent != nil {
		a.onEvent(e)
	}
}

func (a *oaAssembler) addText(s string) {
	if s == "" {
		return
	}
	a.text.WriteString(s)
	a.emit(wire.Event{Type: "text_delta", Text: s})
}

// addToolCall merges one tool call fragment. Fragments are grouped by
// index; a fragment with a new id at a used index (or without any index)
// starts a new call, for servers that number every call 0.
func (a *oaAssembler) addToolCall(d oaToolCallDelta) {
	var c *oaCallAcc
	if d.Index != nil {
		c = a.byIndex[*d.Index]
		if c != nil && d.ID != "" && c.id != "" && d.ID != c.id {
			c = nil
		}
	} else if n := len(a.calls); n > 0 && (d.ID == "" || d.ID == a.calls[n-1].id) {
		c = a.calls[n-1]
	}
	if c == nil {
		c = &oaCallAcc{id: d.ID}
		a.calls = append(a.calls, c)
		if d.Index != nil {
			a.byIndex[*d.Index] = c
		}
	}
	if c.id == "" {
		c.id = d.ID
	}
	if name := d.Function.Name; name != "" {
		switch {
		case c.name == "":
			c.name = name
			a.emit(wire.Event{Type: "tool_use", Name: name})
		case name != c.name: // a name split over fragments
			c.name += name
		}
	}
	c.args.WriteString(d.argumentsText())
}

func (a *oaAssembler) apply(ch *oaChunk) error {
	if typ, msg, ok := ch.parse(); ok {
		return oaStreamError(typ, msg)
	}
	if ch.Model != "" {
		a.resp.Model = ch.Model
	}
	if ch.Usage != nil {
		a.resp.Usage = ch.Usage.Wire()
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		if c.Delta != nil {
			if c.Delta.Content != nil {
				a.addText(*c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				a.addToolCall(tc)
			}
		}
		if c.Message != nil {
			a.addText(oaMessageText(c.Message.Content))
			for i, tc := range c.Message.ToolCalls {
				tc.Index = &i // a whole message: every entry is its own call
				a.addToolCall(tc)
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finish = *c.FinishReason
		}
	}
	return nil
}

// oaMessageText reads a whole message's content: a string, null, or a list
// of text parts.
func oaMessageText(raw json.RawMessage) string {
	if s, ok := oaString(raw); ok {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "output_text" {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	return ""
}

func (a *oaAssembler) response() *wire.Response {
	r := a.resp
	r.Content = nil
	if a.text.Len() > 0 {
		r.Content = append(r.Content, wire.Text(a.text.String()))
	}
	for _, c := range a.calls {
		id := c.id
		if id == "" {
			id = oaNewCallID()
		}
		r.Content = append(r.Content, wire.Block{
			Type: wire.TypeToolUse, ID: id, Name: c.name, Input: json.RawMessage(c.args.String()),
		})
	}
	r.Content = cleanBlocks(r.Content)
	hasTools := false
	for _, b := range r.Content {
		if b.Type == wire.TypeToolUse {
			hasTools = true
		}
	}
	switch a.finish {
	case "tool_calls", "function_call":
		r.StopReason = "tool_use"
	case "length":
		r.StopReason = "max_tokens"
	case "content_filter":
		r.StopReason = "refusal"
	default: // stop, eos, none given
		r.StopReason = "end_turn"
	}
	if hasTools && r.StopReason == "end_turn" {
		// Some servers say "stop" after tool calls.
		r.StopReason = "tool_use"
	}
	return &r
}

func oaNewCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// readOpenAISSE assembles a streamed chat completion. A stream that ends
// before [DONE] and without a finish_reason is a retryable failure.
func readOpenAISSE(ctx context.Context, r io.Reader, onEvent func(wire.Event)) (*wire.Response, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	a := newOAAssembler(onEvent)
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "" {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var ch oaChunk
		if json.Unmarshal([]byte(data), &ch) != nil {
			continue
		}
		if err := a.apply(&ch); err != nil {
			return nil, err
		}
	}
	complete := done || a.finish != ""
	if err := sc.Err(); err != nil && !complete {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, netError("the response stream failed", err)
	}
	if !complete {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &wire.APIError{Message: "the response stream ended before the message was complete", Retryable: true}
	}
	return a.response(), nil
}

// decodeChatCompletion reads a non-streamed chat.completion object.
func decodeChatCompletion(b []byte, onEvent func(wire.Event)) (*wire.Response, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, &wire.APIError{Message: "the model sent an empty response", Retryable: true}
	}
	var ch oaChunk
	if err := json.Unmarshal(b, &ch); err != nil {
		return nil, &wire.APIError{Message: "the model's response is not valid JSON", Retryable: true}
	}
	if typ, msg, ok := ch.parse(); ok {
		return nil, oaStreamError(typ, msg)
	}
	if len(ch.Choices) == 0 {
		return nil, &wire.APIError{Message: "the model's response has no choices", Retryable: true}
	}
	a := newOAAssembler(onEvent)
	if err := a.apply(&ch); err != nil {
		return nil, err
	}
	return a.response(), nil
}
