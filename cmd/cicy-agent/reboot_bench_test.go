package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// BenchmarkReboot: a team of the six real CLI agents (one of each, tmux),
// 10 cicy panes (the scripted model) and 5 shell panes (tmux), each CLI
// agent having answered one task; then a "reboot" (kill -9 of the
// supervisor, its tmux server and every pane process). back-s is the
// first command after it (`ls`, which starts the supervisor) → every pane
// idle again, the CLI agents resuming their sessions.
func BenchmarkReboot(b *testing.B) {
	if !haveCLIs() {
		b.Skip("the real CLI agents are not installed (make clis)")
	}
	home := b.TempDir()
	rules := filepath.Join(b.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - reply: {text: ok}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "CICY_HOME="+home, "CICY_SCRIPT="+rules, "HOME="+b.TempDir(),
		"PATH="+cliDir+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+fakeURL, "ANTHROPIC_API_KEY=sk-ant-cicy-bench-0123456789",
		"OPENAI_BASE_URL="+fakeURL+"/v1", "OPENAI_API_KEY=sk-cicy-bench",
		"GOOGLE_GEMINI_BASE_URL="+fakeURL, "GEMINI_API_KEY=sk-cicy-bench", "CI=true", "GITHUB_ACTIONS=true")
	run := func(args ...string) string {
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("cicy-agent %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	b.Cleanup(func() { _ = rebootHome(home) }) // nothing of it left running
	var ids []string
	for _, agent := range cliagent.Names() {
		ids = append(ids, run("create", agent, "--type", agent, "--allow-all", "--model", "fake-model"))
	}
	for i := range 10 {
		ids = append(ids, run("create", fmt.Sprintf("c%d", i), "--type", "cicy", "--provider", "script"))
	}
	for i := range 5 {
		ids = append(ids, run("create", fmt.Sprintf("s%d", i), "--type", "shell", "--", "bash", "--norc", "--noprofile"))
	}
	allIdle(b, home, ids, 3*time.Minute)
	for i, agent := range cliagent.Names() {
		task := run("dispatch", "--to", ids[i], "say hi [[reply=hi from "+agent+"]]")
		run("wait", task, "--timeout", "120s")
	}
	allIdle(b, home, ids, 3*time.Minute)
	var back []time.Duration
	for b.Loop() {
		if err := rebootHome(home); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		run("ls")
		allIdle(b, home, ids, 5*time.Minute)
		back = append(back, time.Since(start))
	}
	slices.Sort(back)
	b.ReportMetric(back[len(back)/2].Seconds(), "back-p50-s")
	b.ReportMetric(back[len(back)-1].Seconds(), "back-max-s")
}

// allIdle waits until every pane of ids is idle, the CLI agents among
// them resumed when they came back.
func allIdle(b *testing.B, home string, ids []string, d time.Duration) {
	b.Helper()
	err := pollSupervisor(home, d, "every pane idle", func(ctx context.Context, c *api.Client) (bool, string, error) {
		ps, err := c.List(ctx)
		if err != nil {
			return false, "", err
		}
		var not []string
		for _, p := range ps {
			if slices.Contains(ids, p.ID) && p.State != "idle" {
				not = append(not, p.ID+" "+p.State+" ("+p.Reason+")")
			}
		}
		return len(not) == 0, strings.Join(not, "; "), nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// rebootHome kills the supervisor of home, its tmux server and every
// pane process (kill -9), as a reboot of the machine would, and waits
// until all are gone.
func rebootHome(home string) error {
	if raw, err := os.ReadFile(filepath.Join(home, "run", "supervisor.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if out, err := exec.Command("tmux", "-L", pane.NewTmuxServer(home, nil).Socket, "display-message", "-p", "#{pid}").Output(); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(pollDeadline)
	for {
		alive := paneProcesses(home)
		for _, pid := range alive {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pane processes alive after kill -9: %v", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f, err := os.OpenFile(filepath.Join(home, "run", "supervisor.lock"), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil { // free once the supervisor is gone
		if time.Now().After(deadline) {
			return fmt.Errorf("the supervisor still holds its lock after SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
