package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// request is what the gateway reads from a model request, for all four
// APIs at once; every other key is left alone.
type request struct {
	Model               string          `json:"model"`
	Stream              bool            `json:"stream"`
	MaxTokens           count           `json:"max_tokens"`            // Anthropic, Chat (old)
	MaxCompletionTokens count           `json:"max_completion_tokens"` // Chat
	MaxOutputTokens     count           `json:"max_output_tokens"`     // Responses
	N                   count           `json:"n"`                     // Chat: the choices to generate
	BestOf              count           `json:"best_of"`               // OpenAI Completions: the candidates generated
	StreamOptions       json.RawMessage `json:"stream_options"`        // Chat Completions
	System              json.RawMessage `json:"system"`                // Anthropic: a string or text blocks
	Instructions        json.RawMessage `json:"instructions"`          // Responses
	Messages            []message       `json:"messages"`              // Anthropic, Chat Completions
	Input               json.RawMessage `json:"input"`                 // Responses: a string or items

	// Gemini: its conversation (contents of parts), its system
	// instruction, its output limit. Its model is in the path.
	Contents          []message `json:"contents"`
	SystemInstruction *message  `json:"systemInstruction"`
	GenerationConfig  struct {
		MaxOutputTokens count `json:"maxOutputTokens"`
		CandidateCount  count `json:"candidateCount"`
	} `json:"generationConfig"`
}

// maxCount bounds a count read from a request, so that products of
// counts stay far from overflowing.
const maxCount = 1 << 30

// count is a request's count (max_tokens, n...): a JSON number, rounded up
// when not whole and at most maxCount; anything else (null, a string) is
// not said, 0, and left to the upstream to refuse.
type count int

func (c *count) UnmarshalJSON(b []byte) error {
	var f float64
	if json.Unmarshal(b, &f) != nil {
		*c = 0
		return nil
	}
	switch {
	case f >= maxCount:
		*c = maxCount
	case f > 0:
		*c = count(math.Ceil(f))
	default:
		*c = 0
	}
	return nil
}

// maxOutput is the most output tokens one answer of the request may
// have: the largest of the limits it gives (0: none given).
func (r *request) maxOutput() int {
	return int(max(r.MaxTokens, r.MaxCompletionTokens, r.MaxOutputTokens, r.GenerationConfig.MaxOutputTokens))
}

// choices is how many answers the request has the upstream generate,
// each billed up to maxOutput: Chat Completions' n, Completions'
// best_of, Gemini's candidateCount; at least 1.
func (r *request) choices() int {
	return int(max(r.N, r.BestOf, r.GenerationConfig.CandidateCount, 1))
}

// message is a message, a Responses input item or a Gemini content.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of parts
	Parts   json.RawMessage `json:"parts"`   // Gemini: a list of parts
}

// content is the message's content, or a Gemini content's parts.
func (m message) content() json.RawMessage {
	if len(m.Content) == 0 {
		return m.Parts
	}
	return m.Content
}

// parseRequest decodes a request body.
func parseRequest(body []byte) (*request, error) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	return &req, nil
}

// includeUsage reports whether a Chat Completions request asks for the
// usage chunk.
func (r *request) includeUsage() bool {
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	_ = json.Unmarshal(r.StreamOptions, &so) // absent or odd: not asked
	return so.IncludeUsage
}

// systemTexts are the request's system prompt parts: Anthropic's system
// blocks, Responses instructions, Gemini's system instruction, and the
// text of system and developer messages.
func (r *request) systemTexts() []string {
	out := texts(r.System)
	out = append(out, texts(r.Instructions)...)
	if r.SystemInstruction != nil {
		out = append(out, texts(r.SystemInstruction.content())...)
	}
	for _, m := range r.messages() {
		if m.Role == "system" || m.Role == "developer" {
			out = append(out, texts(m.content())...)
		}
	}
	return out
}

// lastUserText is the last non-blank text part of the last user message
// that has one.
func (r *request) lastUserText() string {
	ms := r.messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role != "user" {
			continue
		}
		ts := texts(ms[i].content())
		for j := len(ts) - 1; j >= 0; j-- {
			if strings.TrimSpace(ts[j]) != "" {
				return ts[j]
			}
		}
	}
	return ""
}

// messages are the request's messages, its Gemini contents, or its
// Responses input items (a string input is one user message).
func (r *request) messages() []message {
	if len(r.Contents) > 0 {
		return r.Contents
	}
	if len(r.Messages) > 0 || len(r.Input) == 0 {
		return r.Messages
	}
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		return []message{{Role: "user", Content: r.Input}}
	}
	var items []message
	_ = json.Unmarshal(r.Input, &items) // an input of another shape has no messages
	return items
}

// texts are the texts in content: a string, or a list of strings and parts
// with a "text" key.
func texts(content json.RawMessage) []string {
	if len(content) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []string{s}
	}
	var parts []json.RawMessage
	if json.Unmarshal(content, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		var part struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(p, &s) == nil {
			out = append(out, s)
		} else if json.Unmarshal(p, &part) == nil && part.Text != "" {
			out = append(out, part.Text)
		}
	}
	return out
}

// withIncludeUsage returns body with stream_options.include_usage set to
// true, keeping the other stream options. Key order is not kept; the
// upstream does not care.
func withIncludeUsage(body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	opts := map[string]json.RawMessage{}
	if raw := top["stream_options"]; len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &opts); err != nil {
			return nil, fmt.Errorf("decode stream_options: %w", err)
		}
	}
	opts["include_usage"] = json.RawMessage("true")
	var err error
	if top["stream_options"], err = marshal(opts); err != nil {
		return nil, err
	}
	return marshal(top)
}

// marshal encodes v as JSON without HTML escaping and without the
// trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
