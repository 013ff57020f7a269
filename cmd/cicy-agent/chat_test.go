package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChatFollowsTheSupervisor: a cicy pane's chat (what a view's tile
// runs) says when the supervisor stops instead of showing stale text as
// if live, follows the pane again once a supervisor runs (starting none
// itself), and ends, saying so, when the pane is removed.
func TestChatFollowsTheSupervisor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - match: {aux: memory}\n    reply: {text: '{\"memories\":[]}'}\n"+
		"  - match: {last_user: \".\"}\n    reply: {text: \"You said: {{last_user}}\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CICY_HOME="+home, "CICY_PROVIDER=script", "CICY_SCRIPT="+rules)
	t.Cleanup(func() { stopHome(home, env) })
	id := strings.TrimSpace(runCicy(t, env, "create", "bot", "--provider", "script"))

	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "attach", id)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		<-exited
	})
	has := func(s string) func() bool { return func() bool { return strings.Contains(out.String(), s) } }
	waitFor(t, "the chat", has("attached to "+id), out.String)
	if _, err := in.Write([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first answer", has("You said: first"), out.String)

	runCicy(t, env, "shutdown")
	waitFor(t, "the chat saying the supervisor stopped", has("[the supervisor stopped: "+id+" shows nothing new until it runs again"), out.String)
	// The chat started none (it would not have found it stopped): a
	// command does.
	runCicy(t, env, "ls")
	waitFor(t, "the chat following again", has("[the supervisor is back: following "+id+" again]"), out.String)
	runCicy(t, env, "send", id, "second", "--wait")
	waitFor(t, "the answer after the restart", has("You said: second"), out.String)

	runCicy(t, env, "kill", id)
	waitFor(t, "the chat saying the pane is gone", has("[pane "+id+" was removed; detached]"), out.String)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the chat ended with %v:\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the chat did not end after its pane was removed:\n%s", out.String())
	}
	exited <- nil // for the cleanup
}
