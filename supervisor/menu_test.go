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
	"github.com/cicy-ai/cicy-agent/schema"
)

// standInPicker is standInSilent (a claude without hooks) that first
// shows Claude Code's model picker, as a person who typed /model sees it,
// until the file named by $PICKER_CLOSE exists; it reads no input before.
const standInPicker = "#!/bin/sh\n" +
	"W=$(stty size | cut -d' ' -f2)\n" +
	"printf '\\033[2J\\033[H'\n" +
	"i=0; while [ $i -lt ${W:-80} ]; do printf '▔'; i=$((i+1)); done\n" +
	"printf '\\n  Select model\\n\\n  ❯ 1. Default (recommended)\\n    2. Opus\\n\\n  Enter to save · Esc to cancel'\n" +
	"while [ ! -e \"$PICKER_CLOSE\" ]; do sleep 0.05; done\n" +
	"D=1\n"

// TestTaskWaitsForAnOpenMenu: a task for a CLI agent idle under a menu a
// person opened (a model picker) stays queued — typed there, its Enter
// would pick an option — and is typed once the menu is gone.
func TestTaskWaitsForAnOpenMenu(t *testing.T) {
	t.Parallel()
	closeFile := filepath.Join(t.TempDir(), "close")
	script := standInPicker + strings.TrimPrefix(standInSilent, "#!/bin/sh\nD=4\n")
	getenv := envOverlay(os.Getenv, "PICKER_CLOSE="+closeFile)
	s, _ := newStandInSupervisor(t, getenv, script)
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "picker", Type: "claude", Backend: "pty", Env: []string{"PICKER_CLOSE"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(context.Background(), p.ID) })
	waitPane(t, s, p.ID, "idle under the picker", func(st pane.Status) bool { return st.State == pane.Idle && st.Signals.ScreenPart == pane.PartMenu })
	task, err := s.Dispatch(ctx, "", p.ID, "say the answer")
	if err != nil {
		t.Fatal(err)
	}
	// The outbox looks again at every state change and on its timer: a
	// few seconds of looks leave the task queued.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		got, err := s.store.GetTask(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != api.TaskQueued {
			t.Fatalf("task %d %s (%s) while the agent showed its model picker", task.ID, got.Status, got.Reason)
		}
	}
	closed := time.Now()
	if err := os.WriteFile(closeFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := waitTask(t, s, task.ID, 60*time.Second)
	if got.Status != api.TaskDone {
		t.Fatalf("task: %s (%s) %s", got.Status, got.Reason, got.Error)
	}
	if at := schema.ParseTime(got.DeliveredAt.String); at.Before(closed) {
		t.Errorf("task typed at %s, before the picker closed at %s", at, closed)
	}
}
