package supervisor

import (
	"testing"

	"github.com/cicy-ai/cicy-agent/pane"
)

func TestInterpretHook(t *testing.T) {
	cases := []struct {
		agent, event, payload string
		state                 pane.State
		end, prompt           bool
		result, failed        string
		ignored               bool
	}{
		{agent: "claude", event: "SessionStart", payload: `{"source":"startup"}`, state: pane.Idle},
		{agent: "claude", event: "UserPromptSubmit", payload: `{"prompt":"hi"}`, state: pane.Busy, prompt: true},
		{agent: "claude", event: "Stop", payload: `{"hook_event_name":"Stop","last_assistant_message":"done it"}`, state: pane.Idle, end: true, result: "done it"},
		{agent: "claude", event: "StopFailure", payload: `{"error":"unknown","last_assistant_message":"API Error: 400 bad"}`, state: pane.Idle, end: true, failed: "the agent's turn failed: API Error: 400 bad"},
		{agent: "claude", event: "Notification", payload: `{"notification_type":"permission_prompt"}`, state: pane.Waiting},
		{agent: "claude", event: "Notification", payload: `{"notification_type":"idle_prompt"}`, state: pane.Idle},
		{agent: "claude", event: "Notification", payload: `{"notification_type":"auth_success"}`, ignored: true},
		{agent: "claude", event: "PermissionRequest", payload: `{"tool_name":"Bash"}`, state: pane.Waiting},
		{agent: "claude", event: "PostToolUse", payload: `{}`, state: pane.Busy},
		{agent: "codex", event: "SessionStart", payload: `{}`, ignored: true},
		{agent: "codex", event: "Stop", payload: `{"last_assistant_message":"x"}`, state: pane.Idle, end: true, result: "x"},
		{agent: "codex", event: "notify", payload: `{"type":"agent-turn-complete","input-messages":["make it"],"last-assistant-message":"made"}`, state: pane.Idle, end: true, result: "made"},
		{agent: "codex", event: "notify", payload: `{"type":"agent-turn-complete","input-messages":["Generate a concise, single-line task title"],"last-assistant-message":"{}"}`, ignored: true},
		{agent: "opencode", event: "session.status", payload: `{"status":"busy"}`, state: pane.Busy, prompt: true},
		{agent: "opencode", event: "session.status", payload: `{"status":"idle"}`, ignored: true},
		{agent: "opencode", event: "session.idle", payload: `{"last_assistant_message":"fine"}`, state: pane.Idle, end: true, result: "fine"},
		{agent: "opencode", event: "permission.asked", payload: `{"permission":"bash"}`, state: pane.Waiting},
		{agent: "opencode", event: "permission.replied", payload: `{"reply":"once"}`, state: pane.Busy},
		{agent: "claude", event: "Stop", payload: `not json`, state: pane.Idle, end: true},
		{agent: "claude", event: "NewEvent", payload: `{}`, ignored: true},
	}
	for _, c := range cases {
		eff := interpretHook(c.agent, c.event, []byte(c.payload))
		name := c.agent + "/" + c.event + " " + c.payload
		if (eff.ignored != "") != c.ignored {
			t.Errorf("%s: ignored = %q, want ignored %v", name, eff.ignored, c.ignored)
			continue
		}
		if eff.state != c.state || eff.end != c.end || eff.prompt != c.prompt || eff.result != c.result || eff.failed != c.failed {
			t.Errorf("%s: got %+v", name, eff)
		}
	}
}
