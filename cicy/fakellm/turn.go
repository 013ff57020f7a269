package fakellm

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

const (
	defaultReply    = "hi from fake-llm"
	afterToolPrefix = "fake-llm saw the tool result: "
	toolResultChars = 200 // runes of a tool result quoted back
	shellDesc       = "fake-llm shell directive"
	maxDelay        = 24 * time.Hour
)

// turn is what the server needs to know about one model request, whatever
// its API.
type turn struct {
	prompt     string // the last user text; directives come only from here
	afterTool  bool   // the conversation ends with a tool result
	toolResult string // the text of that result
	tools      []tool
	structured bool    // the request asks for JSON-schema output
	schema     rawJSON // that schema
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
	// namespace and leaf: see tool.
	namespace, leaf string
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
	if len(t.tools) == 0 || t.afterTool || t.structured {
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
		if c := t.shellCall(cmd, shellDesc); c != nil {
			return answer{call: c}
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
	tl := t.tool(name)
	if tl == nil {
		return nil
	}
	args := map[string]any{}
	if rest = strings.TrimSpace(rest); rest != "" {
		if err := json.Unmarshal([]byte(rest), &args); err != nil || args == nil {
			args = map[string]any{"input": rest}
		}
	}
	return tl.call(args)
}

// shellCall is a call of the request's shell tool that runs cmd, in that
// tool's own shape (with desc as the description a tool requires), or nil
// if the request offers no shell tool.
func (t *turn) shellCall(cmd, desc string) *toolCall {
	for _, name := range []string{"Bash", "bash", "exec_command", "shell_command", "shell"} {
		tl := t.tool(name)
		if tl == nil {
			continue
		}
		args := map[string]any{"command": cmd}
		switch name {
		case "exec_command":
			args = map[string]any{"cmd": cmd}
		case "shell":
			args = map[string]any{"command": []string{"bash", "-lc", cmd}}
		case "Bash", "bash":
			if tl.required["description"] {
				args["description"] = desc
			}
		}
		return tl.call(args)
	}
	return nil
}

// tool is the offered tool called name, or nil.
func (t *turn) tool(name string) *tool {
	for i := range t.tools {
		if t.tools[i].name == name {
			return &t.tools[i]
		}
	}
	return nil
}

// call is a call of tl with args, keeping only the arguments its schema
// declares (all of them if it declares none).
func (tl *tool) call(args map[string]any) *toolCall {
	if len(tl.props) > 0 {
		for k := range args {
			if !tl.props[k] {
				delete(args, k)
			}
		}
	}
	return &toolCall{name: tl.name, args: args, namespace: tl.namespace, leaf: tl.leaf}
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

// pieces splits s into about n stream deltas, on rune boundaries.
func pieces(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return []string{""}
	}
	step := (len(r) + n - 1) / n
	var out []string
	for i := 0; i < len(r); i += step {
		out = append(out, string(r[i:min(i+step, len(r))]))
	}
	return out
}

// isInjectedContext reports whether a Responses user text is context Codex
// injects (<environment_context>, <user_instructions>, …) rather than a
// prompt.
func isInjectedContext(text string) bool {
	return strings.HasPrefix(strings.TrimLeftFunc(text, unicode.IsSpace), "<")
}
