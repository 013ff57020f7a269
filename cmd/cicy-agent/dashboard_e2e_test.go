package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cmd/cicy-agent/attach"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/topology"
)

// demoHome copies examples/ and returns a fresh home and the environment
// that runs the demo team on the scripted model. Everything the test
// starts is stopped at cleanup.
func demoHome(t *testing.T) (home, dir string, env []string) {
	t.Helper()
	if !pane.TmuxAvailable() {
		t.Skip("needs tmux")
	}
	dir = t.TempDir()
	if out, err := exec.Command("cp", "-r", "../../examples/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy examples: %v %s", err, out)
	}
	home = filepath.Join(dir, "home")
	env = append(os.Environ(), "CICY_HOME="+home, "CICY_PROVIDER=script", "CICY_SCRIPT="+filepath.Join(dir, "demo.script.yaml"),
		"HOME="+dir, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(func() { stopHome(home, env) })
	return home, dir, env
}

func runCicy(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("cicy-agent %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// testTmux is a private tmux server for a test's terminal.
type testTmux struct {
	t    *testing.T
	sock string
}

func newTestTmux(t *testing.T) *testTmux {
	tm := &testTmux{t: t, sock: fmt.Sprintf("cicy-test-%d", rand.Int64())}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tm.sock, "kill-server").Run() })
	return tm
}

func (tm *testTmux) run(args ...string) string {
	tm.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", tm.sock, "-f", "/dev/null"}, args...)...)
	cmd.Env = attach.WithoutTMUX(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (tm *testTmux) capture(target string) string {
	cmd := exec.Command("tmux", "-L", tm.sock, "capture-pane", "-p", "-t", target)
	out, _ := cmd.Output()
	return string(out)
}

// waitScreen polls the pane's screen until ok, and returns it.
func (tm *testTmux) waitScreen(target, what string, ok func(string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		if last = tm.capture(target); ok(last) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	tm.t.Fatalf("timed out waiting for %s; the screen:\n%s", what, last)
	return ""
}

var rowRe = regexp.MustCompile(`(?m)^[▸ ] (w-\d+)\s+\S+\s+\S+\s+\S+\s+(starting|idle|busy|waiting|exited|error)\b`)

// TestDashboardWithDemoTeam drives the real dashboard inside tmux while the
// offline demo team runs: the panes' states change on screen, the
// master's bar reaches its total, a pane is selected, attached and
// detached back; status --watch follows the same events.
func TestDashboardWithDemoTeam(t *testing.T) {
	t.Parallel()
	home, dir, env := demoHome(t)
	tm := newTestTmux(t)
	var args []string
	for _, kv := range []string{"CICY_HOME=" + home, "CICY_PROVIDER=script", "CICY_SCRIPT=" + filepath.Join(dir, "demo.script.yaml"), "HOME=" + dir} {
		args = append(args, "-e", kv)
	}
	tm.run(append(append([]string{"new-session", "-d", "-s", "dash", "-x", "80", "-y", "24"}, args...),
		filepath.Join(binDir, "cicy-agent"), "dashboard", "--bell=false")...)
	tm.waitScreen("dash", "the empty dashboard", func(s string) bool { return strings.Contains(s, "no panes yet") && strings.Contains(s, "● live") })

	// status --watch --json follows the same stream.
	watch := exec.Command(filepath.Join(binDir, "cicy-agent"), "status", "--watch", "--json")
	watch.Env = env
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		wmu      sync.Mutex
		watched  []topology.Status
		watchEnd = make(chan struct{})
	)
	go func() {
		defer close(watchEnd)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var st topology.Status
			if json.Unmarshal(sc.Bytes(), &st) == nil {
				wmu.Lock()
				watched = append(watched, st)
				wmu.Unlock()
			}
		}
	}()
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait(); <-watchEnd }()

	runCicy(t, env, "up", filepath.Join(dir, "demo.yaml"))
	seen := map[string]map[string]bool{}
	final := tm.waitScreen("dash", "the master's bar at 3/3 and all done", func(s string) bool {
		for _, m := range rowRe.FindAllStringSubmatch(s, -1) {
			if seen[m[1]] == nil {
				seen[m[1]] = map[string]bool{}
			}
			seen[m[1]][m[2]] = true
		}
		return strings.Contains(s, "] 3/3 done") && strings.Contains(s, "! w-1 lead — all 3 tasks done")
	})
	changed := 0
	for _, states := range seen {
		if len(states) > 1 {
			changed++
		}
	}
	if len(seen) != 4 || changed == 0 {
		t.Fatalf("states seen on screen per pane: %v; want 4 panes, some changing\n%s", seen, final)
	}
	if !strings.Contains(final, "████████████]") || strings.Contains(final, "░]") {
		t.Fatalf("the bar is not full at 3/3:\n%s", final)
	}

	// Select alice, attach to her chat, detach back.
	tm.run("send-keys", "-t", "dash", "j")
	tm.waitScreen("dash", "alice selected and previewed", func(s string) bool {
		return strings.Contains(s, "▸ w-2   alice") && strings.Contains(s, "── w-2 alice · idle · reply")
	})
	tm.run("send-keys", "-t", "dash", "Enter")
	tm.waitScreen("dash", "the chat attached", func(s string) bool { return strings.Contains(s, "attached to w-2; type a message") })
	tm.run("send-keys", "-t", "dash", "C-d")
	tm.waitScreen("dash", "the dashboard back after detaching", func(s string) bool {
		return strings.Contains(s, "detached from w-2") && strings.Contains(s, "▸ w-2   alice")
	})
	tm.run("send-keys", "-t", "dash", "q")
	deadline := time.Now().Add(10 * time.Second)
	for exec.Command("tmux", "-L", tm.sock, "has-session", "-t", "dash").Run() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("q did not end the dashboard:\n%s", tm.capture("dash"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A shell worker's task ends by its exit status, before its pane's
	// output has been quiet for the settle time: it turns idle soon after.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ls := runCicy(t, env, "ls")
		if strings.Count(ls, "idle") == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the team should keep running after the dashboard quits:\n%s", ls)
		}
	}

	wmu.Lock()
	defer wmu.Unlock()
	if len(watched) < 3 {
		t.Fatalf("status --watch printed %d documents", len(watched))
	}
	last := watched[len(watched)-1]
	if len(last.Masters) != 1 || last.Masters[0].Tasks.Done != 3 || last.Masters[0].Tasks.Total != 3 {
		t.Fatalf("status --watch's last document: %+v", last)
	}
	if len(last.NeedsYou) != 1 || last.NeedsYou[0].Kind != topology.NeedAllDone {
		t.Fatalf("status --watch's needs_you: %+v", last.NeedsYou)
	}
}

// TestView tiles the demo team in a tmux window, each tile attached;
// closing the view leaves the panes running.
func TestView(t *testing.T) {
	t.Parallel()
	_, dir, env := demoHome(t)
	runCicy(t, env, "up", filepath.Join(dir, "demo.yaml"), "--wait", "--timeout", "90s")
	tm := newTestTmux(t)
	var res viewResult
	if err := json.Unmarshal([]byte(runCicy(t, env, "view", "--tmux-socket", tm.sock, "--detach", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Panes, " ") != "w-1 w-2 w-3 w-4" || len(res.Skipped) != 0 {
		t.Fatalf("view: %+v", res)
	}
	titles := tm.run("list-panes", "-t", "="+res.Session, "-F", "#{pane_id} #{pane_title}")
	for _, want := range []string{"w-1 lead (cicy)", "w-2 alice (cicy)", "w-3 bob (cicy)", "w-4 bash1 (shell)"} {
		if !strings.Contains(titles, want) {
			t.Fatalf("no tile titled %q:\n%s", want, titles)
		}
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(titles), "\n") {
		ids = append(ids, strings.Fields(l)[0])
	}
	tm.waitScreen(ids[0], "the lead's chat in its tile", func(s string) bool { return strings.Contains(s, "attached to w-1") })
	tm.waitScreen(ids[3], "the shell's terminal in its tile", func(s string) bool { return strings.Contains(s, "sum of numbers.csv") || strings.Contains(s, "$") })
	// A second view replaces the first; with one pane named, one tile.
	if err := json.Unmarshal([]byte(runCicy(t, env, "view", "--tmux-socket", tm.sock, "--detach", "--json", "w-2")), &res); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(tm.run("list-panes", "-t", "="+res.Session)), "\n") + 1; n != 1 {
		t.Fatalf("view w-2 has %d tiles", n)
	}
	tm.run("kill-session", "-t", "="+res.Session)
	// The shell may print on the resizes the tiles caused (its tmux pane's
	// output is followed as it happens): it settles to idle again.
	deadline := time.Now().Add(15 * time.Second)
	for {
		ls := runCicy(t, env, "ls")
		if strings.Count(ls, "idle") == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closing the view stopped panes:\n%s", ls)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A view does not outlive its panes: `down` of the team ends it…
	view := func(args ...string) string {
		t.Helper()
		var res viewResult
		if err := json.Unmarshal([]byte(runCicy(t, env, append([]string{"view", "--tmux-socket", tm.sock, "--detach", "--json"}, args...)...)), &res); err != nil {
			t.Fatal(err)
		}
		tm.run("has-session", "-t", "="+res.Session)
		return res.Session
	}
	gone := func(session, after string) {
		t.Helper()
		if out, err := exec.Command("tmux", "-L", tm.sock, "has-session", "-t", "="+session).CombinedOutput(); err == nil {
			t.Fatalf("the view's session %s is still on the person's tmux server after %s: %s", session, after, out)
		}
	}
	session := view()
	runCicy(t, env, "down")
	gone(session, "down")
	// …and the supervisor's shutdown ends it, though its pane keeps running.
	runCicy(t, env, "create", "sh", "--type", "shell", "--", "bash", "--norc")
	session = view()
	runCicy(t, env, "shutdown")
	gone(session, "shutdown")
}
