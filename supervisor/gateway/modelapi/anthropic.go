package modelapi

import (
	"encoding/json"
	"maps"
)

// anthropicTurn reads a Messages API request. The conversation ends with a
// tool result when its last non-system message is a user message holding
// tool_result blocks.
func anthropicTurn(req *request) turn {
	t := req.turnOf(req.Messages, nil)
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

// anthropic answers POST /v1/messages: a text block when the reply has
// text (or nothing else), then a tool_use block per call.
func (x *exchange) anthropic() {
	rp := x.reply
	var content []obj
	if rp.hasText() {
		content = append(content, obj{"type": "text", "text": rp.text})
	}
	var ids []string
	for _, c := range rp.calls {
		id := x.h.newID("toolu")
		ids = append(ids, id)
		content = append(content, obj{"type": "tool_use", "id": id, "name": c.name, "input": c.args})
	}
	u, stop := rp.usage, rp.stopReason()
	msg := obj{
		"id": x.h.newID("msg"), "type": "message", "role": "assistant",
		"model": x.modelName(), "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": obj{
			"input_tokens":                u.input,
			"output_tokens":               u.output,
			"cache_creation_input_tokens": u.cacheWrite,
			"cache_read_input_tokens":     u.cacheRead,
		},
	}

	if !x.req.Stream {
		x.writeWhole(msg, ids)
		return
	}

	st := x.h.startSSE(x.w)
	start := maps.Clone(msg)
	start["content"], start["stop_reason"] = []obj{}, nil
	start["usage"] = obj{
		"input_tokens": u.input, "output_tokens": 1,
		"cache_creation_input_tokens": u.cacheWrite, "cache_read_input_tokens": u.cacheRead,
	}
	st.event("message_start", obj{"type": "message_start", "message": start})
	st.event("ping", obj{"type": "ping"})
	if !x.hold() {
		return
	}
	for i, block := range content {
		anthropicBlock(st, i, block)
	}
	st.event("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": stop, "stop_sequence": nil},
		"usage": obj{"output_tokens": u.output}})
	st.event("message_stop", obj{"type": "message_stop"})
	x.delivered(ids)
}

// anthropicBlock streams content block i: its start, deltas and stop.
func anthropicBlock(st *sseStream, i int, block obj) {
	if block["type"] == "text" {
		st.event("content_block_start", obj{"type": "content_block_start", "index": i,
			"content_block": obj{"type": "text", "text": ""}})
		for _, p := range pieces(block["text"].(string), 3) {
			st.event("content_block_delta", obj{"type": "content_block_delta", "index": i,
				"delta": obj{"type": "text_delta", "text": p}})
		}
	} else {
		args, _ := json.Marshal(block["input"]) // a map of decoded JSON always marshals
		st.event("content_block_start", obj{"type": "content_block_start", "index": i,
			"content_block": obj{"type": "tool_use", "id": block["id"], "name": block["name"], "input": obj{}}})
		st.event("content_block_delta", obj{"type": "content_block_delta", "index": i,
			"delta": obj{"type": "input_json_delta", "partial_json": string(args)}})
	}
	st.event("content_block_stop", obj{"type": "content_block_stop", "index": i})
}
