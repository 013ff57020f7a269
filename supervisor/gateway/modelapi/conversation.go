package modelapi

import (
	"cmp"
	"encoding/json"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// conversation is a model request in the Messages API's shape, the shape
// of cicy's own requests: the system text, the tools, and messages of
// text, tool_use and tool_result blocks (cache_control kept). The OpenAI
// APIs are mapped onto it: system and developer messages and the
// Responses instructions and Gemini's systemInstruction become system blocks, an assistant's tool calls
// tool_use blocks whose id is the call's id, and tool outputs the
// tool_result blocks of a user message. Parts of other kinds (images,
// reasoning) are left out.
func conversation(api string, req *request) *wire.Request {
	c := &wire.Request{Model: req.Model, MaxTokens: req.MaxTokens, Stream: req.Stream, Tools: wireTools(req.Tools)}
	switch api {
	case APIAnthropic:
		c.System = textBlocks(req.System)
		for _, it := range req.Messages {
			c.Messages = append(c.Messages, wire.Message{Role: it.Role, Content: anthropicBlocks(it.Content)})
		}
	case APIChat:
		for _, it := range req.Messages {
			addChatItem(c, it)
		}
	case APIResponses:
		c.System = textBlocks(req.Instructions)
		for _, it := range inputItems(req.Input) {
			addResponsesItem(c, it)
		}
	case APIGemini:
		c.Tools = wireTools(geminiDecls(req.Tools))
		if si := req.SystemInstruction; si != nil && si.text() != "" {
			c.System = []wire.Block{{Type: wire.TypeText, Text: si.text()}}
		}
		for _, gc := range req.Contents {
			addGeminiContent(c, gc)
		}
	}
	return c
}

// wireTools are the offered tools as the Messages API defines them.
func wireTools(specs []toolSpec) []wire.Tool {
	var out []wire.Tool
	for _, sp := range specs {
		schema := sp.schema()
		out = append(out, wire.Tool{
			Name:         cmp.Or(sp.Name, sp.Function.Name, sp.Type),
			Description:  cmp.Or(sp.Description, sp.Function.Description),
			InputSchema:  json.RawMessage(schema),
			CacheControl: sp.CacheControl,
		})
	}
	return out
}

// textBlocks are the text parts of content as text blocks.
func textBlocks(content rawJSON) []wire.Block {
	var out []wire.Block
	for _, p := range parts(content) {
		if p.isText() {
			out = append(out, wire.Block{Type: wire.TypeText, Text: p.Text, CacheControl: p.CacheControl})
		}
	}
	return out
}

// anthropicBlocks are the text, tool_use and tool_result blocks of an
// Anthropic message's content.
func anthropicBlocks(content rawJSON) []wire.Block {
	var out []wire.Block
	for _, p := range parts(content) {
		switch p.Type {
		case wire.TypeText:
			out = append(out, wire.Block{Type: wire.TypeText, Text: p.Text, CacheControl: p.CacheControl})
		case wire.TypeToolUse:
			input := json.RawMessage(p.Input)
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			out = append(out, wire.Block{Type: wire.TypeToolUse, ID: p.ID, Name: p.Name, Input: input, CacheControl: p.CacheControl})
		case wire.TypeToolResult:
			b := wire.ToolResult(p.ToolUseID, textOf(p.Content), p.IsError)
			b.CacheControl = p.CacheControl
			out = append(out, b)
		}
	}
	return out
}

// addTextItem adds a system or developer message's text to c's system
// blocks, and a user message as one of c's messages; it reports whether
// it was one of those.
func addTextItem(c *wire.Request, it item) bool {
	switch it.Role {
	case "system", "developer":
		c.System = append(c.System, textBlocks(it.Content)...)
	case wire.RoleUser:
		c.Messages = append(c.Messages, wire.Message{Role: wire.RoleUser, Content: textBlocks(it.Content)})
	default:
		return false
	}
	return true
}

// addChatItem adds a Chat Completions message to c.
func addChatItem(c *wire.Request, it item) {
	if addTextItem(c, it) {
		return
	}
	switch it.Role {
	case wire.RoleAssistant:
		blocks := textBlocks(it.Content)
		for _, tc := range it.ToolCalls {
			blocks = append(blocks, toolUse(tc.ID, tc.Function.Name, tc.Function.Arguments))
		}
		c.Messages = append(c.Messages, wire.Message{Role: wire.RoleAssistant, Content: blocks})
	case "tool":
		addToolResult(c, wire.ToolResult(it.ToolCallID, textOf(it.Content), false))
	}
}

// addResponsesItem adds a Responses input item to c.
func addResponsesItem(c *wire.Request, it item) {
	switch it.Type {
	case "", "message":
		if !addTextItem(c, it) && it.Role == wire.RoleAssistant {
			addAssistant(c, textBlocks(it.Content)...)
		}
	case "function_call":
		addAssistant(c, toolUse(it.CallID, it.Name, it.Arguments))
	case "custom_tool_call":
		var in any
		_ = json.Unmarshal(it.CallInput, &in) // absent or odd: null
		args, _ := json.Marshal(map[string]any{"input": in})
		addAssistant(c, toolUse(it.CallID, it.Name, string(args)))
	case "function_call_output", "custom_tool_call_output":
		addToolResult(c, wire.ToolResult(it.CallID, outputText(it.Output), false))
	}
}

// toolUse is a tool_use block of a call whose arguments are args, a JSON
// object as text; anything else is passed as {"input": args}.
func toolUse(id, name, args string) wire.Block {
	input := json.RawMessage(args)
	var obj map[string]any
	if json.Unmarshal(input, &obj) != nil || obj == nil {
		input, _ = json.Marshal(map[string]string{"input": args}) // strings always marshal
	}
	return wire.Block{Type: wire.TypeToolUse, ID: id, Name: name, Input: input}
}

// addAssistant adds blocks to the assistant message c ends with, or to a
// new one.
func addAssistant(c *wire.Request, blocks ...wire.Block) {
	if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == wire.RoleAssistant {
		c.Messages[n-1].Content = append(c.Messages[n-1].Content, blocks...)
		return
	}
	c.Messages = append(c.Messages, wire.Message{Role: wire.RoleAssistant, Content: blocks})
}

// addToolResult adds b to the user message of tool results c ends with, or
// to a new user message.
func addToolResult(c *wire.Request, b wire.Block) {
	if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == wire.RoleUser {
		if m := &c.Messages[n-1]; len(m.Content) > 0 && m.Content[len(m.Content)-1].Type == wire.TypeToolResult {
			m.Content = append(m.Content, b)
			return
		}
	}
	c.Messages = append(c.Messages, wire.Message{Role: wire.RoleUser, Content: []wire.Block{b}})
}
