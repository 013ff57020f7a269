package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/schema/pgtest"
)

// node is one supervisor of a test cluster.
type node struct {
	name string
	home Home
	c    *api.Client
	addr string
	stop func() error
}

// startNode serves a node of the cluster on db, its cluster API on a free
// loopback port.
// (env: NAME=value overriding this process's environment for it.)
func startNode(t testing.TB, db, name string, env ...string) *node {
	t.Helper()
	return startNodeWith(t, db, name, Listen{Addr: "127.0.0.1:0", Token: testClusterToken}, env...)
}

// startNodeWith is startNode with its cluster API's settings.
func startNodeWith(t testing.TB, db, name string, l Listen, env ...string) *node {
	t.Helper()
	cfg := Config{DB: db, Node: name, Listen: l}
	if len(env) > 0 {
		cfg.Getenv = envOverlay(nil, env...)
	}
	return startNodeConfig(t, cfg)
}

// startNodeConfig serves a node of the cluster with cfg (its DB, Node and
// Listen set), in a home of its own.
func startNodeConfig(t testing.TB, cfg Config) *node {
	t.Helper()
	name := cfg.Node
	h := Home{Root: filepath.Join(t.TempDir(), name)}
	c, stop := serveUntil(t, h, cfg)
	if c == nil {
		t.Fatalf("node %s: %v", name, stop())
	}
	hl, err := c.Health(context.Background())
	if err != nil || hl.Node != name || hl.Cluster == "" {
		t.Fatalf("node %s's health: %+v, %v", name, hl, err)
	}
	return &node{name: name, home: h, c: c, addr: hl.Cluster, stop: stop}
}

// clusterEnv is the scripted model for every node (they run in this
// process) and a private HOME, set in this process's environment.
func clusterEnv(t testing.TB) string {
	t.Helper()
	db, env := privateClusterEnv(t)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return db
}

// privateClusterEnv is clusterEnv's database and variables, for a test
// that hands them to its nodes (startNode, spawnNode) and so can run in
// parallel.
func privateClusterEnv(t testing.TB) (db string, env []string) {
	t.Helper()
	db = pgtest.Need(t).NewDB(t)
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(benchRules), 0o644); err != nil {
		t.Fatal(err)
	}
	return db, []string{"HOME=" + t.TempDir(), "CICY_SCRIPT=" + rules}
}

// envOverlay reads env (NAME=value) first, then base (os.Getenv when nil).
func envOverlay(base func(string) string, env ...string) func(string) string {
	if base == nil {
		base = os.Getenv
	}
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return base(k)
	}
}

// waitPanes polls n's ls until ok holds of it.
func waitPanes(t *testing.T, n *node, what string, ok func(map[string]api.PaneInfo) bool) map[string]api.PaneInfo {
	t.Helper()
	var last map[string]api.PaneInfo
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ps, err := n.c.List(context.Background())
		if err != nil {
			t.Fatalf("ls on node %s: %v", n.name, err)
		}
		last = map[string]api.PaneInfo{}
		for _, p := range ps {
			last[p.ID] = p
		}
		if ok(last) {
			return last
		}
	}
	t.Fatalf("node %s: %s: never; ls shows %+v", n.name, what, last)
	return nil
}

// notifications counts the 🔔 lines of a task in a cicy pane's history.
func notifications(t *testing.T, workspace string, task int64) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cicy.HistoryDir(workspace), "current.json"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var cur cicy.Current
	if err := json.Unmarshal(b, &cur); err != nil {
		t.Fatal(err)
	}
	n := 0
	mark := fmt.Sprintf("task %d → ", task)
	for _, m := range cur.Messages {
		for _, bl := range m.Content {
			if m.Role == "user" && strings.HasPrefix(bl.Text, "🔔 [") && strings.Contains(bl.Text, mark) {
				n++
			}
		}
	}
	return n
}

// waitTold waits until the master's history holds the task's notification
// and the master is idle again, and returns how many it holds.
func waitTold(t *testing.T, n *node, master string, task int64) int {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ti, err := n.c.Task(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		p, err := n.c.Get(ctx, master)
		if err != nil {
			t.Fatal(err)
		}
		if ti.NotifiedAt != nil && p.State == "idle" {
			if got := notifications(t, p.Workspace, task); got > 0 {
				return got
			}
		}
	}
	t.Fatalf("the master %s was never told of task %d", master, task)
	return 0
}

// TestClusterTwoNodes: two supervisors on one database are one team. A
// master on node a dispatches to a cicy worker and a shell worker on node
// b; b delivers and settles, a's master is told exactly once each. Each
// node lists the other's panes with their node; commands on the other
// node's panes are forwarded (send, screen, kill); attach says where to
// run it; both nodes' status agree; a node that left shows its panes
// unreachable.
func TestClusterTwoNodes(t *testing.T) {
	db := clusterEnv(t)
	ctx := context.Background()
	a, b := startNode(t, db, "a"), startNode(t, db, "b")

	boss := mustCreate(t, a.c, api.CreateRequest{Title: "boss", Type: "cicy", Provider: "script", Role: "master"})
	cw := mustCreate(t, b.c, api.CreateRequest{Title: "cw", Type: "cicy", Provider: "script"})
	// Created through a, on b; its master named: a master on another node.
	sw := mustCreate(t, a.c, api.CreateRequest{Title: "sw", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}, Master: boss.ID, Node: "b"})
	if _, err := a.c.Create(ctx, api.CreateRequest{Title: "nowhere", Type: "shell", Command: []string{"true"}, Node: "zz"}); err == nil || !strings.Contains(err.Error(), "no such node") {
		t.Fatalf("create on a node that does not exist: %v", err)
	}
	onB := func(ps map[string]api.PaneInfo) bool {
		return ps[cw.ID].Node == "b" && ps[cw.ID].State == "idle" && ps[sw.ID].Node == "b" && ps[sw.ID].State == "idle" && ps[boss.ID].Node == "a"
	}
	waitPanes(t, a, "b's panes live on a", onB)
	waitPanes(t, b, "a's master live on b", onB)

	crossNodeTasks(t, a, b, boss.ID, cw.ID, sw.ID)
	forwarded(t, a, cw.ID, sw.ID)

	// Both nodes see one team.
	agree(t, a, b)

	if err := a.c.Kill(ctx, sw.ID); err != nil {
		t.Fatalf("kill of b's pane from a: %v", err)
	}
	waitPanes(t, b, "the killed pane gone on b", func(ps map[string]api.PaneInfo) bool { _, ok := ps[sw.ID]; return !ok })
	waitPanes(t, a, "the killed pane gone on a", func(ps map[string]api.PaneInfo) bool { _, ok := ps[sw.ID]; return !ok })

	nodesAre(t, a, map[string]string{"a": api.NodeUp, "b": api.NodeUp})

	// b leaves: its lease ends at once and a shows its pane unreachable.
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	nodesAre(t, a, map[string]string{"a": api.NodeUp, "b": api.NodeLapsed})
	ps := waitPanes(t, a, "b's pane unreachable", func(ps map[string]api.PaneInfo) bool { return ps[cw.ID].State == "unreachable" })
	if r := ps[cw.ID].Reason; !strings.Contains(r, "node b") {
		t.Errorf("the unreachable pane's reason: %q", r)
	}
	if _, err := a.c.Screen(ctx, cw.ID, 0); err == nil || !strings.Contains(err.Error(), "node b") {
		t.Errorf("screen of a pane of a node that left: %v; want a clear error", err)
	}
}

// TestClusterTLS: nodes whose cluster API speaks TLS (one certificate for
// both, as a small cluster has it) follow and forward to each other over
// it, trusting their own certificate.
func TestClusterTLS(t *testing.T) {
	db := clusterEnv(t)
	cert, key, _ := selfSigned(t)
	l := Listen{Addr: "127.0.0.1:0", Token: testClusterToken, CertFile: cert, KeyFile: key}
	a, b := startNodeWith(t, db, "a", l), startNodeWith(t, db, "b", l)
	sw := mustCreate(t, b.c, api.CreateRequest{Title: "sw", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	waitPanes(t, a, "b's pane live on a over TLS", func(ps map[string]api.PaneInfo) bool { return ps[sw.ID].State == "idle" })
	if _, err := a.c.Send(context.Background(), sw.ID, api.SendRequest{Text: "echo over-tls"}); err != nil {
		t.Fatalf("send forwarded over TLS: %v", err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		sc, err := a.c.Screen(ctx, sw.ID, 0)
		if err != nil {
			t.Fatalf("screen forwarded over TLS: %v", err)
		}
		if strings.Count(sc.Screen, "over-tls") >= 2 { // the command and its output
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's screen seen from a: %q", sc.Screen)
		}
	}
}

// nodesAre waits until n's nodes have the states of want, n itself
// first and marked.
func nodesAre(t *testing.T, n *node, want map[string]string) {
	t.Helper()
	var ns []api.NodeInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if ns, err = n.c.Nodes(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, ni := range ns {
			got[ni.Name] = ni.State
		}
		if fmt.Sprint(got) == fmt.Sprint(want) && ns[0].Name == n.name && ns[0].Self {
			return
		}
	}
	t.Fatalf("node %s's nodes: %+v; want the states %v", n.name, ns, want)
}

// agree waits until both nodes' status documents are the same.
func agree(t *testing.T, a, b *node) {
	t.Helper()
	var ja, jb []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		sa, err := a.c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ja, _ = json.Marshal(sa)
		jb, _ = json.Marshal(sb)
		if string(ja) == string(jb) {
			return
		}
	}
	t.Fatalf("the nodes' status differ:\na: %s\nb: %s", ja, jb)
}

// crossNodeTasks: a task dispatched on a to b's cicy worker (its master is
// the only master, on a) and one dispatched on b from a's master to b's
// shell worker both end done, and a's master is told of each once.
func crossNodeTasks(t *testing.T, a, b *node, boss, cw, sw string) {
	t.Helper()
	ctx := context.Background()
	t1, err := a.c.Dispatch(ctx, api.DispatchRequest{To: cw, Text: "summarise the logs"})
	if err != nil {
		t.Fatal(err)
	}
	if t1.From != boss || t1.ToNode != "b" || t1.FromNode != "a" {
		t.Fatalf("task across nodes: %+v", t1)
	}
	if got, err := a.c.WaitTask(ctx, t1.ID, 30*time.Second); err != nil || got.Status != "done" || got.Result != fmt.Sprintf("done %d", t1.ID) {
		t.Fatalf("cicy→cicy across nodes, waited on a: %+v, %v", got, err)
	}
	// Dispatched on b, from a's master, to b's shell worker.
	t2, err := b.c.Dispatch(ctx, api.DispatchRequest{From: boss, To: sw, Text: "echo cross-node-marker"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.c.WaitTask(ctx, t2.ID, 30*time.Second); err != nil || got.Status != "done" {
		t.Fatalf("cicy→shell across nodes: %+v, %v", got, err)
	}
	for _, id := range []int64{t1.ID, t2.ID} {
		if n := waitTold(t, a, boss, id); n != 1 {
			t.Errorf("the master on a was told of task %d %d times, want once", id, n)
		}
	}
}

// forwarded: a's commands on b's panes reach b — screen, send, memory,
// the preview stream — and attach names the command to run on b.
func forwarded(t *testing.T, a *node, cw, sw string) {
	t.Helper()
	ctx := context.Background()
	sc, err := a.c.Screen(ctx, sw, 0)
	if err != nil || !strings.Contains(sc.Screen, "cross-node-marker") {
		t.Fatalf("screen of b's pane from a: %+v, %v", sc, err)
	}
	res, err := a.c.Send(ctx, cw, api.SendRequest{Text: "turn fwd", Wait: true, Timeout: 30})
	if err != nil || res == nil || res.Answer != "answer fwd" {
		t.Fatalf("send to b's cicy pane from a: %+v, %v", res, err)
	}
	if ml, err := a.c.Memories(ctx, cw); err != nil || ml.Pane != cw || !strings.Contains(ml.Dir, "/b/") {
		t.Fatalf("memory of b's cicy pane from a: %+v, %v", ml, err)
	}
	pv, err := a.c.Preview(ctx, sw, 3)
	if err != nil {
		t.Fatalf("preview of b's pane from a: %v", err)
	}
	var first api.ScreenResponse
	if err := json.NewDecoder(pv).Decode(&first); err != nil || first.ID != sw {
		t.Fatalf("preview of b's pane from a: %+v, %v", first, err)
	}
	pv.Close()
	_, err = a.c.Attach(ctx, sw, 24, 80)
	if err == nil || !strings.Contains(err.Error(), "runs on node b") || !strings.Contains(err.Error(), "attach "+sw) {
		t.Fatalf("attach on a to b's pane: %v; want the command to run on b", err)
	}
}
