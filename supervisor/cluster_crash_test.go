package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
)

// A node that must die by kill -9 runs in a process of its own: this test
// binary, started again with serveEnv set, serves one supervisor (see
// TestMain) until it is signalled or killed.
const serveEnv = "CICY_TEST_SERVE_NODE"

// serveNodeProcess is the child's main: a supervisor on CICY_HOME, its
// node, database and cluster API from the environment.
func serveNodeProcess() int {
	h := Home{Root: os.Getenv("CICY_HOME")}
	if err := h.Prepare(); err != nil {
		return 1
	}
	f, err := os.OpenFile(h.Log(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return 1
	}
	defer f.Close()
	l := logrus.New()
	l.SetOutput(f)
	l.SetLevel(logrus.DebugLevel)
	if prof := os.Getenv("CICY_TEST_CPUPROFILE"); prof != "" {
		// A benchmark's profile of the supervisor's process, one file a start.
		pf, err := os.Create(fmt.Sprintf("%s.%d", prof, os.Getpid()))
		if err != nil {
			return 1
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = Serve(ctx, Config{Home: h, Version: "test", Log: logrus.NewEntry(l), DB: os.Getenv("CICY_DB"), Node: os.Getenv("CICY_NODE"),
		Listen: Listen{Addr: os.Getenv("CICY_LISTEN"), Token: os.Getenv("CICY_CLUSTER_TOKEN")}})
	if err != nil {
		l.WithError(err).Error("serve")
		return 1
	}
	return 0
}

// procNode is a node in a process of its own.
type procNode struct {
	name string
	home Home
	c    *api.Client
	cmd  *exec.Cmd
}

// spawnNode starts node name on home in a child process and waits until
// it answers and has joined.
func spawnNode(t testing.TB, db, name string, home Home, env ...string) *procNode {
	t.Helper()
	return spawnServe(t, name, home, append([]string{"CICY_DB=" + db, "CICY_NODE=" + name,
		"CICY_LISTEN=127.0.0.1:0", "CICY_CLUSTER_TOKEN=" + testClusterToken}, env...)...)
}

// spawnServe starts a supervisor on home in a child process, with env
// added to this process's (none: a single supervisor on the home's
// SQLite), and waits until that process answers (as node name, if set).
func spawnServe(t testing.TB, name string, home Home, env ...string) *procNode {
	t.Helper()
	n := startServeProcess(t, name, home, env...)
	cmd := n.cmd
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if h, err := n.c.Health(context.Background()); err == nil && h.PID == cmd.Process.Pid && (name == "" || h.Node == name) {
			return n
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(home.Log())
			t.Fatalf("node %s did not start:\n%s", name, log)
		}
	}
}

// startServeProcess starts a supervisor on home in a child process, as
// spawnServe does, without waiting for it.
func startServeProcess(t testing.TB, name string, home Home, env ...string) *procNode {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), serveEnv+"=1", "CICY_HOME="+home.Root), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &procNode{name: name, home: home, c: api.NewClient(home), cmd: cmd}
	t.Cleanup(func() { n.kill9() })
	return n
}

// kill9 kills the node's process group at once, as a crash would.
func (n *procNode) kill9() {
	if n.cmd.Process == nil || n.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	_ = n.cmd.Wait()
}

func (n *procNode) node() *node { return &node{name: n.name, home: n.home, c: n.c} }

// TestClusterWorkerNodeKilled: the worker's node dies (kill -9) while its
// shell worker runs a task; the master's node shows it unreachable; when
// it is started again the task ends exactly once (the crash rules of a
// single supervisor: the PTY pane was lost, its task interrupted by the
// restart) and the master is told once; the pane comes back.
func TestClusterWorkerNodeKilled(t *testing.T) {
	t.Parallel()
	db, env := privateClusterEnv(t)
	ctx := context.Background()
	a := startNode(t, db, "a", env...)
	bHome := Home{Root: filepath.Join(t.TempDir(), "b")}
	b := spawnNode(t, db, "b", bHome, env...)

	boss := mustCreate(t, a.c, api.CreateRequest{Title: "boss", Type: "cicy", Provider: "script", Role: "master"})
	sw := mustCreate(t, b.c, api.CreateRequest{Title: "sw", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	waitPanes(t, a, "b's worker live on a", func(ps map[string]api.PaneInfo) bool { return ps[sw.ID].State == "idle" })
	task, err := a.c.Dispatch(ctx, api.DispatchRequest{To: sw.ID, Text: "sleep 600"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := a.c.Task(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task was never delivered: %+v", got)
		}
	}
	waitPanes(t, a, "the worker busy", func(ps map[string]api.PaneInfo) bool { return ps[sw.ID].State == "busy" })

	b.kill9()
	waitPanes(t, a, "the dead node's pane unreachable", func(ps map[string]api.PaneInfo) bool {
		return ps[sw.ID].State == "unreachable" && strings.Contains(ps[sw.ID].Reason, "node b")
	})
	if got, err := a.c.Task(ctx, task.ID); err != nil || got.Status != "delivered" {
		t.Fatalf("the task while its node is down: %+v, %v; want still delivered (only its node settles it)", got, err)
	}

	b = spawnNode(t, db, "b", bHome, env...)
	got, err := a.c.WaitTask(ctx, task.ID, 30*time.Second)
	if err != nil || got.Status != "failed" || !strings.Contains(got.Error, "ended with the supervisor") {
		t.Fatalf("the task after its node came back: %+v, %v; want failed, its worker ended with the supervisor", got, err)
	}
	if n := waitTold(t, a, boss.ID, task.ID); n != 1 {
		t.Errorf("the master was told %d times, want once", n)
	}
	waitPanes(t, a, "b's pane back (brought back by its restart policy, not unreachable)", func(ps map[string]api.PaneInfo) bool {
		return ps[sw.ID].State == "idle" && strings.HasPrefix(ps[sw.ID].CameBack, "restarted")
	})
	_ = b
}

// TestClusterMasterNodeKilled: the master's node dies (kill -9); a task
// its master dispatched ends on the worker's node meanwhile; when the
// master's node is started again the master is told, once.
func TestClusterMasterNodeKilled(t *testing.T) {
	db := clusterEnv(t)
	ctx := context.Background()
	aHome := Home{Root: filepath.Join(t.TempDir(), "a")}
	a := spawnNode(t, db, "a", aHome)
	b := startNode(t, db, "b")

	boss := mustCreate(t, a.c, api.CreateRequest{Title: "boss", Type: "cicy", Provider: "script", Role: "master"})
	sw := mustCreate(t, b.c, api.CreateRequest{Title: "sw", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	waitPanes(t, b, "a's master live on b", func(ps map[string]api.PaneInfo) bool { return ps[boss.ID].State == "idle" })

	a.kill9()
	waitPanes(t, b, "the dead node's master unreachable", func(ps map[string]api.PaneInfo) bool { return ps[boss.ID].State == "unreachable" })
	task, err := b.c.Dispatch(ctx, api.DispatchRequest{From: boss.ID, To: sw.ID, Text: "echo while-the-master-is-down"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.c.WaitTask(ctx, task.ID, 30*time.Second); err != nil || got.Status != "done" {
		t.Fatalf("the task with its master's node down: %+v, %v", got, err)
	}
	if got, _ := b.c.Task(ctx, task.ID); got.NotifiedAt != nil {
		t.Fatalf("the master was recorded told while its node was down: %+v", got)
	}

	a = spawnNode(t, db, "a", aHome)
	if n := waitTold(t, a.node(), boss.ID, task.ID); n != 1 {
		t.Errorf("the master was told %d times, want once", n)
	}
	// Still once after another restart of the master's node.
	a.kill9()
	a = spawnNode(t, db, "a", aHome)
	waitPanes(t, a.node(), "the master back", func(ps map[string]api.PaneInfo) bool { return ps[boss.ID].State == "idle" })
	p, err := a.c.Get(ctx, boss.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := notifications(t, p.Workspace, task.ID); n != 1 {
		t.Errorf("after another restart the master holds %d notifications, want 1", n)
	}
}

// TestClusterNodeStopped: a node whose process is stopped (SIGSTOP) keeps
// its lease and accepts connections but never answers. Its peers' health
// probes find it out: its panes turn unreachable while its lease still
// holds; a call forwarded to it fails after the first-byte bound instead
// of hanging; a stream forwarded to it ends; and a send that failed so is
// not typed once the node continues (the node drops a request read after
// its caller's deadline).
func TestClusterNodeStopped(t *testing.T) {
	t.Parallel()
	db, env := privateClusterEnv(t)
	ctx := context.Background()
	a := startNode(t, db, "a", env...)
	b := spawnNode(t, db, "b", Home{Root: filepath.Join(t.TempDir(), "b")}, env...)
	sw := mustCreate(t, b.c, api.CreateRequest{Title: "sw", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	waitPanes(t, a, "b's pane live on a", func(ps map[string]api.PaneInfo) bool { return ps[sw.ID].State == "idle" })
	if _, err := a.c.Screen(ctx, sw.ID, 0); err != nil {
		t.Fatalf("a forwarded screen: %v", err)
	}
	// A forwarded stream, open when the node stops.
	pctx, pcancel := context.WithTimeout(ctx, 90*time.Second)
	defer pcancel()
	ended := readForwardedPreview(t, pctx, a, sw.ID)
	stopNode(t, b)
	waitProbedUnreachable(t, a, sw.ID)
	// The forwarded stream ends too, without waiting for the lease.
	select {
	case <-ended:
		if pctx.Err() != nil {
			t.Fatal("the forwarded preview ran until the test's own deadline")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the forwarded preview of a stopped node's pane never ends")
	}
	checkSendsToStoppedNode(t, a, sw.ID)

	// The node continues: it reads the sends their caller gave up on, and
	// drops them.
	if err := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitLateSendsDropped(t, b, sw.ID)
	waitPanes(t, a, "b's pane live again on a", func(ps map[string]api.PaneInfo) bool { return ps[sw.ID].State == "idle" })
	if _, err := a.c.Send(ctx, sw.ID, api.SendRequest{Text: "echo after-$((6*7))"}); err != nil {
		t.Fatalf("a forwarded send after the node continued: %v", err)
	}
	waitOnlyLastSendTyped(t, b, sw.ID)
}

// readForwardedPreview opens a's forwarded preview of pane id (until
// ctx ends), reads its first screen, and reads the rest in the
// background: the channel gets how the stream ended.
func readForwardedPreview(t *testing.T, ctx context.Context, a *node, id string) <-chan error {
	t.Helper()
	preview, err := a.c.Preview(ctx, id, 5)
	if err != nil {
		t.Fatalf("a forwarded preview: %v", err)
	}
	t.Cleanup(func() { _ = preview.Close() })
	lines := bufio.NewReader(preview)
	if _, err := lines.ReadString('\n'); err != nil {
		t.Fatalf("the forwarded preview's first screen: %v", err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, lines)
		ended <- err
	}()
	return ended
}

// stopNode stops node n's process group (SIGSTOP) and waits until the
// node's process is stopped; it is continued when the test ends.
func stopNode(t *testing.T, n *procNode) {
	t.Helper()
	if err := syscall.Kill(-n.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGCONT) })
	// The signal takes effect asynchronously: wait until the node is stopped.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.cmd.Process.Pid))
		if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "T") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s never stopped: %s", n.name, stat)
		}
	}
}

// waitProbedUnreachable waits until a lists pane id, of the stopped node
// b, unreachable, and checks that a health probe found it out: the first
// unreachable reason is the probe's, not the lease's (30 s), and node b
// is unreachable, not lapsed.
func waitProbedUnreachable(t *testing.T, a *node, id string) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ps, err := a.c.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(ps, func(p api.PaneInfo) bool { return p.ID == id }); i >= 0 && ps[i].State == "unreachable" {
			if !strings.Contains(ps[i].Reason, "health probe") {
				t.Fatalf("the stopped node's pane turned unreachable for another reason than a health probe: %q", ps[i].Reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stopped node's pane is not unreachable: %+v", ps)
		}
	}
	ns, err := a.c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(ns, func(n api.NodeInfo) bool { return n.Name == "b" }); i < 0 || ns[i].State != api.NodeUnreachable || !strings.Contains(ns[i].Reason, "health probe") {
		t.Fatalf("the stopped node in nodes: %+v; want unreachable by a health probe", ns)
	}
}

// checkSendsToStoppedNode checks that sends a forwards to pane id of the
// stopped node b fail instead of hanging: a plain one after the
// first-byte bound, and one that waits (a long poll) once its node is
// lost and its deadline passed.
func checkSendsToStoppedNode(t *testing.T, a *node, id string) {
	t.Helper()
	// Far longer than the bound, so that a hang shows as this context's
	// deadline.
	sctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	_, err := a.c.Send(sctx, id, api.SendRequest{Text: "echo late-$((6*7))"})
	if err == nil || sctx.Err() != nil || !strings.Contains(err.Error(), "node b does not answer") {
		t.Fatalf("a forwarded send to a stopped node: %v (context: %v)", err, sctx.Err())
	}
	_, err = a.c.Send(sctx, id, api.SendRequest{Text: "echo waited-$((6*7))", Wait: true, Timeout: 30})
	if err == nil || sctx.Err() != nil || !strings.Contains(err.Error(), "node b was lost while the request was under way") {
		t.Fatalf("a forwarded send --wait to a stopped node: %v (context: %v)", err, sctx.Err())
	}
}

// waitLateSendsDropped waits until node b, continued, has logged that it
// dropped the two sends checkSendsToStoppedNode gave up on, failing if
// either is typed into pane id meanwhile.
func waitLateSendsDropped(t *testing.T, b *procNode, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		log, _ := os.ReadFile(b.home.Log())
		if strings.Count(string(log), "Dropped a request read after its caller had stopped waiting") >= 2 {
			return
		}
		if sc, err := b.c.Screen(context.Background(), id, 0); err == nil && typedLateSend(sc.Screen) {
			t.Fatalf("a send that failed by timeout was typed once the node continued:\n%s", sc.Screen)
		}
		if time.Now().After(deadline) {
			t.Fatalf("node b never dropped the two late sends; its log:\n%s", log)
		}
	}
}

// waitOnlyLastSendTyped waits until pane id on node b shows the send made
// after the node continued, and checks that neither late send shows.
func waitOnlyLastSendTyped(t *testing.T, b *procNode, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		sc, err := b.c.Screen(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sc.Screen, "after-42") {
			if typedLateSend(sc.Screen) {
				t.Fatalf("a send that failed by timeout was typed once the node continued:\n%s", sc.Screen)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the send after the node continued never showed:\n%s", sc.Screen)
		}
	}
}

// typedLateSend reports whether screen shows either send that
// checkSendsToStoppedNode gave up on.
func typedLateSend(screen string) bool {
	return strings.Contains(screen, "late-") || strings.Contains(screen, "waited-")
}
