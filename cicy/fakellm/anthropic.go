package fakellm

import (
	"maps"
	"net/http"
)

// anthropicTurn reads a Messages API request. The conversation ends with a
// tool result when its last non-system message is a user message holding
// tool_result blocks.
func anthropicTurn(req *request) turn {
	t := turn{
		prompt: lastUserText(req.Messages, nil),
		tools:  toolsOf(req.Tools),
	}
	t.schema, t.structured = req.structuredSchema()
	if last := lastTurnItem(req.Messages); last.Role == "user" {
		for _, p := range parts(last.Content) {
			if p.Type == "tool_result" {
				t.afterTool = true
				t.toolResult += textOf(p.Content)
			}
		}
	}
	return t
}

// anthropic answers POST /v1/messages.
func (x *exchange) anthropic() {
	ans := x.turn.answer()
	block, stop := obj{"type": "text", "text": ans.text}, "end_turn"
	if ans.call != nil {
		block = obj{"type": "tool_use", "id": x.s.newID("toolu"), "name": ans.call.name, "input": ans.call.args}
		stop = "tool_use"
	}
	content := []obj{block}
	read, write := x.turn.cache(x.inTokens)
	usage := obj{
		"input_tokens":                x.inTokens - read - write,
		"output_tokens":               tokensOf(content),
		"cache_creation_input_tokens": write,
		"cache_read_input_tokens":     read,
	}
	msg := obj{
		"id": x.s.newID("msg"), "type": "message", "role": "assistant",
		"model": x.modelName(), "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": usage,
	}

	if !x.req.Stream {
		if x.hold() {
			x.s.writeJSON(x.w, http.StatusOK, msg)
		}
		return
	}

	st := x.s.startSSE(x.w)
	start := maps.Clone(msg)
	start["content"], start["stop_reason"] = []obj{}, nil
	start["usage"] = obj{
		"input_tokens": usage["input_tokens"], "output_tokens": 1,
		"cache_creation_input_tokens": write, "cache_read_input_tokens": read,
	}
	st.event("message_start", obj{"type": "message_start", "message": start})
	st.event("ping", obj{"type": "ping"})
	if !x.hold() {
		return
	}
	if ans.call == nil {
		st.event("content_block_start", obj{"type": "content_block_start", "index": 0,
			"content_block": obj{"type": "text", "text": ""}})
		for _, p := range pieces(ans.text, 3) {
			st.event("content_block_delta", obj{"type": "content_block_delta", "index": 0,
				"delta": obj{"type": "text_delta", "text": p}})
		}
	} else {
		st.event("content_block_start", obj{"type": "content_block_start", "index": 0,
			"content_block": obj{"type": "tool_use", "id": block["id"], "name": ans.call.name, "input": obj{}}})
		st.event("content_block_delta", obj{"type": "content_block_delta", "index": 0,
			"delta": obj{"type": "input_json_delta", "partial_json": ans.call.argsJSON()}})
	}
	st.event("content_block_stop", obj{"type": "content_block_stop", "index": 0})
	st.event("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": stop, "stop_sequence": nil},
		"usage": obj{"output_tokens": usage["output_tokens"]}})
	st.event("message_stop", obj{"type": "message_stop"})
}
