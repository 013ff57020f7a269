package modelapi

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// The Gemini API's routes, as [Route] reduces its paths
// (/v1beta/models/<model>:<method>).
const (
	geminiGenerate    = "/models:generateContent"
	geminiStream      = "/models:streamGenerateContent"
	geminiCountTokens = "/models:countTokens"
)

// geminiMethod splits a path without its version prefix, such as
// "/models/gemini-2.5-pro:streamGenerateContent", into its model and
// method; ok is false for a path of another shape.
func geminiMethod(p string) (model, method string, ok bool) {
	rest, found := strings.CutPrefix(p, "/models/")
	if !found {
		return "", "", false
	}
	model, method, found = strings.Cut(rest, ":")
	if !found || model == "" || method == "" || strings.Contains(model, "/") {
		return "", "", false
	}
	return model, method, true
}

// GeminiModel is the model a Gemini API path names
// ("/v1beta/models/gemini-2.5-pro:generateContent" names
// "gemini-2.5-pro"), or "" for a path of another shape.
func GeminiModel(path string) string {
	p := strings.TrimRight(path, "/")
	for _, v := range []string{"/v1beta", "/v1"} {
		if strings.HasPrefix(p, v+"/") {
			p = p[len(v):]
			break
		}
	}
	model, _, _ := geminiMethod(p)
	return model
}

// IsGeminiRoute reports whether route (as [Route] gives it) is one of the
// Gemini API's model methods.
func IsGeminiRoute(route string) bool { return strings.HasPrefix(route, "/models:") }

// geminiContent is a Gemini content: a role (user or model) and parts.
type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

// geminiPart is one part of a Gemini content: text (a thought, when
// Thought is set), a function call or a function's response.
type geminiPart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		ID   string  `json:"id"`
		Name string  `json:"name"`
		Args rawJSON `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string  `json:"id"`
		Name     string  `json:"name"`
		Response rawJSON `json:"response"`
	} `json:"functionResponse"`
}

// geminiConfig is the part of a Gemini generationConfig the server reads.
type geminiConfig struct {
	MaxOutputTokens    int     `json:"maxOutputTokens"`
	ResponseMimeType   string  `json:"responseMimeType"`
	ResponseSchema     rawJSON `json:"responseSchema"`
	ResponseJSONSchema rawJSON `json:"responseJsonSchema"`
}

// text joins the content's text parts that are not thoughts.
func (c *geminiContent) text() string {
	var texts []string
	for _, p := range c.Parts {
		if p.Text != "" && !p.Thought {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// lastText is the content's last non-blank text part that is not a
// thought.
func (c *geminiContent) lastText() string {
	for i := len(c.Parts) - 1; i >= 0; i-- {
		if p := c.Parts[i]; !p.Thought && strings.TrimSpace(p.Text) != "" {
			return p.Text
		}
	}
	return ""
}

// geminiDecls are the function declarations of a Gemini request's tools;
// its built-in tools (googleSearch, codeExecution) are left out.
func geminiDecls(specs []toolSpec) []toolSpec {
	var out []toolSpec
	for _, sp := range specs {
		out = append(out, sp.FunctionDeclarations...)
	}
	return out
}

// geminiTurn reads a Gemini generateContent request. The conversation ends
// with a tool result when its last content holds function responses.
func geminiTurn(req *request) turn {
	t := turn{tools: toolsOf(geminiDecls(req.Tools))}
	for i := len(req.Contents) - 1; i >= 0; i-- {
		if c := &req.Contents[i]; c.Role != "model" && strings.TrimSpace(c.lastText()) != "" {
			t.prompt = c.lastText()
			break
		}
	}
	if n := len(req.Contents); n > 0 {
		for _, p := range req.Contents[n-1].Parts {
			if p.FunctionResponse != nil {
				t.afterTool = true
				t.toolResult += functionOutput(p.FunctionResponse.Response)
			}
		}
	}
	t.schema, t.structured = req.structuredSchema()
	return t
}

// functionOutput is the text of a function response: its "output" (or
// "error") when that is a string, else the response's JSON.
func functionOutput(resp rawJSON) string {
	var r struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if json.Unmarshal(resp, &r) == nil {
		switch {
		case r.Output != nil:
			return *r.Output
		case r.Error != nil:
			return *r.Error
		}
	}
	return string(resp)
}

// addGeminiContent adds a Gemini content to c: a model content's text and
// function calls become an assistant message of text and tool_use blocks,
// a user content's text and function responses a user message of text and
// tool_result blocks. A call without an id is known by its function's
// name, as its response is.
func addGeminiContent(c *wire.Request, gc geminiContent) {
	if gc.Role == "model" {
		var blocks []wire.Block
		for _, p := range gc.Parts {
			switch {
			case p.FunctionCall != nil:
				args := string(p.FunctionCall.Args)
				if args == "" {
					args = "{}"
				}
				blocks = append(blocks, toolUse(cmp.Or(p.FunctionCall.ID, p.FunctionCall.Name), p.FunctionCall.Name, args))
			case p.Text != "" && !p.Thought:
				blocks = append(blocks, wire.Block{Type: wire.TypeText, Text: p.Text})
			}
		}
		addAssistant(c, blocks...)
		return
	}
	var texts []wire.Block
	for _, p := range gc.Parts {
		switch {
		case p.FunctionResponse != nil:
			fr := p.FunctionResponse
			addToolResult(c, wire.ToolResult(cmp.Or(fr.ID, fr.Name), functionOutput(fr.Response), false))
		case p.Text != "" && !p.Thought:
			texts = append(texts, wire.Block{Type: wire.TypeText, Text: p.Text})
		}
	}
	if len(texts) > 0 {
		c.Messages = append(c.Messages, wire.Message{Role: wire.RoleUser, Content: texts})
	}
}

// geminiCountTokens answers POST /v1beta/models/<model>:countTokens with
// the model's count of the contents (or of the generateContentRequest
// they come in).
func (h *Handler) geminiCountTokens(w http.ResponseWriter, r *http.Request, body []byte) {
	var outer struct {
		GenerateContentRequest *request `json:"generateContentRequest"`
	}
	var req request
	err := json.Unmarshal(body, &req)
	if err == nil && json.Unmarshal(body, &outer) == nil && outer.GenerateContentRequest != nil {
		req = *outer.GenerateContentRequest
	}
	if err != nil {
		h.fail(w, geminiCountTokens, apiError{code: http.StatusBadRequest, msg: h.who() + ": bad request body: " + err.Error()})
		return
	}
	req.Model = GeminiModel(r.URL.Path)
	q := newQuery(APIGemini, r, body, &req, geminiTurn(&req))
	h.writeJSON(w, http.StatusOK, obj{"totalTokens": h.model.CountTokens(q)})
}

// geminiFinishes are the Gemini finishReasons of Anthropic stop_reasons;
// any other is STOP (Gemini ends a turn of function calls with STOP too).
var geminiFinishes = map[string]string{"max_tokens": "MAX_TOKENS", "refusal": "SAFETY"}

// geminiFinish is the reply's Gemini finishReason.
func (rp reply) geminiFinish() string { return rp.stopAs(geminiFinishes, "STOP") }

// gemini answers POST /v1beta/models/<model>:generateContent, and
// :streamGenerateContent as an event stream of responses: the text in
// pieces, then a function call per response; the last one carries the
// finishReason and the usage.
func (x *exchange) gemini() {
	rp := x.reply
	var parts []obj
	if rp.hasText() {
		for _, p := range pieces(rp.text, 3) {
			parts = append(parts, obj{"text": p})
		}
	}
	var ids []string
	for _, c := range rp.calls {
		id := x.h.newID("call")
		ids = append(ids, id)
		parts = append(parts, obj{"functionCall": obj{"id": id, "name": c.name, "args": c.args}})
	}
	u := rp.usage
	usage := obj{
		"promptTokenCount":     u.prompt(),
		"candidatesTokenCount": u.output,
		"totalTokenCount":      u.prompt() + u.output,
	}
	if u.cacheRead > 0 {
		usage["cachedContentTokenCount"] = u.cacheRead
	}
	id, model := x.h.newID("resp"), x.modelName()
	response := func(parts []obj, last bool) obj {
		cand := obj{"content": obj{"role": "model", "parts": parts}, "index": 0}
		r := obj{"candidates": []obj{cand}, "modelVersion": model, "responseId": id}
		if last {
			cand["finishReason"] = rp.geminiFinish()
			r["usageMetadata"] = usage
		}
		return r
	}

	if !x.req.Stream {
		whole := []obj{}
		if rp.hasText() {
			whole = append(whole, obj{"text": rp.text})
		}
		whole = append(whole, parts[len(parts)-len(rp.calls):]...)
		x.writeWhole(response(whole, true), ids)
		return
	}

	st := x.h.startSSE(x.w)
	if !x.hold() {
		return
	}
	for i, p := range parts {
		st.event("", response([]obj{p}, i == len(parts)-1))
	}
	x.delivered(ids)
}

// geminiStatuses are the Google API status names of HTTP statuses;
// geminiStatus gives the rest.
var geminiStatuses = map[int]string{
	http.StatusBadRequest:            "INVALID_ARGUMENT",
	http.StatusRequestEntityTooLarge: "INVALID_ARGUMENT",
	http.StatusUnauthorized:          "UNAUTHENTICATED",
	http.StatusPaymentRequired:       "FAILED_PRECONDITION",
	http.StatusForbidden:             "PERMISSION_DENIED",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusMethodNotAllowed:      "NOT_FOUND",
	http.StatusConflict:              "ABORTED",
	http.StatusTooManyRequests:       "RESOURCE_EXHAUSTED",
	499:                              "CANCELLED",
	http.StatusNotImplemented:        "UNIMPLEMENTED",
	http.StatusServiceUnavailable:    "UNAVAILABLE",
	529:                              "UNAVAILABLE",
	http.StatusGatewayTimeout:        "DEADLINE_EXCEEDED",
}

// geminiStatus is the Google API status name of an HTTP status.
func geminiStatus(code int) string {
	return statusName(geminiStatuses, code, "FAILED_PRECONDITION", "INTERNAL")
}

// geminiError is a Gemini API error body:
// {"error":{"code":…,"message":…,"status":…}}; a model's own error type
// is the status when it is spelled as one (UPPER_CASE).
func geminiError(e apiError) obj {
	status := geminiStatus(e.code)
	if e.kind != "" && strings.ToUpper(e.kind) == e.kind {
		status = e.kind
	}
	return obj{"error": obj{"code": e.code, "message": e.msg, "status": status}}
}
