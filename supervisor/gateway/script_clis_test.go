package gateway

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// cliRules drive the real CLIs below: one shell call, then a reply
// quoting a part of its output.
const cliRules = `
rules:
  - match: {last_user: 'task 1: count the lines of notes\.txt', tool_result: false}
    reply:
      text: Counting.
      tool_calls:
        - name: shell
          input: {command: 'echo "notes.txt has $(wc -l < notes.txt) lines"', description: count the lines}
  - match: {tool_output: 'notes\.txt has (\d+) lines'}
    reply: {text: 'Result: {{o1}} lines.'}
  - match: {aux: '*'}
    reply: {text: A scripted side answer.}
`

// cliBin is the folder of the pinned real CLIs (make clis), or "" (the
// test then skips, or fails under CICY_REQUIRE_CLIS=1).
func cliBin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CICY_CLI_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "cicy-agent", "clis")
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	for _, b := range []string{"claude", "codex", "opencode"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			if os.Getenv("CICY_REQUIRE_CLIS") == "1" {
				t.Fatalf("CICY_REQUIRE_CLIS=1 but %s is not in %s (run make clis)", b, bin)
			}
			t.Skip("the real CLI agents are not installed (make clis)")
		}
	}
	return bin
}

// TestScriptRealCLIs runs the real Claude Code, Codex and opencode, seeded
// as their panes are, once each in their non-interactive mode against a
// gateway on the scripted model: each runs the scripted shell command in
// its own shell tool and prints the scripted answer, and the gateway
// records usage for its pane, in the API the agent speaks.
func TestScriptRealCLIs(t *testing.T) {
	bin := cliBin(t)
	tokens := map[string]string{"claude": "tok-claude-0123456789", "codex": "tok-codex-0123456789", "opencode": "tok-opencode-0123456789"}
	rules, err := provider.ParseScript([]byte(cliRules))
	if err != nil {
		t.Fatal(err)
	}
	src := fixedScript{&provider.Script{Rules: rules, Sim: provider.NewCacheSim(nil)}}
	rec := &recorder{}
	l := logrus.New()
	l.SetOutput(io.Discard)
	gw, err := New(Config{
		Panes: panes{tokens["claude"]: "w-1", tokens["codex"]: "w-2", tokens["opencode"]: "w-3"},
		Usage: rec, Log: logrus.NewEntry(l), Transport: NewScriptTransport(src, logrus.NewEntry(l)),
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gw.Serve() }()
	t.Cleanup(func() { _ = gw.Close() })

	for i, kind := range []string{"claude", "codex", "opencode"} {
		t.Run(kind, func(t *testing.T) {
			out := runCLI(t, bin, kind, gw.URL(), tokens[kind])
			if !strings.Contains(out, "Result: 3 lines.") {
				t.Fatalf("%s did not print the scripted answer; its output:\n%s", kind, out)
			}
			pane := []string{"w-1", "w-2", "w-3"}[i]
			api := []API{Anthropic, Responses, Chat}[i]
			var main int
			for _, c := range rec.all() {
				if c.Pane != pane || c.Aux != "" {
					continue
				}
				main++
				if c.Status != 200 || c.API != api || c.OutputTokens == 0 || c.InputTokens+c.CacheReadTokens+c.CacheCreationTokens == 0 || c.Model != "script" {
					t.Errorf("%s: call %+v", kind, c)
				}
			}
			if main < 2 {
				t.Errorf("%s: %d main-loop calls recorded, want the call and the answer", kind, main)
			}
		})
	}
}

// runCLI seeds kind's config as a pane's (all allowed, model script) in a
// fresh folder whose workspace holds a three-line notes.txt, runs the
// program once with the task, and returns its output.
func runCLI(t *testing.T, bin, kind, gwURL, token string) string {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A supervisor set up for OpenAI: opencode then speaks Chat
	// Completions (Claude Code speaks Anthropic Messages, Codex Responses).
	settings := map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"}
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	k, _ := cliagent.Lookup(kind)
	argv, env, err := k.Prepare(cliagent.Setup{
		ID: "w-x", Workspace: ws, Dir: filepath.Join(root, "pane"), Shared: filepath.Join(root, "shared"),
		Self: truePath, Model: "script", AllowAll: true, Gateway: gwURL, Token: token,
		Getenv: func(n string) string { return settings[n] },
	})
	if err != nil {
		t.Fatal(err)
	}
	task := "task 1: count the lines of notes.txt"
	var args []string
	switch kind {
	case "claude":
		args = append([]string{"-p", task}, argv[1:]...)
	case "codex":
		args = []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", task}
	case "opencode":
		args = []string{"run", task}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, kind), args...)
	cmd.Dir = ws
	cmd.Env = append(cliEnv(root, bin), "PWD="+ws) // opencode works where PWD says
	cmd.Env = append(cmd.Env, env...)
	if os.Geteuid() == 0 {
		cmd.Env = append(cmd.Env, "IS_SANDBOX=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	// Whatever the program left running in its group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", kind, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// cliEnv is the test's environment without any provider setting, with a
// home of its own and the CLIs on PATH.
func cliEnv(root, bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ANTHROPIC_") || strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "CLAUDE") ||
			strings.HasPrefix(name, "CODEX") || strings.HasPrefix(name, "OPENCODE") || name == "HOME" || name == "PATH" || name == "PWD" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+filepath.Join(root, "home"), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}
