package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// A CLI agent's session id is recorded from the first signal that
// carries one, in the pane's row too; a later signal with another id
// replaces it (the latest wins), one stamped before the last changes
// nothing, and one that carries none leaves it. Get and Explain show it
// with the arguments that resume it.
func TestSessionRecorded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "codex"), []byte("#!/bin/sh\nexec sleep 100000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, store := openTestHome(t, filepath.Join(t.TempDir(), "home"))
	ctx := context.Background()
	getenv := func(k string) string {
		if k == "PATH" {
			return dir + string(os.PathListSeparator) + os.Getenv("PATH")
		}
		return os.Getenv(k)
	}
	s, err := New(ctx, Config{Home: h, Log: quietLog(), Getenv: getenv}, store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Create(ctx, api.CreateRequest{Title: "c", Type: "codex", Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	hook := func(event, payload string, at time.Time) {
		t.Helper()
		if _, err := s.Hook(ctx, p.ID, api.HookRequest{Agent: "codex", Event: event, Payload: []byte(payload), At: at}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want string) {
		t.Helper()
		info, err := s.Get(p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.SessionID != want || !slices.Equal(info.ResumeArgs, []string{"resume", want}) || info.SessionAt == nil {
			t.Errorf("pane's session = %q at %v, resume %q; want %q", info.SessionID, info.SessionAt, info.ResumeArgs, want)
		}
		row, err := store.GetPane(ctx, p.ID)
		if err != nil || row.SessionID != want {
			t.Errorf("row's session = %q, %v; want %q", row.SessionID, err, want)
		}
		x, err := s.screens.Explain(p.ID)
		if err != nil || x.Pane.SessionID != want {
			t.Errorf("explain's session = %q, %v; want %q", x.Pane.SessionID, err, want)
		}
	}
	t0 := time.Now().Add(-time.Minute)
	// Codex's SessionStart is otherwise ignored; its id counts.
	hook("SessionStart", `{"session_id":"01a24eb7-0000-7000-8000-00000000000a","hook_event_name":"SessionStart"}`, t0)
	check("01a24eb7-0000-7000-8000-00000000000a")
	hook("Stop", `{"session_id":"01a24eb7-0000-7000-8000-00000000000b","last_assistant_message":"ok"}`, t0.Add(2*time.Second))
	check("01a24eb7-0000-7000-8000-00000000000b")
	// Older than the last: a signal that arrived out of order.
	hook("UserPromptSubmit", `{"session_id":"01a24eb7-0000-7000-8000-00000000000a"}`, t0.Add(time.Second))
	// notify's thread-id is not read (the title thread's too), nor is a
	// signal with none.
	hook("notify", `{"type":"agent-turn-complete","thread-id":"01a24eb7-0000-7000-8000-00000000000c"}`, t0.Add(3*time.Second))
	hook("PostToolUse", `{}`, t0.Add(4*time.Second))
	check("01a24eb7-0000-7000-8000-00000000000b")
}
