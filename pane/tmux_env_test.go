package pane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procsHolding lists the processes whose file (cmdline or environ) holds
// secret.
func procsHolding(file, secret string) []string {
	var found []string
	paths, _ := filepath.Glob("/proc/[0-9]*/" + file)
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), secret) {
			found = append(found, p)
		}
	}
	return found
}

// TestTmuxEnvNotInArguments: a pane's environment reaches its program but
// not any process's arguments (the server's are those of the call that
// started it), and what the supervisor itself holds does not become the
// server's environment, for the first session and for a later one.
func TestTmuxEnvNotInArguments(t *testing.T) {
	own := fmt.Sprintf("own-secret-%d", rand.Int64())
	t.Setenv("CICY_TEST_OWN_SECRET", own) // the supervisor's own
	s := tmuxServer(t)
	for i := 1; i <= 2; i++ {
		name := "w-" + strconv.Itoa(i)
		secret := fmt.Sprintf("pane-secret-%d-%d", i, rand.Int64())
		out := filepath.Join(t.TempDir(), "out")
		opts := Options{
			Argv: []string{"sh", "-c", `printf '%s|%s|' "$PANE_SECRET" "$QUOTED" > "$1"; env > "$1.env"; exec sleep 60`, "sh", out},
			Dir:  t.TempDir(),
			Env:  []string{"PATH=" + os.Getenv("PATH"), "PANE_SECRET=" + secret, "QUOTED=it's \"q\" $HOME `x`\nline2"},
			Log:  testLog(t),
		}
		p, err := s.Start(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 15*time.Second, "the program's output", func() bool {
			b, _ := os.ReadFile(out)
			return strings.Count(string(b), "|") == 2
		})
		b, _ := os.ReadFile(out)
		if want := secret + "|it's \"q\" $HOME `x`\nline2|"; string(b) != want {
			t.Fatalf("the program saw %q, want %q", b, want)
		}
		if found := procsHolding("cmdline", secret); len(found) > 0 {
			t.Fatalf("the pane's secret is in the arguments of %v", found)
		}
		if found := procsHolding("cmdline", own); len(found) > 0 {
			t.Fatalf("the supervisor's variable is in the arguments of %v", found)
		}
		if env, _ := os.ReadFile(out + ".env"); strings.Contains(string(env), own) {
			t.Fatalf("session %s inherited the supervisor's own environment:\n%s", name, env)
		}
		if _, err := os.Stat(filepath.Join(s.home, "run", "tmux", name+".env")); !os.IsNotExist(err) {
			t.Fatalf("the environment file of %s is still there (%v)", name, err)
		}
		// The server process itself.
		pid, err := s.run(context.Background(), "display-message", "-p", "#{pid}")
		if err != nil {
			t.Fatal(err)
		}
		env, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(env), own) {
			t.Fatal("the tmux server holds the supervisor's own environment")
		}
		// The first session stays: the second is started on a running server.
		t.Cleanup(func() { p.Stop(time.Second, "test"); p.Close() })
	}
}

// TestTmuxForgetGlobal: a server started with a secret in its environment
// (by an older version) no longer hands it to the sessions started after
// ForgetGlobal; without a server it is a no-op that starts none.
func TestTmuxForgetGlobal(t *testing.T) {
	s := tmuxServer(t)
	if err := s.ForgetGlobal("CICY_TEST_OLD_SECRET"); err != nil {
		t.Fatalf("without a server: %v", err)
	}
	if _, err := s.run(context.Background(), "list-sessions"); err == nil {
		t.Fatal("ForgetGlobal started a server")
	}
	start := exec.Command("tmux", append(s.base(), "new-session", "-d", "-s", "old", "sleep", "60")...)
	start.Env = append(clientEnv(os.Environ()), "CICY_TEST_OLD_SECRET=old-secret")
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("start a server the old way: %v %s", err, out)
	}
	if err := s.ForgetGlobal("CICY_TEST_OLD_SECRET", "CICY_TEST_NOT_SET"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "env")
	p, err := s.Start("w-1", Options{Argv: []string{"sh", "-c", `env > "$1"; exec sleep 60`, "sh", out}, Dir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH")}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second, "test"); p.Close() })
	eventually(t, 15*time.Second, "the program's environment", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "PATH=")
	})
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "old-secret") {
		t.Fatalf("the new session inherited the old server's secret:\n%s", b)
	}
}
