// Package wire holds the conversation types every part of the cicy runtime
// shares: Anthropic-shaped messages and content blocks (the history on disk
// and the request on the wire use the same shapes), the request a turn
// round sends, the response it gets back, token usage and stream events.
//
// Providers that speak another protocol (OpenAI Chat Completions) translate
// to and from these types at their edge.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CacheControl marks a prompt-cache breakpoint (Anthropic).
type CacheControl struct {
	Type string `json:"type"` // always "ephemeral"
}

// Ephemeral is the one cache_control value used.
func Ephemeral() *CacheControl { return &CacheControl{Type: "ephemeral"} }

// Block is one content block: text, tool_use, tool_result or thinking.
// Field order is the JSON order, fixed, so the same block always encodes to
// the same bytes.
type Block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result: the content is always a string here.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// thinking
	Thinking string `json:"thinking,omitempty"`

	// BadInput marks a tool_use whose input arrived cut off or not valid
	// JSON (Input is then "{}"); it is answered with an error result. Never
	// serialised.
	BadInput bool `json:"-"`

	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// Block types.
const (
	TypeText       = "text"
	TypeToolUse    = "tool_use"
	TypeToolResult = "tool_result"
	TypeThinking   = "thinking"
)

// Text returns a text block.
func Text(s string) Block { return Block{Type: TypeText, Text: s} }

// ToolResult returns a tool_result block.
func ToolResult(toolUseID, content string, isError bool) Block {
	return Block{Type: TypeToolResult, ToolUseID: toolUseID, Content: content, IsError: isError}
}

// Message is one turn of the conversation. Content is always a list of
// blocks; a plain-string content read from elsewhere becomes one text block.
type Message struct {
	Role    string  `json:"role"` // user | assistant
	Content []Block `json:"content"`
}

// UnmarshalJSON accepts content as a string or a list of blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	m.Content = nil
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		return nil
	}
	if raw.Content[0] == '"' {
		var s string
		if err := json.Unmarshal(raw.Content, &s); err != nil {
			return err
		}
		m.Content = []Block{Text(s)}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// Roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// ToolUses returns the tool_use blocks of the message.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == TypeToolUse {
			out = append(out, b)
		}
	}
	return out
}

// JoinedText returns the message's text blocks joined by blank lines.
func (m Message) JoinedText() string {
	s := ""
	for _, b := range m.Content {
		if b.Type == TypeText && b.Text != "" {
			if s != "" {
				s += "\n\n"
			}
			s += b.Text
		}
	}
	return s
}

// Tool is a tool definition as the Messages API takes it.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

// ToolChoice constrains tool use ("auto", "any", "none").
type ToolChoice struct {
	Type string `json:"type"`
}

// Request is one model call. The JSON fields are the Messages API body;
// the others travel as headers or select the provider.
type Request struct {
	Model     string  `json:"model"`
	MaxTokens int     `json:"max_tokens"`
	System    []Block `json:"system,omitempty"`
	Tools     []Tool  `json:"tools,omitempty"`
	// ToolChoice is set only on a turn's final round ({"type":"none"}).
	ToolChoice *ToolChoice `json:"tool_choice,omitempty"`
	Messages   []Message   `json:"messages"`
	Stream     bool        `json:"stream"`

	// RawMessages, when set, is the JSON of each of Messages, ready to be
	// spliced into the body by Body (the turn loop caches the history's
	// encoding; re-encoding 600 messages every round is the largest local
	// cost of a round).
	RawMessages [][]byte `json:"-"`

	PaneID string `json:"-"` // X-Cicy-Pane
	TurnID string `json:"-"` // X-Cicy-Turn-Id (main turns)
	Aux    string `json:"-"` // X-Cicy-Aux: compact | memory (aux calls)
}

// Usage is the token usage of one response, in Anthropic's additive form:
// the prompt is InputTokens + CacheCreationInputTokens + CacheReadInputTokens.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Add sums usages.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
}

// Response is a model's complete answer.
type Response struct {
	Model      string  `json:"model"`
	Content    []Block `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      Usage   `json:"usage"`
}

// Event is streamed while a response is produced, for viewers.
type Event struct {
	Type string // "text_delta" | "tool_use" (a tool call began; Name set)
	Text string
	Name string
}

// APIError is a failed model call: an HTTP status and the provider's error
// type and message. Message never holds credentials.
type APIError struct {
	Status    int    // HTTP status; 0 for a network or stream failure
	Type      string // provider error type, e.g. overloaded_error
	Message   string
	Retryable bool
	// RetryAfter is the server's retry-after, when it gave one.
	RetryAfterSeconds float64
}

func (e *APIError) Error() string {
	switch {
	case e.Status == 0:
		return e.Message
	case e.Type != "":
		return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Type, e.Message)
	default:
		return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
	}
}

// Body is the request's JSON body: json.Marshal of it, with RawMessages
// spliced in for "messages" when they are set (byte for byte what
// json.Marshal of Messages gives, since they are its parts).
func (r *Request) Body() ([]byte, error) {
	if len(r.RawMessages) == 0 || len(r.RawMessages) != len(r.Messages) {
		return json.Marshal(r)
	}
	head := *r
	head.Messages = nil
	b, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	const hole = `"messages":null,"stream"`
	i := bytes.LastIndex(b, []byte(hole))
	if i < 0 {
		return json.Marshal(r)
	}
	size := len(b) + 2
	for _, m := range r.RawMessages {
		size += len(m) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, b[:i]...)
	out = append(out, `"messages":[`...)
	for k, m := range r.RawMessages {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	out = append(out, ']', ',')
	return append(out, b[i+len(`"messages":null,`):]...), nil
}
