package pane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeTmux puts a tmux on PATH that runs script (sh) instead.
func fakeTmux(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tmux"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestTmuxRunnerTimeout: a tmux that never answers is cut short, and the
// error names the command and wraps the deadline.
func TestTmuxRunnerTimeout(t *testing.T) {
	fakeTmux(t, "exec sleep 60")
	done := make(chan error, 1)
	go func() {
		_, err := TmuxRunner{Timeout: 100 * time.Millisecond}.Run(context.Background(), nil, "list-panes", "-a")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "tmux list-panes: no answer after ") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a hung tmux hung its caller")
	}
}

// TestTmuxRunnerCanceled: the caller's context ends the command too.
func TestTmuxRunnerCanceled(t *testing.T) {
	fakeTmux(t, "exec sleep 60")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := TmuxRunner{Timeout: time.Hour}.Run(ctx, nil, "capture-pane")
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "tmux capture-pane: ") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a canceled call did not end")
	}
}

// TestTmuxRunnerOutputAndErrors: arguments, input and environment reach
// tmux; what it prints comes back; a failure says what tmux said.
func TestTmuxRunnerOutputAndErrors(t *testing.T) {
	fakeTmux(t, `[ "$3" = fail ] && { echo "no server running on /tmp/x" >&2; exit 1; }
printf '%s|%s|%s|' "$*" "$CICY_TEST_VAR" "$(cat)"`)
	r := TmuxRunner{Args: []string{"-L", "sock"}, Env: []string{"PATH=" + os.Getenv("PATH"), "CICY_TEST_VAR=v"}}
	out, err := r.Run(context.Background(), strings.NewReader("the input"), "load-buffer", "-")
	if err != nil || string(out) != "-L sock load-buffer -|v|the input|" {
		t.Fatalf("out %q, err %v", out, err)
	}
	_, err = r.Run(context.Background(), nil, "fail")
	var terr *TmuxError
	if !errors.As(err, &terr) || err.Error() != "tmux fail: no server running on /tmp/x" || !noServer(err) || terr.Err == nil {
		t.Fatalf("err = %v", err)
	}
}
