package modelapi

import (
	"encoding/json"
	"strings"
	"unicode"
)

// turn is what the handler reads of one model request, whatever its API.
type turn struct {
	prompt     string // the last user text
	afterTool  bool   // the conversation ends with a tool result
	toolResult string // the text of that result
	tools      []tool
	structured bool    // the request asks for JSON-schema output
	schema     rawJSON // that schema
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

// shellCall is a call of the request's shell tool that runs cmd, in that
// tool's own shape (with desc as the description a tool requires), or nil
// if the request offers no shell tool.
func (t *turn) shellCall(cmd, desc string) *toolCall {
	for _, name := range []string{"Bash", "bash", "exec_command", "shell_command", "shell", "run_shell_command"} {
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
		case "Bash", "bash", "run_shell_command":
			if tl.required["description"] || name == "run_shell_command" {
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
