package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// swallowingClaude turns the first Enter after typed text into a newline,
// as Claude Code's paste guard can: the text stays in its composer, and
// only a second Enter submits it (written to the file submitted).
const swallowingClaude = "#!/bin/sh\nR=────────────────────────────────────────\n" +
	"prompt() { printf '\\n%s\\n❯ %s\\n\\n%s\\n  ? for shortcuts ' \"$R\" \"$1\" \"$R\"; }\n" +
	"prompt ''\nIFS= read -r first\nprompt \"$first\"\nIFS= read -r second\n" +
	"printf '%s' \"$first\" > submitted\nprompt ''\nexec sleep 100000\n"

// TestSendResubmits: text typed with send at an agent's idle prompt that
// is still in its composer a moment later gets a second Enter.
func TestSendResubmits(t *testing.T) {
	for _, backend := range []string{"pty", "tmux"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "tmux" && !pane.TmuxAvailable() {
				t.Fatal("tmux 3.0 or newer is needed (the CI installs it)")
			}
			s, _ := newStandInSupervisor(t, os.Getenv, swallowingClaude)
			ctx := context.Background()
			p, err := s.Create(ctx, api.CreateRequest{Title: "c", Type: "claude", Backend: backend})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
			waitPane(t, s, p.ID, "idle by the screen", func(st pane.Status) bool { return st.State == pane.Idle && st.Cause == pane.CauseScreen })
			if _, err := s.Send(ctx, p.ID, api.SendRequest{Text: "delegate the long task to the worker now"}); err != nil {
				t.Fatal(err)
			}
			info, err := s.Get(p.ID)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(info.Workspace, "submitted")
			deadline := time.Now().Add(30 * time.Second)
			for {
				b, err := os.ReadFile(file)
				if err == nil && strings.Contains(string(b), "delegate the long task") {
					return
				}
				if time.Now().After(deadline) {
					sc, _ := s.Screen(p.ID, 0)
					t.Fatalf("the text was never submitted; screen:\n%s", sc.Screen)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
