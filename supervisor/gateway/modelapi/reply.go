package modelapi

import (
	"encoding/json"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// reply is a model's answer in the terms every API's encoder takes.
type reply struct {
	text  string
	calls []toolCall
	stop  string // Anthropic's stop_reason; "" is end_turn, or tool_use with calls
	model string // "" is the model the client asked for
	usage usage
}

// usage is token usage in Anthropic's additive shape: input excludes the
// cache reads and writes. The OpenAI APIs report input+cacheRead+cacheWrite
// as their prompt, cacheRead as its cached part.
type usage struct {
	input, output, cacheRead, cacheWrite int
}

// prompt is the whole prompt, as the OpenAI APIs count it.
func (u usage) prompt() int { return u.input + u.cacheRead + u.cacheWrite }

// stopReason is the reply's Anthropic stop_reason.
func (rp reply) stopReason() string {
	switch {
	case rp.stop != "":
		return rp.stop
	case len(rp.calls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

// chatFinishes are the Chat Completions finish_reasons of Anthropic
// stop_reasons; any other is "stop".
var chatFinishes = map[string]string{"tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}

// finishReason is the reply's Chat Completions finish_reason.
func (rp reply) finishReason() string { return rp.stopAs(chatFinishes, "stop") }

// stopAs is the reply's stop_reason in another API's words: the one names
// gives, else other.
func (rp reply) stopAs(names map[string]string, other string) string {
	if name, ok := names[rp.stopReason()]; ok {
		return name
	}
	return other
}

// hasText reports whether the reply has a text part: it has one when it
// has text, or nothing else.
func (rp reply) hasText() bool { return rp.text != "" || len(rp.calls) == 0 }

// replyOf is a model's response to the turn as a reply: its text blocks
// joined by blank lines, its tool_use blocks as calls; a call of a member
// of a Responses namespace tool names the namespace and the member apart.
func (t *turn) replyOf(resp *wire.Response) reply {
	rp := reply{stop: resp.StopReason, model: resp.Model, usage: usage{
		input:      int(resp.Usage.InputTokens),
		output:     int(resp.Usage.OutputTokens),
		cacheRead:  int(resp.Usage.CacheReadInputTokens),
		cacheWrite: int(resp.Usage.CacheCreationInputTokens),
	}}
	var texts []string
	for _, b := range resp.Content {
		switch b.Type {
		case wire.TypeText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case wire.TypeToolUse:
			c := toolCall{name: b.Name, args: argsOf(b.Input)}
			if tl := t.tool(b.Name); tl != nil {
				c.namespace, c.leaf = tl.namespace, tl.leaf
			}
			rp.calls = append(rp.calls, c)
		}
	}
	rp.text = strings.Join(texts, "\n\n")
	return rp
}

// argsOf decodes a tool call's input object; anything else is passed as
// {"input": <it>}.
func argsOf(input json.RawMessage) map[string]any {
	args := map[string]any{}
	if len(input) == 0 {
		return args
	}
	if err := json.Unmarshal(input, &args); err != nil || args == nil {
		var v any
		if json.Unmarshal(input, &v) != nil {
			v = string(input)
		}
		return map[string]any{"input": v}
	}
	return args
}
