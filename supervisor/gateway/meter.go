package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
)

// meter reads usage from an answer as it passes: stream events one by
// one, or a plain body at its end.
type meter struct {
	api    API
	drop   bool // drop the usage-only Chat Completions chunk the gateway asked for
	broken bool // an event was too long to buffer: pass the rest on unread

	model string
	tok   tokens
	plain []byte // the plain body so far, up to maxPlain

	// The answer as it streams: its text, its tool calls (Chat Completions
	// by index), an error event, and whether its end was seen.
	text      answerText
	tools     int
	chatTools map[int]bool
	errMsg    string
	complete  bool
}

// answer fills what the meter read of the answer into a.
func (m *meter) answer(a *Answer, stream bool) {
	a.Text, a.Cut, a.ToolCalls = m.text.b.String(), m.text.cut, m.tools+len(m.chatTools)
	switch {
	case m.errMsg != "":
		a.Error = "the upstream's stream ended in an error: " + m.errMsg
	case stream && !m.complete && !m.broken:
		a.Error = "the upstream's stream ended before its answer was complete"
	}
}

// tokens are usage in Anthropic's additive shape.
type tokens struct {
	input, output, cacheRead, cacheWrite int64
}

// fill copies what the meter read into c.
func (m *meter) fill(c *Call) {
	if m.model != "" {
		c.Model = m.model
	}
	c.InputTokens, c.OutputTokens = m.tok.input, m.tok.output
	c.CacheReadTokens, c.CacheCreationTokens = m.tok.cacheRead, m.tok.cacheWrite
}

// frames is the pipe filter for event streams: it sends each whole event
// in pending, but a dropped one, and keeps the unfinished tail.
func (m *meter) frames(pending []byte, send func([]byte) bool) (kept int) {
	if m.broken {
		send(pending)
		return 0
	}
	done, span := 0, 0
	for {
		n := eventEnd(pending[done:])
		if n < 0 {
			break
		}
		if m.event(pending[done : done+n]) {
			if !send(pending[span:done]) {
				return 0
			}
			span = done + n
		}
		done += n
	}
	send(pending[span:done])
	if len(pending)-done > maxEvent {
		m.broken = true
		send(pending[done:])
		return 0
	}
	return len(pending) - done
}

// whole is the filter of a plain (not streamed) answer: it is kept whole
// until its end, where the pipe sends it through scrub (its client reads
// it whole anyway, and an echoed key is found wherever the reads cut
// it), and read for its usage. One over maxPlain is sent as it comes,
// each read scrubbed, and not metered.
func (m *meter) whole(scrub *provider.Scrubber) func(pending []byte, send func([]byte) bool) (kept int) {
	over := false
	return func(pending []byte, send func([]byte) bool) int {
		if !over && len(pending) <= maxPlain {
			m.plain = pending // the pipe keeps it as is until the end
			return len(pending)
		}
		over, m.plain = true, nil
		send(scrub.Bytes(pending))
		return 0
	}
}

// event reads one raw stream event and reports whether to drop it.
func (m *meter) event(raw []byte) (drop bool) {
	name, data := eventFields(raw)
	if len(data) == 0 {
		return false
	}
	switch m.api {
	case Anthropic:
		m.anthropicEvent(name, data)
	case Chat:
		return m.chatChunk(data)
	case Responses:
		m.responsesEvent(name, data)
	case Gemini:
		m.geminiResponse(data)
	}
	return false
}

// geminiResponse reads a Gemini response, one chunk of a stream or a
// whole answer: its text (thoughts aside), its function calls, its end
// (a finishReason), its model and usage (each chunk's usageMetadata
// replaces the earlier one), an error.
func (m *meter) geminiResponse(data []byte) {
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         string          `json:"text"`
					Thought      bool            `json:"thought"`
					FunctionCall json.RawMessage `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata *geminiUsage    `json:"usageMetadata"`
		ModelVersion  string          `json:"modelVersion"`
		Error         json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &r) != nil {
		return
	}
	if len(r.Error) > 0 && !bytes.Equal(r.Error, []byte("null")) {
		m.errMsg = errorText(r.Error)
	}
	if r.ModelVersion != "" {
		m.model = r.ModelVersion
	}
	if r.UsageMetadata != nil {
		m.tok = r.UsageMetadata.tokens()
	}
	if len(r.Candidates) == 0 {
		return
	}
	c := r.Candidates[0] // the agents ask for one candidate
	for _, p := range c.Content.Parts {
		switch {
		case len(p.FunctionCall) > 0:
			m.tools++
		case !p.Thought:
			m.text.add(p.Text)
		}
	}
	m.complete = m.complete || c.FinishReason != ""
}

// geminiUsage is Gemini's usageMetadata: the prompt count includes the
// cached part; thoughts are billed as output.
type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

// tokens is the usage in the additive shape.
func (u *geminiUsage) tokens() tokens {
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	return tokens{
		input:     max(prompt-u.CachedContentTokenCount, 0),
		output:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
		cacheRead: u.CachedContentTokenCount,
	}
}

// responsesEvent reads a Responses stream event: text deltas, the final
// response (model, usage, its output as the answer), an error.
func (m *meter) responsesEvent(name, data []byte) {
	switch string(name) {
	case "response.output_text.delta":
		var ev struct {
			Delta string `json:"delta"`
		}
		if json.Unmarshal(data, &ev) == nil {
			m.text.add(ev.Delta)
		}
	case "response.completed", "response.incomplete", "response.failed":
		var ev struct {
			Response struct {
				plainAnswer
				content
			} `json:"response"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		m.took(ev.Response.plainAnswer)
		m.complete = true
		var t answerText
		if tools := ev.Response.read(Responses, &t); tools > 0 || t.b.Len() > 0 || t.cut > 0 {
			m.text, m.tools = t, tools
		}
		if string(name) == "response.failed" {
			m.errMsg = "response failed"
			if ev.Response.Error != nil && !isBlank(*ev.Response.Error) {
				m.errMsg = errorText(*ev.Response.Error)
			}
		}
	case "error":
		m.errMsg = errorText(data)
	}
}

// anthropicEvent reads message_start (model and first usage) and
// message_delta (usage so far; the fields it carries replace the earlier
// ones).
func (m *meter) anthropicEvent(name, data []byte) {
	switch string(name) {
	case "message_start":
		var ev struct {
			Message plainAnswer `json:"message"`
		}
		if json.Unmarshal(data, &ev) == nil {
			m.took(ev.Message)
		}
	case "content_block_start":
		var ev struct {
			Block block `json:"content_block"`
		}
		if json.Unmarshal(data, &ev) == nil {
			switch ev.Block.Type {
			case "text":
				m.text.add(ev.Block.Text)
			case "tool_use":
				m.tools++
			}
		}
	case "content_block_delta":
		var ev struct {
			Delta block `json:"delta"`
		}
		if json.Unmarshal(data, &ev) == nil && ev.Delta.Type == "text_delta" {
			m.text.add(ev.Delta.Text)
		}
	case "message_delta":
		var ev struct {
			Usage *anthropicUsage `json:"usage"`
			Delta struct {
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
		}
		if json.Unmarshal(data, &ev) == nil {
			if ev.Usage != nil {
				ev.Usage.apply(&m.tok)
			}
			m.complete = m.complete || ev.Delta.StopReason != ""
		}
	case "message_stop":
		m.complete = true
	case "error":
		var ev struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &ev) == nil && len(ev.Error) > 0 {
			m.errMsg = errorText(ev.Error)
		} else {
			m.errMsg = errorText(data)
		}
	}
}

// chatChunk reads a Chat Completions chunk — its text, tool calls and end,
// its usage — and reports whether it is the usage-only chunk to drop.
func (m *meter) chatChunk(data []byte) (drop bool) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		m.complete = true
		return false
	}
	var ch struct {
		Model   string `json:"model"`
		Choices []struct {
			Delta struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Index int `json:"index"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *provider.OpenAIUsage `json:"usage"`
		Error json.RawMessage       `json:"error"`
	}
	if json.Unmarshal(data, &ch) != nil {
		return false
	}
	if len(ch.Error) > 0 && !bytes.Equal(ch.Error, []byte("null")) {
		m.errMsg = errorText(ch.Error)
	}
	for i, c := range ch.Choices {
		if i > 0 {
			break // the agents ask for one choice
		}
		if c.Delta.Content != nil {
			m.text.add(*c.Delta.Content)
		}
		for _, tc := range c.Delta.ToolCalls {
			if m.chatTools == nil {
				m.chatTools = map[int]bool{}
			}
			m.chatTools[tc.Index] = true
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			m.complete = true
		}
	}
	if ch.Usage == nil {
		return false
	}
	if ch.Model != "" {
		m.model = ch.Model
	}
	m.tok = openAITokens(ch.Usage)
	return m.drop && len(ch.Choices) == 0
}

// body reads the usage and the answer of a plain answer.
func (m *meter) body() {
	if m.api == Gemini {
		m.text.reset()
		m.geminiResponse(m.plain)
		m.complete = true
		return
	}
	var a struct {
		plainAnswer
		content
	}
	if json.Unmarshal(m.plain, &a) == nil {
		m.took(a.plainAnswer)
		m.text.reset()
		m.tools = a.read(m.api, &m.text)
		m.complete = true
	}
}

// plainAnswer is the part of an answer object (a Messages message, a
// chat completion, a response) the meter reads.
type plainAnswer struct {
	Model string          `json:"model"`
	Usage json.RawMessage `json:"usage"`
}

// took takes the model and usage of an answer object.
func (m *meter) took(a plainAnswer) {
	if a.Model != "" {
		m.model = a.Model
	}
	if len(a.Usage) == 0 || bytes.Equal(a.Usage, []byte("null")) {
		return
	}
	if m.api == Anthropic {
		var u anthropicUsage
		if json.Unmarshal(a.Usage, &u) == nil {
			u.apply(&m.tok)
		}
		return
	}
	var u provider.OpenAIUsage
	if json.Unmarshal(a.Usage, &u) == nil {
		m.tok = openAITokens(&u)
	}
}

// anthropicUsage is Anthropic's usage object; a field left out is nil.
type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// apply sets the fields u carries.
func (u *anthropicUsage) apply(t *tokens) {
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&t.input, u.InputTokens)
	set(&t.output, u.OutputTokens)
	set(&t.cacheWrite, u.CacheCreationInputTokens)
	set(&t.cacheRead, u.CacheReadInputTokens)
}

// openAITokens is OpenAI usage (Chat Completions or Responses) in the
// additive shape, mapped as cicy's OpenAI provider maps it.
func openAITokens(u *provider.OpenAIUsage) tokens {
	w := u.Wire()
	return tokens{input: w.InputTokens, output: w.OutputTokens, cacheRead: w.CacheReadInputTokens}
}
