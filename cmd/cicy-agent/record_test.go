package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/pane"
)

// The screen corpus (testdata/screens/<agent>/<state>/*.txt) is recorded
// from the real CLI agents by
//
//	go test ./cmd/cicy-agent -run TestRecordScreens -timeout 20m -args -record
//
// which drives each one through idle, busy and waiting at a few window
// sizes against the fake model server and saves `cicy-agent screen` at
// each moment. The labels come from what the test did, not from the rules.
var record = flag.Bool("record", false, "record the screen corpus from the real CLI agents")

func TestRecordScreens(t *testing.T) {
	if !*record {
		t.Skip("records the screen corpus; run with -record")
	}
	if !haveCLIs() {
		t.Fatal("the real CLI agents are not installed (make clis)")
	}
	out, err := filepath.Abs("testdata/screens")
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"claude", "codex", "opencode"} {
		t.Run(agent, func(t *testing.T) { recordAgent(t, agent, out) })
	}
}

type recorder struct {
	t      *testing.T
	home   string
	env    []string
	agent  string
	out    string
	socket string
}

func (r *recorder) run(args ...string) string {
	r.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), args...)
	cmd.Env = r.env
	b, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("cicy-agent %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return string(b)
}

// waitState waits until the pane's state is want.
func (r *recorder) waitState(id, want string, d time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(r.run("ls", "--json"), `"state": "`+want+`"`) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.t.Fatalf("%s never reached %s:\n%s", id, want, r.run("screen", id))
}

func (r *recorder) save(id, state, name string) {
	r.t.Helper()
	screen := r.run("screen", id)
	dir := filepath.Join(r.out, r.agent, state)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(screen), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *recorder) resize(id string, cols, rows int) {
	r.t.Helper()
	if b, err := exec.Command("tmux", "-L", r.socket, "resize-window", "-t", "="+id+":main", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows)).CombinedOutput(); err != nil {
		r.t.Fatalf("resize: %v %s", err, b)
	}
	time.Sleep(1500 * time.Millisecond) // let the agent redraw
}

func recordAgent(t *testing.T, agent, out string) {
	home := t.TempDir()
	r := &recorder{t: t, home: home, agent: agent, out: out, socket: pane.NewTmuxServer(home, nil).Socket}
	r.env = append(os.Environ(), "CICY_HOME="+home, "PATH="+cliDir+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL="+fakeURL, "ANTHROPIC_API_KEY=sk-ant-cicy-record-0123456789",
		"OPENAI_BASE_URL="+fakeURL+"/v1", "OPENAI_API_KEY=sk-cicy-record")
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "shutdown")
		cmd.Env = r.env
		_ = cmd.Run()
		_ = exec.Command("tmux", "-L", r.socket, "kill-server").Run()
	})
	model := []string{"--model", "fake-model"}
	if agent == "claude" {
		model = nil
	}
	start := 90 * time.Second
	// A pane that may do anything: idle and busy screens.
	id := strings.TrimSpace(r.run(append([]string{"create", "rec", "--type", agent, "--allow-all"}, model...)...))
	r.waitState(id, "idle", start)
	time.Sleep(2 * time.Second)
	for _, size := range [][2]int{{120, 40}, {80, 24}, {200, 50}} {
		r.resize(id, size[0], size[1])
		tag := fmt.Sprintf("%dx%d", size[0], size[1])
		r.save(id, "idle", "fresh-"+tag)
		// A long model turn: the thinking/working screen.
		r.run("send", id, "think about it [[delay=7]]")
		time.Sleep(2 * time.Second)
		r.save(id, "busy", "thinking-"+tag+"-a")
		time.Sleep(2500 * time.Millisecond)
		r.save(id, "busy", "thinking-"+tag+"-b")
		r.waitState(id, "idle", 60*time.Second)
		time.Sleep(1500 * time.Millisecond)
		r.save(id, "idle", "answered-"+tag)
		// A slow shell command: the tool-running screen.
		r.run("send", id, "run it [[shell=sleep 6; echo slept]]")
		time.Sleep(3 * time.Second)
		r.save(id, "busy", "tool-"+tag)
		r.waitState(id, "idle", 60*time.Second)
		time.Sleep(1500 * time.Millisecond)
		r.save(id, "idle", "after-tool-"+tag)
	}
	r.run("kill", id)
	// A pane that asks first: the permission screens.
	id = strings.TrimSpace(r.run(append([]string{"create", "ask", "--type", agent}, model...)...))
	r.waitState(id, "idle", start)
	ask := "make it [[shell=echo x > asked.txt]]"
	if agent == "codex" {
		ask = `make it [[tool=exec_command {"cmd":"touch asked.txt","sandbox_permissions":"require_escalated","justification":"needs it"}]]`
	}
	for i, size := range [][2]int{{120, 40}, {80, 24}, {200, 50}} {
		r.resize(id, size[0], size[1])
		tag := fmt.Sprintf("%dx%d", size[0], size[1])
		if i == 0 {
			r.run("send", id, ask)
			r.waitState(id, "waiting", 60*time.Second)
			time.Sleep(1500 * time.Millisecond)
		}
		r.save(id, "waiting", "permission-"+tag)
	}
}
