package fakellm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway/modelapi"
)

const (
	defaultReply    = "hi from fake-llm"
	afterToolPrefix = "fake-llm saw the tool result: "
	toolResultChars = 200 // runes of a tool result quoted back
	shellDesc       = "fake-llm shell directive"
	maxDelay        = 24 * time.Hour
)

// directives is the server's [modelapi.Model]: it answers from the
// directives in the prompt, and keeps the server's [Truth] as the
// handler's [modelapi.Observer].
type directives struct{ *watcher }

// Answer is the reply the directives decide, or the [[status]] error.
func (directives) Answer(_ context.Context, q *modelapi.Query) (*wire.Response, error) {
	t := turnOf(q)
	if code := t.status(); code != 0 {
		msg := fmt.Sprintf("fake-llm status directive %d", code)
		if code == http.StatusUnauthorized {
			// As some proxies do: the refused credential, echoed.
			msg += ": invalid x-api-key " + q.Header.Get("x-api-key") + " / authorization " + q.Header.Get("Authorization") +
				" / x-goog-api-key " + q.Header.Get("x-goog-api-key")
		}
		return nil, &wire.APIError{Status: code, Message: msg, RetryAfterSeconds: t.retryAfter()}
	}
	q.Hold(t.delay())
	a := t.answer()
	in := tokens(q.Body)
	read, write := t.cache(in)
	return &wire.Response{Content: a.content(), Usage: wire.Usage{
		InputTokens:              int64(in - read - write),
		OutputTokens:             int64(a.outTokens()),
		CacheReadInputTokens:     int64(read),
		CacheCreationInputTokens: int64(write),
	}}, nil
}

// CountTokens is about a token per four bytes of the body.
func (directives) CountTokens(q *modelapi.Query) int64 { return int64(tokens(q.Body)) }

// tokens is a plausible token count for a JSON document: about one token
// per four bytes, at least one.
func tokens(b []byte) int {
	return max(1, len(b)/4)
}

// turn is what the directives need to know about one model request,
// whatever its API.
type turn struct {
	q           *modelapi.Query // makes the tool calls
	prompt      string          // the last user text; directives come only from here
	afterTool   bool            // the conversation ends with a tool result
	toolResult  string          // the text of that result
	offersTools bool
	structured  bool            // the request asks for JSON-schema output
	schema      json.RawMessage // that schema
}

// turnOf reads q.
func turnOf(q *modelapi.Query) turn {
	result, afterTool := q.ToolResult()
	schema, structured := q.Schema()
	return turn{q: q, prompt: q.Prompt(), afterTool: afterTool, toolResult: result,
		offersTools: len(q.Tools()) > 0, structured: structured, schema: schema}
}

// answer is the server's reply to a turn: a text or one tool call.
type answer struct {
	text string
	call *toolCall
}

// toolCall is a call of an offered tool.
type toolCall struct {
	name string
	args map[string]any
}

// content is the answer's text or tool_use block.
func (a answer) content() []wire.Block {
	if a.call == nil {
		return []wire.Block{{Type: wire.TypeText, Text: a.text}}
	}
	return []wire.Block{{Type: wire.TypeToolUse, Name: a.call.name, Input: json.RawMessage(a.call.argsJSON())}}
}

// outTokens is about a token per four bytes of the answer's text or call,
// at least one.
func (a answer) outTokens() int {
	n := len(a.text)
	if a.call != nil {
		n += len(a.call.name) + len(a.call.argsJSON())
	}
	return max(1, n/4)
}

// argsJSON is the call's arguments as a JSON object.
func (c *toolCall) argsJSON() string {
	b, err := json.Marshal(c.args)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// status is the HTTP status asked for by [[status=N]], or 0.
func (t *turn) status() int {
	n, err := strconv.Atoi(parseDirectives(t.prompt)["status"])
	if err != nil || n < 400 || n > 599 {
		return 0
	}
	return n
}

// retryAfter is the Retry-After, in seconds, asked for by [[retry=N]]
// alongside [[status]], or 0.
func (t *turn) retryAfter() float64 {
	secs, err := strconv.ParseFloat(parseDirectives(t.prompt)["retry"], 64)
	if err != nil || !(secs > 0) {
		return 0
	}
	return math.Min(secs, maxDelay.Seconds())
}

// cache is the prompt-cache use asked for by [[cache=READ/WRITE]] out of
// in input tokens: READ tokens read from the cache and WRITE written to it
// (WRITE and its slash are optional), each clamped so that together they
// stay within in. Without the directive both are 0.
func (t *turn) cache(in int) (read, write int) {
	spec, ok := parseDirectives(t.prompt)["cache"]
	if !ok {
		return 0, 0
	}
	r, w, _ := strings.Cut(spec, "/")
	read, _ = strconv.Atoi(strings.TrimSpace(r))
	write, _ = strconv.Atoi(strings.TrimSpace(w))
	read = min(max(read, 0), in)
	write = min(max(write, 0), in-read)
	return read, write
}

// delay is how long [[delay=N]] holds the turn. Only requests that offer
// tools and are neither a tool follow-up nor structured-output requests are
// held.
func (t *turn) delay() time.Duration {
	if !t.offersTools || t.afterTool || t.structured {
		return 0
	}
	secs, err := strconv.ParseFloat(parseDirectives(t.prompt)["delay"], 64)
	if err != nil || !(secs > 0) {
		return 0
	}
	return time.Duration(math.Min(secs, maxDelay.Seconds()) * float64(time.Second))
}

// answer decides the reply to the turn.
func (t *turn) answer() answer {
	if t.structured {
		return answer{text: fillJSON(t.schema)}
	}
	if t.afterTool {
		return answer{text: afterToolPrefix + strings.TrimSpace(truncateRunes(t.toolResult, toolResultChars))}
	}
	d := parseDirectives(t.prompt)
	if spec, ok := d["tool"]; ok {
		if c := t.toolDirective(spec); c != nil {
			return answer{call: c}
		}
	}
	if cmd, ok := d["shell"]; ok {
		if name, args, ok := t.q.ShellCall(cmd, shellDesc); ok {
			return answer{call: &toolCall{name: name, args: args}}
		}
	}
	if reply, ok := d["reply"]; ok {
		return answer{text: replyEscapes.Replace(reply)}
	}
	return answer{text: defaultReply}
}

// toolDirective is the call asked for by [[tool=NAME JSON]], or nil if the
// request does not offer tool NAME. Arguments that are not a JSON object
// are passed as {"input": TEXT}.
func (t *turn) toolDirective(spec string) *toolCall {
	name, rest, _ := strings.Cut(strings.TrimSpace(spec), " ")
	args := map[string]any{}
	if rest = strings.TrimSpace(rest); rest != "" {
		if err := json.Unmarshal([]byte(rest), &args); err != nil || args == nil {
			args = map[string]any{"input": rest}
		}
	}
	input, ok := t.q.ToolCall(name, args)
	if !ok {
		return nil
	}
	return &toolCall{name: name, args: input}
}

// directiveRE matches one [[key=value]] directive; "]]" ends the value.
var directiveRE = regexp.MustCompile(`(?s)\[\[(delay|reply|shell|tool|status|retry|cache)=(.*?)\]\]`)

// replyEscapes undoes the escapes a one-line [[reply]] may use: \n for a
// line break, \\ for a backslash.
var replyEscapes = strings.NewReplacer(`\\`, `\`, `\n`, "\n")

// parseDirectives returns the directives in text by key, values trimmed;
// when a key repeats the last one wins.
func parseDirectives(text string) map[string]string {
	d := map[string]string{}
	for _, m := range directiveRE.FindAllStringSubmatch(text, -1) {
		d[m[1]] = strings.TrimSpace(m[2])
	}
	return d
}

// truncateRunes is the first n runes of s.
func truncateRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
