package fakellm

import (
	"encoding/json"
	"maps"
	"net/http"
	"time"
)

// responsesTurn reads a Responses API request. The prompt is the last user
// message that is not context Codex injects; the conversation ends with a
// tool result when its last item is a tool call output.
func responsesTurn(req *request) turn {
	items := inputItems(req.Input)
	t := turn{
		prompt: lastUserText(items, isInjectedContext),
		tools:  toolsOf(req.Tools),
	}
	t.schema, t.structured = req.structuredSchema()
	switch last := lastTurnItem(items); last.Type {
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		t.afterTool = true
		t.toolResult = outputText(last.Output)
	}
	return t
}

// inputItems decodes a Responses input: a plain string is one user message.
func inputItems(input rawJSON) []item {
	var s string
	if json.Unmarshal(input, &s) == nil {
		return []item{{Type: "message", Role: "user", Content: input}}
	}
	var items []item
	_ = json.Unmarshal(input, &items) // an input of another shape has no items
	return items
}

// outputText is the text of a tool call output: a string, a list of text
// parts, or else the JSON itself.
func outputText(output rawJSON) string {
	var s string
	if json.Unmarshal(output, &s) == nil {
		return s
	}
	if t := textOf(output); t != "" {
		return t
	}
	return string(output)
}

// responses answers POST /v1/responses.
func (x *exchange) responses() {
	ans := x.turn.answer()
	var out obj
	if ans.call == nil {
		out = obj{"id": x.s.newID("msg"), "type": "message", "status": "completed", "role": "assistant",
			"content": []obj{outputTextPart(ans.text)}}
	} else {
		out = obj{"id": x.s.newID("fc"), "type": "function_call", "status": "completed",
			"call_id": x.s.newID("call"), "name": ans.call.name, "arguments": ans.call.argsJSON()}
	}
	outTokens := tokensOf(out)
	read, _ := x.turn.cache(x.inTokens)
	usage := obj{
		"input_tokens":          x.inTokens,
		"input_tokens_details":  obj{"cached_tokens": read},
		"output_tokens":         outTokens,
		"output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens":          x.inTokens + outTokens,
	}
	pending := obj{
		"id": x.s.newID("resp"), "object": "response", "created_at": time.Now().Unix(),
		"model": x.modelName(), "status": "in_progress", "output": []obj{},
		"usage": nil, "error": nil, "incomplete_details": nil,
	}
	done := maps.Clone(pending)
	done["status"], done["output"], done["usage"] = "completed", []obj{out}, usage

	if !x.req.Stream {
		if x.hold() {
			x.s.writeJSON(x.w, http.StatusOK, done)
		}
		return
	}

	st := x.s.startSSE(x.w)
	seq := 0
	emit := func(name string, fields obj) {
		fields["type"], fields["sequence_number"] = name, seq
		seq++
		st.event(name, fields)
	}
	emit("response.created", obj{"response": pending})
	emit("response.in_progress", obj{"response": pending})
	if !x.hold() {
		return
	}
	id := out["id"]
	added := maps.Clone(out)
	added["status"] = "in_progress"
	if ans.call == nil {
		added["content"] = []obj{}
		emit("response.output_item.added", obj{"output_index": 0, "item": added})
		emit("response.content_part.added", obj{"item_id": id, "output_index": 0, "content_index": 0,
			"part": outputTextPart("")})
		for _, p := range pieces(ans.text, 3) {
			emit("response.output_text.delta", obj{"item_id": id, "output_index": 0, "content_index": 0,
				"delta": p, "logprobs": []obj{}})
		}
		emit("response.output_text.done", obj{"item_id": id, "output_index": 0, "content_index": 0,
			"text": ans.text, "logprobs": []obj{}})
		emit("response.content_part.done", obj{"item_id": id, "output_index": 0, "content_index": 0,
			"part": outputTextPart(ans.text)})
	} else {
		added["arguments"] = ""
		emit("response.output_item.added", obj{"output_index": 0, "item": added})
		emit("response.function_call_arguments.delta", obj{"item_id": id, "output_index": 0,
			"delta": out["arguments"]})
		emit("response.function_call_arguments.done", obj{"item_id": id, "output_index": 0,
			"arguments": out["arguments"]})
	}
	emit("response.output_item.done", obj{"output_index": 0, "item": out})
	emit("response.completed", obj{"response": done})
}

// outputTextPart is an output_text content part.
func outputTextPart(text string) obj {
	return obj{"type": "output_text", "text": text, "annotations": []obj{}}
}
