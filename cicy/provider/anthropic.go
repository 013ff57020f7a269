package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// Anthropic speaks the Messages API with streaming (SSE).
type Anthropic struct {
	BaseURL   string // without the /v1/messages path
	APIKey    string // sent as x-api-key
	AuthToken string // sent as a bearer token when there is no APIKey
	HTTP      *http.Client
	Retry     Retry
}

const anthropicVersion = "2023-06-01"

// Stream sends req (with stream: true) and assembles the answer.
func (a *Anthropic) Stream(ctx context.Context, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error) {
	r := *req
	r.Stream = true
	body, err := r.Body()
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return a.Retry.Do(ctx, func() (*wire.Response, error) { return a.once(ctx, body, req, onEvent) })
}

func (a *Anthropic) once(ctx context.Context, body []byte, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error) {
	h := http.Header{"anthropic-version": {anthropicVersion}}
	if a.APIKey != "" {
		h.Set("x-api-key", a.APIKey)
	} else if a.AuthToken != "" {
		h.Set("Authorization", "Bearer "+a.AuthToken)
	}
	resp, err := postStream(ctx, a.HTTP, strings.TrimRight(a.BaseURL, "/")+"/v1/messages", body, h, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return nil, anthropicHTTPError(resp)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return decodeMessage(resp.Body)
	}
	return readAnthropicSSE(ctx, resp.Body, onEvent)
}

// postStream posts a JSON body asking for an SSE answer, with the given
// headers and the X-Cicy ones. A transport failure is a retryable
// APIError; the URL is never repeated in an error (it could carry
// credentials).
func postStream(ctx context.Context, c *http.Client, url string, body []byte, h http.Header, req *wire.Request) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("build request: the base URL is not valid")
	}
	for k, v := range h {
		hr.Header[http.CanonicalHeaderKey(k)] = v
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	setCicyHeaders(hr.Header, req)
	resp, err := httpClient(c).Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, netError("the request to the model failed", err)
	}
	return resp, nil
}

func setCicyHeaders(h http.Header, req *wire.Request) {
	if req.PaneID != "" {
		h.Set("X-Cicy-Pane", req.PaneID)
	}
	if req.Aux != "" {
		h.Set("X-Cicy-Aux", req.Aux)
	} else if req.TurnID != "" {
		h.Set("X-Cicy-Turn-Id", req.TurnID)
	}
}

func httpClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return http.DefaultClient
}

// anthropicHTTPError reads an error response: the JSON error document when
// there is one, else the first bytes of whatever came back.
func anthropicHTTPError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var doc struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	ae := &wire.APIError{Status: resp.StatusCode, RetryAfterSeconds: parseRetryAfter(resp.Header)}
	if json.Unmarshal(b, &doc) == nil && (doc.Error.Type != "" || doc.Error.Message != "") {
		ae.Type, ae.Message = doc.Error.Type, doc.Error.Message
	} else {
		ae.Message = bodySnippet(b, resp.Status)
	}
	ae.Retryable = retryableStatus(resp.StatusCode) || ae.Type == "overloaded_error"
	return ae
}

// bodySnippet is a short, single-line excerpt of a non-JSON error body.
func bodySnippet(b []byte, fallback string) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return fallback
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// decodeMessage reads a non-streamed Messages API answer.
func decodeMessage(r io.Reader) (*wire.Response, error) {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, netError("reading the response failed", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, &wire.APIError{Message: "the model sent an empty response", Retryable: true}
	}
	var m wire.Response
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &wire.APIError{Message: "the model's response is not valid JSON", Retryable: true}
	}
	m.Content = cleanBlocks(m.Content)
	return &m, nil
}

// cleanBlocks drops empty text and thinking blocks (thinking is not kept:
// without its signature the API rejects it on the next round) and makes
// every tool_use input a JSON object.
func cleanBlocks(in []wire.Block) []wire.Block {
	out := in[:0:0]
	for _, b := range in {
		switch b.Type {
		case wire.TypeText:
			if b.Text == "" {
				continue
			}
		case wire.TypeThinking, "redacted_thinking":
			continue
		case wire.TypeToolUse:
			var obj map[string]json.RawMessage
			if len(b.Input) == 0 || json.Unmarshal(b.Input, &obj) != nil || obj == nil {
				b.BadInput = len(bytes.TrimSpace(b.Input)) > 0 && string(b.Input) != "null"
				b.Input = json.RawMessage("{}")
			}
		}
		b.CacheControl = nil
		out = append(out, b)
	}
	return out
}

// sseBlock accumulates one content block of a stream.
type sseBlock struct {
	block wire.Block
	json  strings.Builder // tool_use input as it streams
}

// readAnthropicSSE assembles a streamed Messages API answer. A stream that
// ends before message_stop is a retryable failure.
func readAnthropicSSE(ctx context.Context, r io.Reader, onEvent func(wire.Event)) (*wire.Response, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	resp := &wire.Response{}
	blocks := map[int]*sseBlock{}
	done := false
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "" || data == "[DONE]" {
			continue
		}
		var ev anthropicEvent
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		if err := ev.apply(resp, blocks, onEvent); err != nil {
			return nil, err
		}
		if ev.Type == "message_stop" {
			done = true
			break
		}
	}
	if err := sc.Err(); err != nil && !done {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, netError("the response stream failed", err)
	}
	if !done {
		return nil, &wire.APIError{Message: "the response stream ended before the message was complete", Retryable: true}
	}
	idx := make([]int, 0, len(blocks))
	for i := range blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		b := blocks[i]
		if b.block.Type == wire.TypeToolUse {
			b.block.Input = json.RawMessage(b.json.String())
		}
		resp.Content = append(resp.Content, b.block)
	}
	resp.Content = cleanBlocks(resp.Content)
	return resp, nil
}

type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Model string     `json:"model"`
		Usage wire.Usage `json:"usage"`
	} `json:"message"`
	ContentBlock *wire.Block `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wire.Usage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (ev *anthropicEvent) apply(resp *wire.Response, blocks map[int]*sseBlock, onEvent func(wire.Event)) error {
	emit := func(e wire.Event) {
		if onEvent != nil {
			onEvent(e)
		}
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			resp.Model = ev.Message.Model
			resp.Usage = ev.Message.Usage
		}
	case "content_block_start":
		if ev.ContentBlock == nil || ev.Index < 0 || ev.Index > 1024 {
			return nil
		}
		b := &sseBlock{block: *ev.ContentBlock}
		if b.block.Type == wire.TypeToolUse {
			// The start event carries input {} and the real input streams
			// as partial JSON after it.
			b.block.Input = nil
			emit(wire.Event{Type: "tool_use", Name: b.block.Name})
		}
		blocks[ev.Index] = b
	case "content_block_delta":
		b := blocks[ev.Index]
		if b == nil || ev.Delta == nil {
			return nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			b.block.Text += ev.Delta.Text
			emit(wire.Event{Type: "text_delta", Text: ev.Delta.Text})
		case "input_json_delta":
			b.json.WriteString(ev.Delta.PartialJSON)
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			resp.StopReason = ev.Delta.StopReason
		}
		if ev.Usage != nil {
			// message_delta's usage is cumulative; output tokens always,
			// input fields only when the server sends them.
			resp.Usage.OutputTokens = ev.Usage.OutputTokens
			if ev.Usage.InputTokens > 0 {
				resp.Usage.InputTokens = ev.Usage.InputTokens
			}
			if ev.Usage.CacheReadInputTokens > 0 {
				resp.Usage.CacheReadInputTokens = ev.Usage.CacheReadInputTokens
			}
			if ev.Usage.CacheCreationInputTokens > 0 {
				resp.Usage.CacheCreationInputTokens = ev.Usage.CacheCreationInputTokens
			}
		}
	case "error":
		ae := &wire.APIError{Message: "the model reported an error mid-stream"}
		if ev.Error != nil {
			ae.Type, ae.Message = ev.Error.Type, ev.Error.Message
		}
		ae.Retryable = ae.Type == "overloaded_error" || ae.Type == "api_error" || ae.Type == "rate_limit_error"
		return ae
	}
	return nil
}
