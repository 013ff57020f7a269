package modelapi

import (
	"encoding/json"
	"maps"
	"time"
)

// responsesTurn reads a Responses API request. The prompt is the last user
// message that is not context Codex injects; the conversation ends with a
// tool result when its last item is a tool call output.
func responsesTurn(req *request) turn {
	items := inputItems(req.Input)
	t := req.turnOf(items, isInjectedContext)
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

// responses answers POST /v1/responses: a message item when the reply
// has text (or nothing else), then a function_call item per call.
func (x *exchange) responses() {
	rp := x.reply
	var out []obj
	if rp.hasText() {
		out = append(out, obj{"id": x.h.newID("msg"), "type": "message", "status": "completed", "role": "assistant",
			"content": []obj{outputTextPart(rp.text)}})
	}
	var ids []string
	for _, c := range rp.calls {
		id := x.h.newID("call")
		ids = append(ids, id)
		call := obj{"id": x.h.newID("fc"), "type": "function_call", "status": "completed",
			"call_id": id, "name": c.name, "arguments": c.argsJSON()}
		if c.namespace != "" {
			call["name"], call["namespace"] = c.leaf, c.namespace
		}
		out = append(out, call)
	}
	u := rp.usage
	usage := obj{
		"input_tokens":          u.prompt(),
		"input_tokens_details":  obj{"cached_tokens": u.cacheRead},
		"output_tokens":         u.output,
		"output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens":          u.prompt() + u.output,
	}
	pending := obj{
		"id": x.h.newID("resp"), "object": "response", "created_at": time.Now().Unix(),
		"model": x.modelName(), "status": "in_progress", "output": []obj{},
		"usage": nil, "error": nil, "incomplete_details": nil,
	}
	done := maps.Clone(pending)
	done["status"], done["output"], done["usage"] = "completed", out, usage

	if !x.req.Stream {
		x.writeWhole(done, ids)
		return
	}

	st := x.h.startSSE(x.w)
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
	for i, item := range out {
		streamItem(emit, i, item)
	}
	emit("response.completed", obj{"response": done})
	x.delivered(ids)
}

// streamItem streams output item i: added, its content or arguments,
// done.
func streamItem(emit func(string, obj), i int, item obj) {
	id := item["id"]
	added := maps.Clone(item)
	added["status"] = "in_progress"
	if item["type"] == "message" {
		text := item["content"].([]obj)[0]["text"].(string)
		added["content"] = []obj{}
		emit("response.output_item.added", obj{"output_index": i, "item": added})
		emit("response.content_part.added", obj{"item_id": id, "output_index": i, "content_index": 0,
			"part": outputTextPart("")})
		for _, p := range pieces(text, 3) {
			emit("response.output_text.delta", obj{"item_id": id, "output_index": i, "content_index": 0,
				"delta": p, "logprobs": []obj{}})
		}
		emit("response.output_text.done", obj{"item_id": id, "output_index": i, "content_index": 0,
			"text": text, "logprobs": []obj{}})
		emit("response.content_part.done", obj{"item_id": id, "output_index": i, "content_index": 0,
			"part": outputTextPart(text)})
	} else {
		added["arguments"] = ""
		emit("response.output_item.added", obj{"output_index": i, "item": added})
		emit("response.function_call_arguments.delta", obj{"item_id": id, "output_index": i,
			"delta": item["arguments"]})
		emit("response.function_call_arguments.done", obj{"item_id": id, "output_index": i,
			"arguments": item["arguments"]})
	}
	emit("response.output_item.done", obj{"output_index": i, "item": item})
}

// outputTextPart is an output_text content part.
func outputTextPart(text string) obj {
	return obj{"type": "output_text", "text": text, "annotations": []obj{}}
}
