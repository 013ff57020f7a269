package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/fakellm"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor"
	"github.com/cicy-ai/cicy-agent/supervisor/cliagent"
)

// binDir holds the real cicy-agent binary, built once by TestMain, so the
// scripts drive exactly what users run, autostarted daemon included. It is
// built without the race detector, even when the tests have it: the
// supervisor's code runs under the detector in its own packages' tests
// (supervisor, gateway, pane, …, in process), while here every client
// command, hook and daemon would pay its cost (most of this package's CPU)
// and a daemon's race report would only reach its log.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cicy-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "cicy-agent"), ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cicy-agent:", err)
		return 1
	}
	binDir = dir
	// The real CLI agents, if installed (make clis), and a fake model
	// server they all talk to.
	cliDir = os.Getenv("CICY_CLI_DIR")
	if cliDir == "" {
		if h, err := os.UserHomeDir(); err == nil {
			cliDir = filepath.Join(h, ".cache", "cicy-agent", "clis")
		}
	}
	cliDir = filepath.Join(cliDir, "node_modules", ".bin")
	if !haveCLIs() && os.Getenv("CICY_REQUIRE_CLIS") == "1" {
		fmt.Fprintf(os.Stderr, "CICY_REQUIRE_CLIS=1 but %s are not all in %s (run make clis)\n", strings.Join(cliagent.Names(), ", "), cliDir)
		return 1
	}
	srv, err := fakellm.Start("127.0.0.1:0", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the fake model server:", err)
		return 1
	}
	defer srv.Close()
	fakeURL, fakeSrv = srv.URL, srv
	return m.Run()
}

var (
	cliDir, fakeURL string
	fakeSrv         *fakellm.Server
)

// haveCLIs reports whether the real CLI agents, every one the registry
// has, are installed.
func haveCLIs() bool {
	for _, name := range cliagent.Names() {
		k, _ := cliagent.Lookup(name)
		if _, err := os.Stat(filepath.Join(cliDir, k.Bin)); err != nil {
			return false
		}
	}
	return true
}

func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup:               setupScript,
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "clis":
				return haveCLIs(), nil
			case "pg": // PostgreSQL's server programs (Debian's postgresql)
				found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
				return len(found) > 0, nil
			case "tmpfs": // root, allowed to mount a tmpfs
				return canMountTmpfs(), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":           cmdExits,
			"oneline":         cmdOneLine,
			"waitscreen":      cmdWaitScreen,
			"waitstate":       cmdWaitState,
			"killsupervisor":  cmdKillSupervisor,
			"reboot":          cmdReboot,
			"filemode":        cmdFileMode,
			"nopaneprocesses": cmdNoPaneProcesses,
			"waitsocket":      cmdWaitSocket,
			"waitfile":        cmdWaitFile,
			"noprocess":       cmdNoProcess,
			"waitout":         cmdWaitOut,
			"memtail":         cmdMemTail,
			"mkfile":          cmdMkFile,
			"waitgrep":        cmdWaitGrep,
			"taskorder":       cmdTaskOrder,
			"waitreaped":      cmdWaitReaped,
			"noargs":          cmdNoArgs,
			"paneenv":         cmdPaneEnv,
			"nofilewith":      cmdNoFileWith,
			"morecalls":       cmdMoreCalls,
			"fakesaw":         cmdFakeSaw,
			"tinyhome":        cmdTinyHome,
			"telegram":        cmdTelegram(t),
			"tgpress":         cmdTgPress,
			"tganswer":        cmdTgAnswer,
		},
	})
}

// setupScript gives each script its own CICY_HOME, the binary on PATH, a
// random token, and a deferred shutdown so no supervisor outlives it.
func setupScript(env *testscript.Env) error {
	home := filepath.Join(env.WorkDir, "home")
	env.Setenv("CICY_HOME", home)
	env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
	env.Setenv("CICYBIN", binDir)
	env.Setenv("CLIBIN", cliDir)
	env.Setenv("FAKELLM", fakeURL)
	env.Setenv("TOKEN", fmt.Sprintf("tok%d", rand.Int64()))
	if ex, err := filepath.Abs("../../examples"); err == nil {
		env.Setenv("EXAMPLES", ex)
	}
	if sc, err := filepath.Abs("../../scripts"); err == nil {
		env.Setenv("SCRIPTS", sc)
	}
	env.Setenv("ESCTITLE", "bad\x1b[31mtitle")
	env.Setenv("BIDITITLE", "evil\u202egnp.exe")
	env.Setenv("ZWTITLE", "ali\u200bce")
	env.Defer(func() {
		// A failed script (a command that failed, not only a wait that
		// timed out) leaves what it saw in the test's log.
		if t, ok := env.T().(interface {
			Failed() bool
			Logf(string, ...any)
		}); ok && t.Failed() {
			dumpHome(t.Logf, home)
		}
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "--home", home, "shutdown")
		cmd.Env = os.Environ()
		_ = cmd.Run()
		if out := os.Getenv("CICY_RESULT_SOURCES"); out != "" {
			logSources(out, env.WorkDir, home)
		}
		// tmux panes outlive the supervisor by design: end their server,
		// and whatever a pane started that outlives its SIGHUP (opencode).
		// (KillServer ends their cgroups and removes the socket too.)
		_ = pane.NewTmuxServer(home, nil).KillServer()
		for _, pid := range paneProcesses(home) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// And whatever still runs in this script's folder (a tool's
		// processes a failing test left behind).
		for _, pid := range workProcesses(env.WorkDir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	env.Setenv("TMUXSOCK", pane.NewTmuxServer(home, nil).Socket)
	return nil
}

// logSources appends, for the BENCHMARKS.md measure of where CLI workers'
// task results come from, one line per finished task of a CLI agent in
// home: the script, the agent, the status and the source.
func logSources(out, work, home string) {
	ctx := context.Background()
	db := filepath.Join(home, "db", "cicy.db")
	if _, err := os.Stat(db); err != nil {
		return
	}
	st, err := schema.Open(ctx, db)
	if err != nil {
		return
	}
	defer st.Close()
	panes, _ := st.ListPanes(ctx)
	tasks, _ := st.ListTasks(ctx, "")
	types := map[string]string{}
	for _, p := range panes {
		types[p.ID] = p.Type
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	for _, t := range tasks {
		if _, cli := cliagent.Lookup(types[t.To]); cli && (t.Status == api.TaskDone || t.Status == api.TaskFailed) {
			fmt.Fprintf(f, "%s\t%s\t%s\t%s\n", filepath.Base(work), types[t.To], t.Status, t.Source)
		}
	}
}

// exits N cmd args… runs the command and checks its exit status is N.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits <status> <command> [args…]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("run %s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d\nstderr: %s", strings.Join(args[1:], " "), got, want, ts.ReadFile("stderr"))
	}
}

// oneline checks the last command's stderr is exactly one line.
func cmdOneLine(ts *testscript.TestScript, neg bool, args []string) {
	s := ts.ReadFile("stderr")
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || strings.TrimSpace(s) == "" {
		ts.Fatalf("stderr is not one line: %q", s)
	}
}

const pollDeadline = 20 * time.Second

// pollFor runs cicy-agent with args until the output satisfies ok, up to
// the deadline d.
func pollFor(ts *testscript.TestScript, d time.Duration, what string, ok func(string) bool, args ...string) {
	deadline := time.Now().Add(d)
	var last string
	for {
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), args...)
		cmd.Env = append(os.Environ(), "CICY_HOME="+ts.Getenv("CICY_HOME"))
		out, err := cmd.Output()
		last = string(out)
		if err == nil && ok(last) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("timed out after %s waiting for %s; last output:\n%s", d, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dumpHome logs what a person would look at when a wait times out or a
// script fails: the panes, each pane's screen and the end of the
// supervisor's log (a CI run on another machine leaves nothing else to
// read).
func dumpHome(logf func(string, ...any), home string) {
	run := func(args ...string) string {
		cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), append([]string{"--home", home}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s(%v)", out, err)
		}
		return string(out)
	}
	ls := run("ls")
	logf("--- cicy-agent ls\n%s", ls)
	for _, l := range strings.Split(ls, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "w-") {
			logf("--- screen %s\n%s", f[0], run("screen", f[0]))
		}
	}
	if b, err := os.ReadFile(filepath.Join(home, "logs", "supervisor.log")); err == nil {
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		logf("--- supervisor.log (end)\n%s", strings.Join(lines, "\n"))
	}
}

// waitscreen PANE REGEX waits until a line of the pane's screen matches
// REGEX entirely.
func cmdWaitScreen(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: waitscreen <pane> <regex>")
	}
	re := regexp.MustCompile("^(?:" + os.Expand(args[1], ts.Getenv) + ")$")
	err := pollSupervisor(ts.MkAbs(ts.Getenv("CICY_HOME")), pollDeadline, "a screen line matching "+re.String(), func(ctx context.Context, c *api.Client) (bool, string, error) {
		sc, err := c.Screen(ctx, args[0], 0)
		return slices.ContainsFunc(strings.Split(sc.Screen, "\n"), func(l string) bool { return re.MatchString(strings.TrimRight(l, " ")) }) != neg, "screen:\n" + sc.Screen, err
	})
	if err != nil {
		ts.Fatalf("%v", err)
	}
}

// waitstate PANE STATE [SECONDS] waits until the supervisor shows the
// pane in STATE (up to SECONDS, default the poll deadline: a real CLI
// agent can take longer to start on a loaded machine).
func cmdWaitState(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 && len(args) != 3 {
		ts.Fatalf("usage: waitstate <pane> <state> [seconds]")
	}
	d := pollDeadline
	if len(args) == 3 {
		n, err := strconv.Atoi(args[2])
		if err != nil {
			ts.Fatalf("waitstate: bad seconds %q", args[2])
		}
		d = time.Duration(n) * time.Second
	}
	if err := awaitPaneState(ts.MkAbs(ts.Getenv("CICY_HOME")), args[0], args[1], d); err != nil {
		ts.Fatalf("%v", err)
	}
}

// awaitPaneState waits until pane id of home's supervisor is in state
// want, for up to d (see pollSupervisor).
func awaitPaneState(home, id, want string, d time.Duration) error {
	return pollSupervisor(home, d, id+" in state "+want, func(ctx context.Context, c *api.Client) (bool, string, error) {
		p, err := c.Get(ctx, id)
		return p.State == want, p.State + " (" + p.Reason + ")", err
	})
}

// pollSupervisor asks the supervisor of home, from this process over its
// socket, every 50 ms until look says done, for up to d; the error tells
// what it last saw. A poll that ran `cicy-agent ls --json` every 50 ms
// cost a process start each, about 45 ms of CPU: the waits of a run took
// a fifth of the machine from the agents they waited for.
func pollSupervisor(home string, d time.Duration, what string, look func(context.Context, *api.Client) (done bool, seen string, err error)) error {
	c := api.NewClient(supervisor.Home{Root: home})
	last := "no answer yet"
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done, seen, err := look(ctx, c)
		cancel()
		switch {
		case err != nil:
			last = err.Error()
		case done:
			return nil
		default:
			last = seen
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s; last: %s", d, what, last)
		}
	}
}

// killsupervisor [-TERM] SIGKILLs (or SIGTERMs) the running supervisor and
// waits until it is gone (its lock is free); after SIGKILL its socket and
// pid file stay behind.
func cmdKillSupervisor(ts *testscript.TestScript, neg bool, args []string) {
	home := ts.Getenv("CICY_HOME")
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(filepath.Join(home, "run", "supervisor.pid"))))
	ts.Check(err)
	sig := syscall.SIGKILL
	if len(args) == 1 && args[0] == "-TERM" {
		sig = syscall.SIGTERM
	}
	ts.Check(syscall.Kill(pid, sig))
	f, err := os.OpenFile(filepath.Join(home, "run", "supervisor.lock"), os.O_RDWR, 0)
	ts.Check(err)
	defer f.Close()
	deadline := time.Now().Add(pollDeadline)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			ts.Fatalf("supervisor %d still holds its lock after SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// filemode PATH MODE checks a file's permission bits (octal).
func cmdFileMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: filemode <path> <octal mode>")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	if got := fi.Mode().Perm(); uint64(got) != want {
		ts.Fatalf("%s has mode %o, want %o", args[0], got, want)
	}
}

// paneProcesses are the pids of processes started in a pane of home
// (CICY_HOME of that home and a CICY_PANE_ID in their environment).
func paneProcesses(home string) []int {
	marker := "CICY_HOME=" + home + "\x00"
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), marker) && strings.Contains(string(b), "CICY_PANE_ID=") {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// workProcesses are the pids of live processes whose working directory is
// inside work.
func workProcesses(work string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cwd, err := os.Readlink(filepath.Join(d, "cwd"))
		if err != nil || (cwd != work && !strings.HasPrefix(cwd, work+"/")) || isZombie(d) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// nopaneprocesses checks that no process has CICY_HOME of this script in
// its environment any more (the panes died with their supervisor).
func cmdNoPaneProcesses(ts *testscript.TestScript, neg bool, args []string) {
	deadline := time.Now().Add(pollDeadline)
	for {
		alive := paneProcesses(ts.Getenv("CICY_HOME"))
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("pane processes still alive: %v", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reboot kills what a reboot of the machine would: the supervisor, its
// private tmux server and every pane process of the home (kill -9 each),
// and waits until all are gone.
func cmdReboot(ts *testscript.TestScript, neg bool, args []string) {
	ts.Check(rebootHome(ts.Getenv("CICY_HOME")))
}

// waitsocket waits until the home's socket exists (a supervisor started
// with serve & is listening), without starting one.
func cmdWaitSocket(ts *testscript.TestScript, neg bool, args []string) {
	sock := filepath.Join(ts.Getenv("CICY_HOME"), "run", "cicy.sock")
	deadline := time.Now().Add(pollDeadline)
	for {
		if _, err := os.Stat(sock); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no socket at %s after %s", sock, pollDeadline)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitreaped FILE waits until the process whose pid FILE holds is gone
// entirely: dead and reaped, not even a zombie.
func cmdWaitReaped(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitreaped <pid file>")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	deadline := time.Now().Add(pollDeadline)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("process %d is still there after %s", pid, pollDeadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitfile waits until a file exists.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfile <path>")
	}
	deadline := time.Now().Add(pollDeadline)
	for {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear within %s", args[0], pollDeadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noprocess waits until no live process whose working directory is inside
// this script's work folder has a command line containing the text.
func cmdNoProcess(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: noprocess <text>")
	}
	work := ts.Getenv("WORK")
	deadline := time.Now().Add(pollDeadline)
	for {
		var alive []string
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
			if err != nil || !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), args[0]) {
				continue
			}
			if cwd, err := os.Readlink(filepath.Join(d, "cwd")); err == nil && strings.HasPrefix(cwd, work) && !isZombie(d) {
				alive = append(alive, filepath.Base(d))
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("processes matching %q still alive: %v", args[0], alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isZombie(procDir string) bool {
	b, err := os.ReadFile(filepath.Join(procDir, "stat"))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// waitout [-t SECONDS] REGEX cicy-agent ARGS… runs the command until its
// stdout matches.
func cmdWaitOut(ts *testscript.TestScript, neg bool, args []string) {
	d := pollDeadline
	if len(args) > 2 && args[0] == "-t" {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("waitout: bad seconds %q", args[1])
		}
		d, args = time.Duration(n)*time.Second, args[2:]
	}
	if len(args) < 3 || args[1] != "cicy-agent" {
		ts.Fatalf("usage: waitout [-t seconds] <regex> cicy-agent <args…>")
	}
	re := regexp.MustCompile(args[0])
	pollFor(ts, d, "output matching "+args[0], re.MatchString, args[2:]...)
}

// fakesaw [-t seconds] REGEXP waits until the fake model server got a
// request whose body matches REGEXP (the CLI agents' requests; put the
// script's $TOKEN in it, the server is shared).
func cmdFakeSaw(ts *testscript.TestScript, neg bool, args []string) {
	d := pollDeadline
	if len(args) > 2 && args[0] == "-t" {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("fakesaw: bad seconds %q", args[1])
		}
		d, args = time.Duration(n)*time.Second, args[2:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakesaw [-t seconds] <regexp>")
	}
	re := regexp.MustCompile(args[0])
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		for _, r := range fakeSrv.Requests() {
			if re.Match(r.Body) {
				return
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the fake model server got no request matching %s in %s", args[0], d)
		}
	}
}

// memtail FILE TEXT checks a request body: the last block of the last
// user message is the <memories> block holding TEXT, with no cache mark,
// right after the block that carries the last breakpoint; and no memory
// text comes before that breakpoint.
func cmdMemTail(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: memtail <request.json> <text>")
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type         string          `json:"type"`
				Text         string          `json:"text"`
				CacheControl json.RawMessage `json:"cache_control"`
			} `json:"content"`
		} `json:"messages"`
	}
	body := ts.ReadFile(args[0])
	ts.Check(json.Unmarshal([]byte(body), &req))
	last := req.Messages[len(req.Messages)-1]
	n := len(last.Content)
	if last.Role != "user" || n < 2 {
		ts.Fatalf("last message is not a user message with a memories block: %+v", last)
	}
	mem, prev := last.Content[n-1], last.Content[n-2]
	if !strings.HasPrefix(mem.Text, "<memories>\n") || !strings.HasSuffix(mem.Text, "\n</memories>") || !strings.Contains(mem.Text, args[1]) {
		ts.Fatalf("last block is not the <memories> block with %q: %q", args[1], mem.Text)
	}
	if len(mem.CacheControl) > 0 || len(prev.CacheControl) == 0 {
		ts.Fatalf("the breakpoint is not on the block right before <memories>")
	}
	cut := strings.LastIndex(body, `"cache_control"`)
	if strings.Contains(body[:cut], "<memories>") {
		ts.Fatalf("memory bytes come before the last breakpoint")
	}
}

// mkfile PATH BYTES writes a file of that many bytes (lines of x).
func cmdMkFile(ts *testscript.TestScript, neg bool, args []string) {
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	line := strings.Repeat("x", 99) + "\n"
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Repeat(line, n/100+1)[:n]), 0o644))
}

// waitgrep N REGEX FILE waits until FILE holds exactly N matches of REGEX
// (fails if it ever holds more); with N+ at least N (a file that grows).
func cmdWaitGrep(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: waitgrep <count>[+] <regex> <file>")
	}
	atLeast := strings.HasSuffix(args[0], "+")
	want, err := strconv.Atoi(strings.TrimSuffix(args[0], "+"))
	ts.Check(err)
	re := regexp.MustCompile(args[1])
	deadline := time.Now().Add(pollDeadline)
	for {
		b, _ := os.ReadFile(ts.MkAbs(args[2]))
		got := len(re.FindAllIndex(b, -1))
		if atLeast && got > want {
			got = want
		}
		if got > want {
			ts.Fatalf("%s holds %d matches of %s, more than %d", args[2], got, args[1], want)
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s holds %d matches of %s after %s, want %d", args[2], got, args[1], pollDeadline, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// taskorder checks, from tasks --json, that each worker got its next task
// only after the one before it finished, in id order.
func cmdTaskOrder(ts *testscript.TestScript, neg bool, args []string) {
	cmd := exec.Command(filepath.Join(binDir, "cicy-agent"), "tasks", "--json")
	cmd.Env = append(os.Environ(), "CICY_HOME="+ts.Getenv("CICY_HOME"))
	out, err := cmd.Output()
	ts.Check(err)
	var tasks []struct {
		ID          int64      `json:"id"`
		To          string     `json:"to"`
		DeliveredAt *time.Time `json:"delivered_at"`
		FinishedAt  *time.Time `json:"finished_at"`
	}
	ts.Check(json.Unmarshal(out, &tasks))
	last := map[string]*time.Time{}
	for _, t := range tasks {
		if t.DeliveredAt == nil {
			continue
		}
		if prev, ok := last[t.To]; ok && (prev == nil || t.DeliveredAt.Before(*prev)) {
			ts.Fatalf("task %d was delivered to %s before its previous task finished", t.ID, t.To)
		}
		last[t.To] = t.FinishedAt
	}
}

// noargs VALUE checks that no process's arguments (/proc/<pid>/cmdline)
// hold VALUE.
func cmdNoArgs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: noargs <value>")
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), args[0]) {
			ts.Fatalf("%s holds the value: %q", p, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}

// paneenv [!] VALUE target… checks that the environment of every process
// of each target (a pane id, or tmux for the home's tmux server) holds
// VALUE, or with ! that none does. A target with no process fails.
func cmdPaneEnv(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: [!] paneenv <value> <pane|tmux>…")
	}
	home := ts.Getenv("CICY_HOME")
	for _, target := range args[1:] {
		var pids []int
		if target == "tmux" {
			out, err := exec.Command("tmux", "-L", pane.NewTmuxServer(home, nil).Socket, "display-message", "-p", "#{pid}").Output()
			ts.Check(err)
			pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
			ts.Check(err)
			pids = []int{pid}
		} else {
			for _, pid := range paneProcesses(home) {
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && strings.Contains(string(b), "\x00CICY_PANE_ID="+target+"\x00") {
					pids = append(pids, pid)
				}
			}
		}
		if len(pids) == 0 {
			ts.Fatalf("no process of %s", target)
		}
		for _, pid := range pids {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			ts.Check(err)
			if has := strings.Contains(string(b), args[0]); has == neg {
				ts.Fatalf("the environment of process %d of %s holds the value: %v (want %v)", pid, target, has, !neg)
			}
		}
	}
}

// nofilewith VALUE DIR checks that no file under DIR holds VALUE.
func cmdNoFileWith(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: nofilewith <value> <dir>")
	}
	n := 0
	err := filepath.WalkDir(ts.MkAbs(args[1]), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), args[0]) {
			ts.Fatalf("%s holds the value", path)
		}
		return nil
	})
	ts.Check(err)
	if n == 0 {
		ts.Fatalf("no file under %s", args[1])
	}
}

// morecalls before.json after.json pane… checks that each pane has more
// model calls in the second `usage --by pane --json` report than in the
// first.
func cmdMoreCalls(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: morecalls <before.json> <after.json> <pane>…")
	}
	calls := func(file string) map[string]int64 {
		var rep api.UsageReport
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(file)), &rep))
		out := map[string]int64{}
		for _, g := range rep.Groups {
			out[g.Key] = g.Calls
		}
		return out
	}
	before, after := calls(args[0]), calls(args[1])
	for _, p := range args[2:] {
		if after[p] <= before[p] {
			ts.Fatalf("pane %s: %d model calls before, %d after", p, before[p], after[p])
		}
	}
}
