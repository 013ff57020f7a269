package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
)

// Answer is how a main-loop request ended, as the agent's turn reads it:
// the assistant text the upstream answered, how many tool calls it asked
// for, or why it failed. The supervisor takes a CLI agent's task result
// and failure from its turn's last answer (docs/gateway.md).
type Answer struct {
	Started, Ended time.Time
	// Text is the answer's assistant text (every text part, in order),
	// at most MaxAnswerText bytes; Cut counts the bytes left out.
	Text string
	Cut  int
	// ToolCalls is how many tool calls the answer asked for: an answer
	// with some is not the turn's last word.
	ToolCalls int
	// Status is the upstream's HTTP status (502 when it gave none).
	Status int
	// Error says why the request failed: the upstream's error status and
	// message, an error event in its stream, a stream broken off, the
	// upstream unreachable; "" when it was answered in full.
	Error string
	// Cancelled: the agent went away before the answer was complete (it
	// interrupted its own request), which is no failure of the upstream.
	Cancelled bool
}

// Failed reports whether the upstream failed the request.
func (a Answer) Failed() bool { return a.Error != "" && !a.Cancelled }

// MaxAnswerText bounds the text an Answer keeps.
const MaxAnswerText = 64 << 10

// answerText collects an answer's text up to MaxAnswerText bytes.
type answerText struct {
	b   strings.Builder
	cut int
}

func (t *answerText) add(s string) {
	if room := MaxAnswerText - t.b.Len(); len(s) > room {
		keep := max(room, 0)
		for keep > 0 && !utf8.RuneStart(s[keep]) {
			keep--
		}
		t.b.WriteString(s[:keep])
		t.cut += len(s) - keep
		return
	}
	t.b.WriteString(s)
}

// reset forgets what was collected (a final answer object replaces the
// deltas that streamed before it).
func (t *answerText) reset() { t.b.Reset(); t.cut = 0 }

// content reads an answer's content: Anthropic content blocks, a Chat
// Completions message, or Responses output items.
type content struct {
	// Anthropic: content blocks.
	Content json.RawMessage `json:"content"`
	// Chat Completions: choices[].message; Responses: output items.
	Choices []struct {
		Message struct {
			Content   json.RawMessage   `json:"content"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Output []outputItem     `json:"output"`
	Error  *json.RawMessage `json:"error"`
}

// outputItem is a Responses output item.
type outputItem struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// block is an Anthropic content block.
type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// isToolCall reports whether a Responses output item is a call the
// client runs (a function, a custom tool, a local shell, an MCP tool),
// not one the upstream ran itself (web or file search).
func isToolCall(typ string) bool {
	switch typ {
	case "function_call", "custom_tool_call", "local_shell_call", "mcp_call", "computer_call", "apply_patch_call", "shell_call":
		return true
	}
	return false
}

// read takes the text and tool calls of a whole answer object.
func (c *content) read(api API, t *answerText) (tools int) {
	switch api {
	case Anthropic:
		var blocks []block
		if json.Unmarshal(c.Content, &blocks) == nil {
			for _, b := range blocks {
				switch b.Type {
				case "text":
					t.add(b.Text)
				case "tool_use":
					tools++
				}
			}
		}
	case Chat:
		if len(c.Choices) > 0 {
			m := c.Choices[0].Message
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				t.add(s)
			} else {
				for _, p := range texts(m.Content) {
					t.add(p)
				}
			}
			tools = len(m.ToolCalls)
		}
	case Responses:
		for _, it := range c.Output {
			switch {
			case it.Type == "message":
				for _, p := range it.Content {
					if p.Type == "output_text" {
						t.add(p.Text)
					}
				}
			case isToolCall(it.Type):
				tools++
			}
		}
	}
	return tools
}

// errorText is an error object's type and message, as upstreams send them
// ({"type","message"}, OpenAI's {"code","message"} or Google's
// {"status","message"}), or raw when it is not one.
func errorText(raw []byte) string {
	var e struct {
		Type    string `json:"type"`
		Status  string `json:"status"`
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Message == "" {
		return strings.TrimSpace(clip.Bytes(string(raw), 300))
	}
	kind := firstSet(e.Type, e.Status)
	if kind == "" || kind == "error" {
		if s, ok := e.Code.(string); ok {
			kind = s
		}
	}
	if kind == "" {
		return e.Message
	}
	return kind + ": " + e.Message
}

// errorBody is the message of an error answer's body: Anthropic's
// {"type":"error","error":{…}}, OpenAI's {"error":{…}}, or the start of a
// body of another shape.
func errorBody(body []byte) string {
	var top struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &top) == nil && len(top.Error) > 0 {
		var s string
		if json.Unmarshal(top.Error, &s) == nil {
			return s
		}
		return errorText(top.Error)
	}
	return strings.TrimSpace(clip.Bytes(string(body), 300))
}

// upstreamError is the Error of an answer the upstream refused.
func upstreamError(status int, msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if msg == "" {
		return fmt.Sprintf("the upstream answered %d", status)
	}
	return fmt.Sprintf("the upstream answered %d: %s", status, msg)
}

// isBlank reports whether b holds only spaces.
func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }
