package modelapi

import "time"

// chatTurn reads a Chat Completions request. The conversation ends with a
// tool result when its last non-system message has role "tool".
func chatTurn(req *request) turn {
	t := req.turnOf(req.Messages, nil)
	if last := lastTurnItem(req.Messages); last.Role == "tool" {
		t.afterTool = true
		t.toolResult = textOf(last.Content)
	}
	return t
}

// chat answers POST /v1/chat/completions: one choice whose message has
// the reply's text and its calls.
func (x *exchange) chat() {
	rp := x.reply
	message := obj{"role": "assistant", "content": rp.text}
	var calls []obj
	var ids []string
	for _, c := range rp.calls {
		id := x.h.newID("call")
		ids = append(ids, id)
		calls = append(calls, obj{"id": id, "type": "function",
			"function": obj{"name": c.name, "arguments": c.argsJSON()}})
	}
	if len(calls) > 0 {
		message["tool_calls"] = calls
		if rp.text == "" {
			message["content"] = nil
		}
	}
	finish, u := rp.finishReason(), rp.usage
	usage := obj{
		"prompt_tokens":         u.prompt(),
		"completion_tokens":     u.output,
		"total_tokens":          u.prompt() + u.output,
		"prompt_tokens_details": obj{"cached_tokens": u.cacheRead},
	}
	id, created, model := x.h.newID("chatcmpl"), time.Now().Unix(), x.modelName()

	if !x.req.Stream {
		x.writeWhole(obj{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []obj{{"index": 0, "message": message, "finish_reason": finish}},
			"usage":   usage,
		}, ids)
		return
	}

	chunk := func(choices []obj) obj {
		return obj{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": model, "choices": choices}
	}
	delta := func(d obj, finish any) obj {
		return chunk([]obj{{"index": 0, "delta": d, "finish_reason": finish}})
	}
	st := x.h.startSSE(x.w)
	st.event("", delta(obj{"role": "assistant", "content": ""}, nil))
	if !x.hold() {
		return
	}
	if rp.hasText() {
		for _, p := range pieces(rp.text, 3) {
			st.event("", delta(obj{"content": p}, nil))
		}
	}
	for i, call := range calls {
		fn := call["function"].(obj)
		st.event("", delta(obj{"tool_calls": []obj{{"index": i, "id": call["id"], "type": "function",
			"function": obj{"name": fn["name"], "arguments": ""}}}}, nil))
		st.event("", delta(obj{"tool_calls": []obj{{"index": i,
			"function": obj{"arguments": fn["arguments"]}}}}, nil))
	}
	st.event("", delta(obj{}, finish))
	if x.req.StreamOptions.IncludeUsage {
		usageChunk := chunk([]obj{})
		usageChunk["usage"] = usage
		st.event("", usageChunk)
	}
	st.done()
	x.delivered(ids)
}
