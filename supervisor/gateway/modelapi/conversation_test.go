package modelapi

import (
	"encoding/json"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// brief renders a conversation compactly: system texts, then each message
// as role and its blocks.
func brief(c *wire.Request) []string {
	var out []string
	for _, b := range c.System {
		out = append(out, "system: "+b.Text)
	}
	for _, msg := range c.Messages {
		for _, b := range msg.Content {
			s := msg.Role + " " + b.Type + ": "
			switch b.Type {
			case wire.TypeText:
				s += b.Text
			case wire.TypeToolUse:
				s += b.ID + " " + b.Name + " " + string(b.Input)
			case wire.TypeToolResult:
				s += b.ToolUseID + " " + b.Content
			}
			out = append(out, s)
		}
		out = append(out, "--")
	}
	return out
}

func TestConversation(t *testing.T) {
	for _, c := range []struct {
		api, body string
		want      []string
	}{
		{APIAnthropic, `{"system":"Be brief.","messages":[
			{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"text","text":"on it"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.txt"}]},{"type":"image","source":{}}]}]}`,
			[]string{"system: Be brief.", "user text: hi", "--", "assistant text: on it", `assistant tool_use: t1 Bash {"command":"ls"}`, "--",
				"user tool_result: t1 a.txt", "--"}},
		{APIChat, `{"messages":[
			{"role":"system","content":"You are opencode."},
			{"role":"user","content":[{"type":"text","text":"run it"}]},
			{"role":"assistant","content":null,"tool_calls":[
				{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},
				{"id":"c2","type":"function","function":{"name":"bash","arguments":"not json"}}]},
			{"role":"tool","tool_call_id":"c1","content":"a.txt"},
			{"role":"tool","tool_call_id":"c2","content":"b.txt"}]}`,
			[]string{"system: You are opencode.", "user text: run it", "--",
				`assistant tool_use: c1 bash {"command":"ls"}`, `assistant tool_use: c2 bash {"input":"not json"}`, "--",
				"user tool_result: c1 a.txt", "user tool_result: c2 b.txt", "--"}},
		{APIResponses, `{"instructions":"You are Codex.","input":[
			{"type":"message","role":"developer","content":[{"type":"input_text","text":"sandbox"}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context/>"}]},
			{"role":"user","content":"run it"},
			{"type":"reasoning","summary":[]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},
			{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},
			{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"},
			{"type":"function_call_output","call_id":"c1","output":"a.txt"},
			{"type":"custom_tool_call_output","call_id":"c2","output":"done"}]}`,
			[]string{"system: You are Codex.", "system: sandbox", "user text: <environment_context/>", "--", "user text: run it", "--",
				"assistant text: ok", `assistant tool_use: c1 exec_command {"cmd":"ls"}`, `assistant tool_use: c2 apply_patch {"input":"*** Begin Patch"}`, "--",
				"user tool_result: c1 a.txt", "user tool_result: c2 done", "--"}},
		{APIResponses, `{"input":"just this"}`, []string{"user text: just this", "--"}},
		{APIGemini, `{"systemInstruction":{"parts":[{"text":"You are Gemini CLI."}]},"contents":[
			{"role":"user","parts":[{"text":"<session_context/>"}]},
			{"role":"user","parts":[{"text":"run it"}]},
			{"role":"model","parts":[{"text":"thinking","thought":true},{"text":"ok"},
				{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"ls"}}},
				{"functionCall":{"name":"read_file","args":{"file_path":"a"}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"a.txt"}}},
				{"functionResponse":{"name":"read_file","response":{"error":"no such file"}}}]}],
			"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object"}}]},{"googleSearch":{}}]}`,
			[]string{"system: You are Gemini CLI.", "user text: <session_context/>", "--", "user text: run it", "--",
				"assistant text: ok", `assistant tool_use: c1 run_shell_command {"command":"ls"}`, `assistant tool_use: read_file read_file {"file_path":"a"}`, "--",
				"user tool_result: c1 a.txt", "user tool_result: read_file no such file", "--"}},
	} {
		var req request
		if err := json.Unmarshal([]byte(c.body), &req); err != nil {
			t.Fatal(err)
		}
		got := brief(conversation(c.api, &req))
		if len(got) != len(c.want) {
			t.Errorf("%s: got\n%q\nwant\n%q", c.api, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: line %d: got %q, want %q", c.api, i, got[i], c.want[i])
			}
		}
	}
}
