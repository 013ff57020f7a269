package cliagent

import (
	"slices"
	"testing"
)

// Payloads captured from the pinned CLIs run against the fake model
// server (Claude Code `claude -p`, Codex `codex exec`, opencode `opencode
// run` and pi `pi -p` with the plugin and extension this package
// writes); Qwen Code's and Gemini CLI's are the common fields their hook
// runners build (createBaseInput).
const (
	claudeSessionStart = `{"session_id":"31ef848a-e11b-44c6-9c43-0b2ef9ba7a01","transcript_path":"/tmp/h-sess/claude-cfg/projects/-tmp-h-sess-work-claude/31ef848a-e11b-44c6-9c43-0b2ef9ba7a01.jsonl","cwd":"/tmp/h-sess/work-claude","hook_event_name":"SessionStart","source":"startup"}`
	claudeStop         = `{"session_id":"31ef848a-e11b-44c6-9c43-0b2ef9ba7a01","transcript_path":"/tmp/h-sess/claude-cfg/projects/-tmp-h-sess-work-claude/31ef848a-e11b-44c6-9c43-0b2ef9ba7a01.jsonl","cwd":"/tmp/h-sess/work-claude","prompt_id":"c9f29bca-bb8a-4ce5-b582-c2f260086323","permission_mode":"default","effort":{"level":"medium"},"hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"hi from fake-llm","background_tasks":[],"session_crons":[]}`
	codexPrompt        = `{"session_id":"01a24eb7-8cf5-79a1-bd0f-f84b6af7691c","turn_id":"01a24eb7-8d0a-7b22-9e99-cbe2aa33c42b","transcript_path":"/tmp/h-sess/codex-home/sessions/2026/12/07/rollout-2026-12-07T04-16-21-01a24eb7-8cf5-79a1-bd0f-f84b6af7691c.jsonl","cwd":"/tmp/h-sess/work-codex","hook_event_name":"UserPromptSubmit","model":"fake-model","permission_mode":"bypassPermissions","prompt":"say hi"}`
	codexNotifyTitle   = `{"type":"agent-turn-complete","thread-id":"01a2370c-aaaa-7000-8000-000000000001","turn-id":"01a2370c-bbbb","cwd":"/w","client":"codex-tui","input-messages":["Generate a concise, single-line task title"],"last-assistant-message":"{\"title\":\"x\"}"}`
	opencodeIdle       = `{"sessionID":"ses_db1481529ffectdQq6ydLPl1uK","child":false,"last_assistant_message":"hi from fake-llm"}`
	opencodeChildBusy  = `{"sessionID":"ses_child0000000000000000000","child":true,"status":"busy"}`
	piSessionStart     = `{"reason":"startup","session_id":"01a24eb7-aa88-7040-8833-87e11ac7c192"}`
	piAgentEnd         = `{"last_assistant_message":"hi from fake-llm","stop_reason":"stop","session_id":"01a24eb7-aa88-7040-8833-87e11ac7c192"}`
	qwenStop           = `{"session_id":"8b0e3a52-1f1c-4b7e-9d55-3c2a1e0f9a11","transcript_path":"/q/chats/8b0e3a52.jsonl","cwd":"/w","hook_event_name":"Stop","timestamp":"2026-12-07T04:16:21.000Z","permission_mode":"default","last_assistant_message":"hi"}`
	geminiAfterAgent   = `{"session_id":"5d1c9a7e-0b8e-4f57-a0e2-6f1f2d3c4b5a","transcript_path":"/g/.gemini/tmp/x/chats/session-5d1c9a7e.json","cwd":"/w","hook_event_name":"AfterAgent","timestamp":"2026-12-07T04:16:21.000Z","prompt":"hi","prompt_response":"hi"}`
)

// TestSessionOf: each agent's session id is read from its own signals'
// payloads; a side thread's (Codex's notify), a sub-agent's (opencode's
// child session), a payload with none, and an id that is not a plain
// token (it would become an argument) give none.
func TestSessionOf(t *testing.T) {
	cases := []struct{ agent, event, payload, want string }{
		{"claude", "SessionStart", claudeSessionStart, "31ef848a-e11b-44c6-9c43-0b2ef9ba7a01"},
		{"claude", "Stop", claudeStop, "31ef848a-e11b-44c6-9c43-0b2ef9ba7a01"},
		{"claude", "SessionStart", `{"session_id":"9f0c2b1e-0000-4000-8000-000000000002","hook_event_name":"SessionStart","source":"clear"}`, "9f0c2b1e-0000-4000-8000-000000000002"},
		{"claude", "Notification", `{"notification_type":"idle_prompt"}`, ""},
		{"claude", "Stop", `{"session_id":"--dangerously-skip-permissions"}`, ""},
		{"claude", "Stop", `{"session_id":"a b"}`, ""},
		{"claude", "Stop", `not json`, ""},
		{"codex", "UserPromptSubmit", codexPrompt, "01a24eb7-8cf5-79a1-bd0f-f84b6af7691c"},
		{"codex", "notify", codexNotifyTitle, ""},
		{"opencode", "session.idle", opencodeIdle, "ses_db1481529ffectdQq6ydLPl1uK"},
		{"opencode", "session.status", opencodeChildBusy, ""},
		{"pi", "session_start", piSessionStart, "01a24eb7-aa88-7040-8833-87e11ac7c192"},
		{"pi", "agent_end", piAgentEnd, "01a24eb7-aa88-7040-8833-87e11ac7c192"},
		{"pi", "tool_execution_start", `{"tool":"bash"}`, ""},
		{"qwen", "Stop", qwenStop, "8b0e3a52-1f1c-4b7e-9d55-3c2a1e0f9a11"},
		{"gemini", "AfterAgent", geminiAfterAgent, "5d1c9a7e-0b8e-4f57-a0e2-6f1f2d3c4b5a"},
		{"shell", "Stop", claudeStop, ""},
	}
	for _, c := range cases {
		if got := Session(c.agent, c.event, []byte(c.payload)); got != c.want {
			t.Errorf("Session(%s, %s, %.60s…) = %q, want %q", c.agent, c.event, c.payload, got, c.want)
		}
	}
	for _, name := range Names() {
		k, _ := Lookup(name)
		if k.hooks && k.session == nil {
			t.Errorf("%s has hooks but declares no way to read its session id from them", name)
		}
	}
}

// TestResumeArgs: each agent declares the arguments that take a session
// up, from its pinned version's --help; an id that is not a session id
// gives none.
func TestResumeArgs(t *testing.T) {
	want := map[string][]string{
		"claude":   {"--resume", "S-1"},
		"codex":    {"resume", "S-1"},
		"opencode": {"--session", "S-1"},
		"qwen":     {"--resume", "S-1"},
		"gemini":   {"--resume", "S-1"},
		"pi":       {"--session", "S-1"},
	}
	for _, name := range Names() {
		k, _ := Lookup(name)
		w, known := want[name] // a new agent's: the id among them, if it resumes
		got, ok := k.ResumeArgs("S-1")
		if known && (!ok || !k.ResumesByID() || !slices.Equal(got, w)) || !known && ok != slices.Contains(got, "S-1") {
			t.Errorf("%s.ResumeArgs(S-1) = %q, %v (resumes by id: %v); want %q", name, got, ok, k.ResumesByID(), w)
		}
		if got, ok := k.ResumeArgs("-x"); ok {
			t.Errorf("%s.ResumeArgs(-x) = %q, want none", name, got)
		}
	}
	if got, ok := (Kind{Name: "none"}).ResumeArgs("S-1"); ok || (Kind{}).ResumesByID() {
		t.Errorf("an agent that cannot resume by id gave %q", got)
	}
}
