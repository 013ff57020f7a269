package fakellm

import (
	"net/http"
	"time"
)

// chatTurn reads a Chat Completions request. The conversation ends with a
// tool result when its last non-system message has role "tool".
func chatTurn(req *request) turn {
	t := turn{
		prompt: lastUserText(req.Messages, nil),
		tools:  toolsOf(req.Tools),
	}
	t.schema, t.structured = req.structuredSchema()
	if last := lastTurnItem(req.Messages); last.Role == "tool" {
		t.afterTool = true
		t.toolResult = textOf(last.Content)
	}
	return t
}

// chat answers POST /v1/chat/completions.
func (x *exchange) chat() {
	ans := x.turn.answer()
	message, finish := obj{"role": "assistant", "content": ans.text}, "stop"
	var call obj
	if ans.call != nil {
		call = obj{"id": x.s.newID("call"), "type": "function",
			"function": obj{"name": ans.call.name, "arguments": ans.call.argsJSON()}}
		message = obj{"role": "assistant", "content": nil, "tool_calls": []obj{call}}
		finish = "tool_calls"
	}
	outTokens := tokensOf(message)
	read, _ := x.turn.cache(x.inTokens)
	usage := obj{
		"prompt_tokens":         x.inTokens,
		"completion_tokens":     outTokens,
		"total_tokens":          x.inTokens + outTokens,
		"prompt_tokens_details": obj{"cached_tokens": read},
	}
	id, created, model := x.s.newID("chatcmpl"), time.Now().Unix(), x.modelName()

	if !x.req.Stream {
		if x.hold() {
			x.s.writeJSON(x.w, http.StatusOK, obj{
				"id": id, "object": "chat.completion", "created": created, "model": model,
				"choices": []obj{{"index": 0, "message": message, "finish_reason": finish}},
				"usage":   usage,
			})
		}
		return
	}

	chunk := func(choices []obj) obj {
		return obj{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": model, "choices": choices}
	}
	delta := func(d obj, finish any) obj {
		return chunk([]obj{{"index": 0, "delta": d, "finish_reason": finish}})
	}
	st := x.s.startSSE(x.w)
	st.event("", delta(obj{"role": "assistant", "content": ""}, nil))
	if !x.hold() {
		return
	}
	if ans.call == nil {
		for _, p := range pieces(ans.text, 3) {
			st.event("", delta(obj{"content": p}, nil))
		}
	} else {
		st.event("", delta(obj{"tool_calls": []obj{{"index": 0, "id": call["id"], "type": "function",
			"function": obj{"name": ans.call.name, "arguments": ""}}}}, nil))
		st.event("", delta(obj{"tool_calls": []obj{{"index": 0,
			"function": obj{"arguments": ans.call.argsJSON()}}}}, nil))
	}
	st.event("", delta(obj{}, finish))
	if x.req.StreamOptions.IncludeUsage {
		usageChunk := chunk([]obj{})
		usageChunk["usage"] = usage
		st.event("", usageChunk)
	}
	st.done()
}
