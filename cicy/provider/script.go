package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// ScriptRules is the parsed rules file of the scripted model (see docs/scripted-model.md).
// The first rule that matches a request answers it. A ScriptRules value
// counts matches and tool-call ids, so it is used through a pointer; it is
// safe for concurrent use.
type ScriptRules struct {
	Rules []ScriptRule `yaml:"rules"`

	mu       sync.Mutex
	compiled bool
	calls    int // tool calls answered so far, for toolu_script_<n> ids
}

// ScriptRule is one rule: what it matches and what it answers (a reply,
// or an error when Error is set).
type ScriptRule struct {
	Match ScriptMatch  `yaml:"match"`
	Reply ScriptReply  `yaml:"reply"`
	Error *ScriptError `yaml:"error"`
	// Times, when > 0, is how many requests the rule answers; after that
	// it no longer matches (e.g. "fail twice with 529, then answer").
	Times int `yaml:"times"`

	matched int
}

// ScriptMatch selects requests; every set field must match.
type ScriptMatch struct {
	// LastUser is a regex on the text of the last user message (its text
	// blocks joined by blank lines; tool_result blocks and injected
	// context excluded: cicy's <role> and <memories> blocks, and any block
	// that is one tagged element, such as Claude Code's
	// <system-reminder>). Empty: any.
	LastUser string `yaml:"last_user"`
	// Aux: "" matches only main-turn requests; "compact" or "memory" that
	// aux kind; "*" any request.
	Aux string `yaml:"aux"`
	// ToolResult, if set: whether the last user message holds a tool_result.
	ToolResult *bool `yaml:"tool_result"`
	// ToolOutput is a regex on the content of the last tool_result of the
	// last user message; a request without one matches only an empty
	// regex. Its capture groups are {{o1}}..{{o9}}.
	ToolOutput string `yaml:"tool_output"`
	// Pane is a regex on the pane id. Empty: any.
	Pane string `yaml:"pane"`
	// System is a regex on the system text blocks joined by blank lines.
	// Empty: any.
	System string `yaml:"system"`
	// Memories is a regex on the <memories> block of the last user message
	// (its content without the tags); a request without one matches only
	// an empty regex. Its capture groups are {{m1}}..{{m9}}.
	Memories string `yaml:"memories"`

	lastUser, pane, system, memories, toolOutput *regexp.Regexp
}

// ScriptReply is a rule's answer. Text and string values of tool inputs
// may hold placeholders: {{last_user}}, {{tool_result}}, {{pane}} and
// {{1}}..{{9}} (capture groups of the last_user regex), {{memories}} (the
// <memories> block's content), {{m1}}..{{m9}} (groups of the memories
// regex) and {{o1}}..{{o9}} (groups of the tool_output regex).
type ScriptReply struct {
	Text      string           `yaml:"text"`
	ToolCalls []ScriptToolCall `yaml:"tool_calls"`
	// StopReason defaults to tool_use when there are tool calls, else
	// end_turn.
	StopReason string `yaml:"stop_reason"`
}

// ScriptToolCall is one tool_use of a reply.
type ScriptToolCall struct {
	Name  string         `yaml:"name"`
	Input map[string]any `yaml:"input"`
}

// ScriptError makes a rule fail the request like the API would.
type ScriptError struct {
	Status     int     `yaml:"status"`
	Type       string  `yaml:"type"`
	Message    string  `yaml:"message"`
	RetryAfter float64 `yaml:"retry_after"` // seconds
}

// LoadScript reads and parses the rules file at path.
func LoadScript(path string) (*ScriptRules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script rules: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("script rules %s: %w", path, err)
	}
	return s, nil
}

// ParseScript parses a rules document. Unknown fields are errors (a typo
// in a matcher would otherwise match everything), and every regex is
// compiled here so a bad one fails at load, not mid-demo.
func ParseScript(data []byte) (*ScriptRules, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	s := &ScriptRules{}
	if err := dec.Decode(s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no rules (the file is empty)")
		}
		return nil, err
	}
	if len(s.Rules) == 0 {
		return nil, errors.New("no rules (expected a top-level rules: list)")
	}
	lines := ruleLines(data)
	for i := range s.Rules {
		if err := s.Rules[i].check(); err != nil {
			if i < len(lines) {
				return nil, fmt.Errorf("rules[%d] (line %d): %w", i, lines[i], err)
			}
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
	}
	s.compiled = true
	return s, nil
}

// ruleLines returns the YAML line of each rule, for error messages.
func ruleLines(data []byte) []int {
	var doc struct {
		Rules []yaml.Node `yaml:"rules"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	lines := make([]int, len(doc.Rules))
	for i, n := range doc.Rules {
		lines[i] = n.Line
	}
	return lines
}

// check compiles the rule's regexes and validates its error.
func (r *ScriptRule) check() error {
	m := &r.Match
	var err error
	if m.lastUser, err = compileOptional("match.last_user", m.LastUser); err != nil {
		return err
	}
	if m.pane, err = compileOptional("match.pane", m.Pane); err != nil {
		return err
	}
	if m.system, err = compileOptional("match.system", m.System); err != nil {
		return err
	}
	if m.memories, err = compileOptional("match.memories", m.Memories); err != nil {
		return err
	}
	if m.toolOutput, err = compileOptional("match.tool_output", m.ToolOutput); err != nil {
		return err
	}
	if r.Error != nil && (r.Error.Status < 400 || r.Error.Status > 599) {
		return fmt.Errorf("error.status must be an HTTP error status (400-599), got %d", r.Error.Status)
	}
	return nil
}

func compileOptional(field, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return re, nil
}

// scriptView is what rules look at in a request.
type scriptView struct {
	lastUser      string // text of the last user message
	memories      string // its <memories> block, without the tags
	hasToolResult bool
	toolResult    string // content of its last tool_result
	pane          string
	system        string
	aux           string
}

func viewOf(req *wire.Request) scriptView {
	v := scriptView{pane: req.PaneID, aux: req.Aux, system: joinTexts(req.System)}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != wire.RoleUser {
			continue
		}
		v.lastUser = joinTexts(userTextBlocks(m.Content))
		for _, b := range m.Content {
			if b.Type == wire.TypeToolResult {
				v.hasToolResult, v.toolResult = true, b.Content
			}
			if b.Type == wire.TypeText && isInjected(b.Text) && strings.HasPrefix(b.Text, "<memories>\n") {
				v.memories = strings.TrimSuffix(strings.TrimPrefix(b.Text, "<memories>\n"), "\n</memories>")
			}
		}
		break
	}
	return v
}

// userTextBlocks drops the wire-only <role> and <memories> injections
// (see docs/requests-and-caching.md) and the context the CLI agents inject
// the same way: rules match what the user wrote, whatever the role
// template, the memory and the agent's reminders hold.
func userTextBlocks(in []wire.Block) []wire.Block {
	var out []wire.Block
	for _, b := range in {
		if b.Type == wire.TypeText && !isInjected(b.Text) {
			out = append(out, b)
		}
	}
	return out
}

func isInjected(s string) bool {
	for _, tag := range []string{"role", "memories"} {
		if strings.HasPrefix(s, "<"+tag+">\n") && strings.HasSuffix(s, "\n</"+tag+">") {
			return true
		}
	}
	return isTagged(strings.TrimSpace(s))
}

// isTagged reports whether s is one tagged element, <name …>…</name>.
func isTagged(s string) bool {
	rest, ok := strings.CutPrefix(s, "<")
	if !ok {
		return false
	}
	end := strings.IndexAny(rest, "> \t\n")
	if end <= 0 {
		return false
	}
	name := rest[:end]
	for _, r := range name {
		if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return len(rest) > 2*end+2 && strings.HasSuffix(rest, "</"+name+">")
}

// joinTexts joins the text blocks by blank lines.
func joinTexts(blocks []wire.Block) string {
	return wire.Message{Content: blocks}.JoinedText()
}

// captures are the capture groups of a rule's regexes.
type captures struct {
	user, mem, out []string // last_user, memories, tool_output
}

// matches reports whether the rule answers v, with the capture groups of
// its regexes.
func (r *ScriptRule) matches(v scriptView) (c captures, ok bool) {
	m := &r.Match
	if r.Times > 0 && r.matched >= r.Times {
		return c, false
	}
	if m.Aux != "*" && m.Aux != v.aux {
		return c, false
	}
	if m.ToolResult != nil && *m.ToolResult != v.hasToolResult {
		return c, false
	}
	if m.pane != nil && !m.pane.MatchString(v.pane) {
		return c, false
	}
	if m.system != nil && !m.system.MatchString(v.system) {
		return c, false
	}
	for _, f := range []struct {
		re   *regexp.Regexp
		text string
		dst  *[]string
	}{{m.lastUser, v.lastUser, &c.user}, {m.memories, v.memories, &c.mem}, {m.toolOutput, v.toolResult, &c.out}} {
		if f.re == nil {
			continue
		}
		if *f.dst = f.re.FindStringSubmatch(f.text); *f.dst == nil {
			return c, false
		}
	}
	return c, true
}

// Respond answers req with the first matching rule; usage comes from sim
// (nil: no cache, the whole prompt is input).
func (s *ScriptRules) Respond(req *wire.Request, sim *CacheSim) (*wire.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.compile(); err != nil {
		return nil, err
	}
	v := viewOf(req)
	for i := range s.Rules {
		r := &s.Rules[i]
		c, ok := r.matches(v)
		if !ok {
			continue
		}
		r.matched++
		if r.Error != nil {
			return nil, r.Error.apiError()
		}
		return s.reply(r, req, sim, placeholders(v, c))
	}
	return nil, noRuleError(v)
}

// compile readies rules built in code rather than by ParseScript.
func (s *ScriptRules) compile() error {
	if s.compiled {
		return nil
	}
	for i := range s.Rules {
		if err := s.Rules[i].check(); err != nil {
			return &wire.APIError{Status: 400, Type: "invalid_request_error", Message: fmt.Sprintf("script rules[%d]: %v", i, err)}
		}
	}
	s.compiled = true
	return nil
}

func noRuleError(v scriptView) error {
	text := v.lastUser
	if r := []rune(text); len(r) > 80 {
		text = string(r[:80])
	}
	return &wire.APIError{
		Status:  400,
		Type:    "invalid_request_error",
		Message: fmt.Sprintf("no script rule matches this request (last user text: %q)", text),
	}
}

func (e *ScriptError) apiError() *wire.APIError {
	msg := e.Message
	if msg == "" {
		msg = "scripted error"
	}
	return &wire.APIError{
		Status:            e.Status,
		Type:              e.Type,
		Message:           msg,
		Retryable:         retryableStatus(e.Status) || e.Type == "overloaded_error",
		RetryAfterSeconds: e.RetryAfter,
	}
}

// placeholders substitutes the reply placeholders in one pass, so a
// substituted value holding "{{pane}}" is left alone.
func placeholders(v scriptView, c captures) *strings.Replacer {
	pairs := []string{"{{last_user}}", v.lastUser, "{{tool_result}}", v.toolResult, "{{pane}}", v.pane, "{{memories}}", v.memories}
	group := func(groups []string, i int) string {
		if i < len(groups) {
			return groups[i]
		}
		return ""
	}
	for i := 1; i <= 9; i++ {
		n := strconv.Itoa(i)
		pairs = append(pairs, "{{"+n+"}}", group(c.user, i), "{{m"+n+"}}", group(c.mem, i), "{{o"+n+"}}", group(c.out, i))
	}
	return strings.NewReplacer(pairs...)
}

// reply builds the response of a matched rule. Called with s.mu held.
func (s *ScriptRules) reply(r *ScriptRule, req *wire.Request, sim *CacheSim, sub *strings.Replacer) (*wire.Response, error) {
	resp := &wire.Response{Model: req.Model, StopReason: r.Reply.StopReason}
	if resp.Model == "" {
		resp.Model = "script"
	}
	text := sub.Replace(r.Reply.Text)
	if text != "" {
		resp.Content = append(resp.Content, wire.Text(text))
	}
	for _, tc := range r.Reply.ToolCalls {
		input, err := json.Marshal(substituteAll(tc.Input, sub))
		if err != nil {
			return nil, &wire.APIError{Status: 400, Type: "invalid_request_error", Message: fmt.Sprintf("script tool call %s: input is not JSON-encodable: %v", tc.Name, err)}
		}
		s.calls++
		resp.Content = append(resp.Content, wire.Block{
			Type: wire.TypeToolUse, ID: fmt.Sprintf("toolu_script_%d", s.calls), Name: tc.Name, Input: input,
		})
	}
	if resp.StopReason == "" {
		resp.StopReason = "end_turn"
		if len(r.Reply.ToolCalls) > 0 {
			resp.StopReason = "tool_use"
		}
	}
	out := estimateTokens(len(text)) + 10*int64(len(r.Reply.ToolCalls))
	if sim != nil {
		resp.Usage = sim.Usage(req, out)
	} else {
		resp.Usage = wire.Usage{InputTokens: PromptTokens(req), OutputTokens: out}
	}
	return resp, nil
}

// substituteAll copies a tool input with placeholders substituted in every
// string value; a nil input becomes {} (the API always sends an object).
func substituteAll(in map[string]any, sub *strings.Replacer) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = substituteValue(v, sub)
	}
	return out
}

func substituteValue(v any, sub *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		return sub.Replace(x)
	case map[string]any:
		return substituteAll(x, sub)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substituteValue(e, sub)
		}
		return out
	default:
		return v
	}
}

// Script is the in-process scripted provider. Its shared state (rule
// counters, the cache) lives in Rules and Sim, which lock themselves, so
// one Script serves several panes at once.
type Script struct {
	Rules *ScriptRules
	Sim   *CacheSim
	Retry Retry
}

// Stream answers req from the rules, retrying scripted transient errors
// like real ones, then replays the answer as stream events.
func (s *Script) Stream(ctx context.Context, req *wire.Request, onEvent func(wire.Event)) (*wire.Response, error) {
	if s.Rules == nil {
		return nil, &wire.APIError{Status: 400, Type: "invalid_request_error", Message: "the script provider has no rules file (set CICY_SCRIPT)"}
	}
	resp, err := s.Retry.Do(ctx, func() (*wire.Response, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return s.Rules.Respond(req, s.Sim)
	})
	if err != nil {
		return nil, err
	}
	if onEvent != nil {
		emitScripted(resp, onEvent)
	}
	return resp, nil
}

// scriptChunkWords is how many words one text_delta carries.
const scriptChunkWords = 4

// emitScripted replays resp as a streamed answer: text in word chunks
// (which concatenate to the exact text), then one event per tool call.
func emitScripted(resp *wire.Response, onEvent func(wire.Event)) {
	for _, b := range resp.Content {
		switch b.Type {
		case wire.TypeText:
			words := strings.SplitAfter(b.Text, " ")
			for i := 0; i < len(words); i += scriptChunkWords {
				chunk := strings.Join(words[i:min(i+scriptChunkWords, len(words))], "")
				onEvent(wire.Event{Type: "text_delta", Text: chunk})
			}
		case wire.TypeToolUse:
			onEvent(wire.Event{Type: "tool_use", Name: b.Name})
		}
	}
}
