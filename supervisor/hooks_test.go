package supervisor

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
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

// hookOnStart is a store that, when a pane's start is recorded, runs a
// hook for it: the agent's SessionStart arriving while Create has started
// the process but not yet returned (the moment `cicy-agent hook` reached
// on a busy machine).
type hookOnStart struct {
	Store
	sup  **Supervisor
	errs chan error
}

func (h hookOnStart) SaveRuntime(ctx context.Context, id string, r schema.Runtime) error {
	if r.State.String == string(pane.Starting) && *h.sup != nil {
		_, err := (*h.sup).Hook(ctx, id, HookRequest{Agent: "claude", Event: "SessionStart", Payload: []byte(`{}`)})
		h.errs <- err
	}
	return h.Store.SaveRuntime(ctx, id, r)
}

// A hook that comes while Create is starting the pane is not lost: the
// pane is idle when Create returns (it used to stay "starting" for good,
// as "no such pane" went to the agent's stderr).
func TestHookDuringCreate(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\nexec sleep 100000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	h := Home{Root: filepath.Join(t.TempDir(), "home")}
	if err := h.Prepare(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := schema.Open(ctx, h.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := logrus.New()
	l.SetOutput(io.Discard)
	var sup *Supervisor
	hs := hookOnStart{Store: store, sup: &sup, errs: make(chan error, 4)}
	s, err := New(ctx, Config{Home: h, Log: logrus.NewEntry(l)}, hs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sup = s
	p, err := s.Create(ctx, CreateRequest{Title: "c", Type: "claude", Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-hs.errs; err != nil {
		t.Errorf("the hook during Create: %v", err)
	}
	info, err := s.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != string(pane.Idle) || info.Reason != "hook:SessionStart" {
		t.Errorf("after Create: %s (%s), want idle (hook:SessionStart)", info.State, info.Reason)
	}
}
