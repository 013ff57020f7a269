package modelapi

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// request holds the fields of a model request the server looks at, for all
// four APIs at once; every other key is ignored.
type request struct {
	Model        string     `json:"model"`
	Stream       bool       `json:"stream"`
	MaxTokens    int        `json:"max_tokens"`
	System       rawJSON    `json:"system"`       // Anthropic: a string or text blocks
	Instructions rawJSON    `json:"instructions"` // Responses
	Messages     []item     `json:"messages"`     // Anthropic, Chat Completions
	Input        rawJSON    `json:"input"`        // Responses: a string or a list of items
	Tools        []toolSpec `json:"tools"`

	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"` // Chat Completions

	OutputConfig struct {
		Format jsonFormat `json:"format"`
	} `json:"output_config"` // Anthropic
	ResponseFormat struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema rawJSON `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"` // Chat Completions
	Text struct {
		Format jsonFormat `json:"format"`
	} `json:"text"` // Responses

	// Gemini: the conversation, the system instruction, the output
	// settings (its model is in the path, its streaming in the method).
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	GenerationConfig  geminiConfig    `json:"generationConfig"`
}

// rawJSON is a JSON value kept undecoded; unlike json.RawMessage it stays
// empty for a JSON null.
type rawJSON []byte

// UnmarshalJSON keeps data, dropping null.
func (r *rawJSON) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*r = nil
		return nil
	}
	*r = append((*r)[:0], data...)
	return nil
}

// jsonFormat is a structured-output format as Anthropic and the Responses
// API spell it.
type jsonFormat struct {
	Type   string  `json:"type"`
	Schema rawJSON `json:"schema"`
}

// item is a message (Anthropic, Chat Completions) or an input item
// (Responses).
type item struct {
	Type    string  `json:"type"` // Responses: "message", "function_call_output", …
	Role    string  `json:"role"`
	Content rawJSON `json:"content"` // a string or a list of parts
	Output  rawJSON `json:"output"`  // Responses tool outputs

	ToolCalls  []chatCallItem `json:"tool_calls"`   // Chat Completions assistant
	ToolCallID string         `json:"tool_call_id"` // Chat Completions tool
	CallID     string         `json:"call_id"`      // Responses tool calls and outputs
	Name       string         `json:"name"`         // Responses tool calls
	Arguments  string         `json:"arguments"`    // Responses function_call
	CallInput  rawJSON        `json:"input"`        // Responses custom_tool_call
}

// chatCallItem is a tool call of a Chat Completions assistant message.
type chatCallItem struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// part is one element of a content list.
type part struct {
	Type    string  `json:"type"`
	Text    string  `json:"text"`
	Content rawJSON `json:"content"` // Anthropic tool_result content

	// Anthropic tool_use and tool_result
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Input     rawJSON `json:"input"`
	ToolUseID string  `json:"tool_use_id"`
	IsError   bool    `json:"is_error"`

	CacheControl *wire.CacheControl `json:"cache_control"`
}

// isText reports whether p carries prompt or reply text.
func (p part) isText() bool {
	switch p.Type {
	case "text", "input_text", "output_text":
		return true
	}
	return false
}

// parts decodes content, which may be a string or a list whose elements are
// strings or part objects. Elements of any other shape are skipped.
func parts(content rawJSON) []part {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []part{{Type: "text", Text: s}}
	}
	var elems []json.RawMessage
	if json.Unmarshal(content, &elems) != nil {
		return nil
	}
	out := make([]part, 0, len(elems))
	for _, e := range elems {
		var p part
		if json.Unmarshal(e, &s) == nil {
			p = part{Type: "text", Text: s}
		} else if json.Unmarshal(e, &p) != nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// textOf joins the text parts of content with newlines.
func textOf(content rawJSON) string {
	var texts []string
	for _, p := range parts(content) {
		if p.isText() {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// lastTextOf is the last non-blank text part of content: the newest prompt,
// even when a client has merged several user turns into one message.
func lastTextOf(content rawJSON) string {
	ps := parts(content)
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].isText() && strings.TrimSpace(ps[i].Text) != "" {
			return ps[i].Text
		}
	}
	return ""
}

// turnOf starts the turn of a request whose conversation is items: its
// prompt (the last user text, skipping texts for which skip reports
// true), its tools and its structured-output schema.
func (r *request) turnOf(items []item, skip func(string) bool) turn {
	t := turn{prompt: lastUserText(items, skip), tools: toolsOf(r.Tools)}
	t.schema, t.structured = r.structuredSchema()
	return t
}

// lastUserText is the last non-blank user text in items, skipping texts for
// which skip reports true. Tool results are not user text.
func lastUserText(items []item, skip func(string) bool) string {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Role != "user" {
			continue
		}
		t := lastTextOf(items[i].Content)
		if strings.TrimSpace(t) == "" || (skip != nil && skip(t)) {
			continue
		}
		return t
	}
	return ""
}

// lastTurnItem is the last item that is not a system or developer message
// (Claude Code appends a role "system" message after the user turn), or
// the zero item.
func lastTurnItem(items []item) item {
	for i := len(items) - 1; i >= 0; i-- {
		if r := items[i].Role; r != "system" && r != "developer" {
			return items[i]
		}
	}
	return item{}
}

// toolSpec is a tool definition in any of the three APIs' shapes.
type toolSpec struct {
	Type        string  `json:"type"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	InputSchema rawJSON `json:"input_schema"` // Anthropic
	Parameters  rawJSON `json:"parameters"`   // Responses
	// CacheControl marks an Anthropic tool as a cache breakpoint.
	CacheControl *wire.CacheControl `json:"cache_control"`
	Function     struct {
		Name        string  `json:"name"`
		Description string  `json:"description"`
		Parameters  rawJSON `json:"parameters"`
	} `json:"function"` // Chat Completions
	// Tools are the members of a Responses "namespace" tool (Codex offers
	// each MCP server's tools as one).
	Tools []toolSpec `json:"tools"`
	// FunctionDeclarations are the functions of a Gemini tool, whose
	// schema is parametersJsonSchema or parameters.
	FunctionDeclarations []toolSpec `json:"functionDeclarations"`
	ParametersJSONSchema rawJSON    `json:"parametersJsonSchema"`
}

// schema is the tool's input schema, in whichever API's field it is.
func (sp *toolSpec) schema() rawJSON {
	for _, s := range []rawJSON{sp.InputSchema, sp.Parameters, sp.Function.Parameters, sp.ParametersJSONSchema} {
		if len(s) > 0 {
			return s
		}
	}
	return nil
}

// tool is an offered tool, reduced to what the server needs.
type tool struct {
	name string
	// namespace and leaf name a member of a Responses namespace tool,
	// offered as name "<namespace>__<leaf>" (Codex's spelling of an MCP
	// tool) and called by its namespace and leaf.
	namespace, leaf string
	props           map[string]bool // argument names the schema declares
	required        map[string]bool
}

// toolsOf normalises the tools of a request; the members of a namespace
// tool are tools of their own.
func toolsOf(specs []toolSpec) []tool {
	out := make([]tool, 0, len(specs))
	for _, sp := range specs {
		if sp.Type == "namespace" {
			for _, m := range toolsOf(sp.Tools) {
				m.namespace, m.leaf = sp.Name, m.name
				m.name = sp.Name + "__" + m.name
				out = append(out, m)
			}
			continue
		}
		t := tool{name: cmp.Or(sp.Name, sp.Function.Name, sp.Type)}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if json.Unmarshal(sp.schema(), &schema) == nil {
			t.props = make(map[string]bool, len(schema.Properties))
			for k := range schema.Properties {
				t.props[k] = true
			}
			t.required = make(map[string]bool, len(schema.Required))
			for _, k := range schema.Required {
				t.required[k] = true
			}
		}
		out = append(out, t)
	}
	return out
}

// structuredSchema is the JSON schema the request wants the answer to
// follow, and whether it asks for one at all.
func (r *request) structuredSchema() (rawJSON, bool) {
	switch {
	case r.Text.Format.Type == "json_schema":
		return r.Text.Format.Schema, true
	case r.ResponseFormat.Type == "json_schema":
		return r.ResponseFormat.JSONSchema.Schema, true
	case r.OutputConfig.Format.Type == "json_schema":
		return r.OutputConfig.Format.Schema, true
	case r.GenerationConfig.ResponseMimeType == "application/json":
		g := r.GenerationConfig
		if len(g.ResponseJSONSchema) > 0 {
			return g.ResponseJSONSchema, true
		}
		return g.ResponseSchema, true
	}
	return nil, false
}
