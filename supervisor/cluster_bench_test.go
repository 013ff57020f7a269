package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
)

// BenchmarkClusterTaskLatency is BenchmarkTaskLatencyCicy across two nodes
// on one PostgreSQL: the master on node a, the worker on node b, the
// tasks dispatched on a. deliver (created → delivered) is a's insert, the
// database's note and b's claim; notify (finished → told) is b's update,
// the note and a's notification.
func BenchmarkClusterTaskLatency(b *testing.B) {
	db := clusterEnv(b)
	na, nb := startNode(b, db, "a"), startNode(b, db, "b")
	master := benchCreate(b, na.c, api.CreateRequest{Title: "lead", Type: "cicy", Role: "master", RoleTemplate: "coordinator", Provider: "script"})
	worker := benchCreate(b, nb.c, api.CreateRequest{Title: "eng", Type: "cicy", Role: "worker", RoleTemplate: "engineer", Provider: "script", Master: master})
	waitPaneIdle(b, na.c, worker) // a follows b's pane
	var lat taskLatencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runTasks(b, na.c, worker, benchTasks, func(j int) string { return fmt.Sprintf("job %d of round %d", j, i) }, &lat)
	}
	b.StopTimer()
	reportPercentiles(b, "deliver", lat.deliver)
	reportPercentiles(b, "notify", lat.notify)
	reportPercentiles(b, "run", lat.run)
}

// BenchmarkClusterFourNodes: four nodes on one PostgreSQL, 250 cicy panes
// each on the scripted model — a master and 249 workers. Each master
// dispatches 4 tasks to every worker of the next node (3,984 tasks, all
// across nodes), all at once. Nothing may be lost: every task done with
// its worker's answer, each master told of each of its tasks exactly once
// (counted in its history). Reports tasks/s from the first dispatch to the
// last notification, the spans' percentiles, and the process's memory
// (all four supervisors run in it).
func BenchmarkClusterFourNodes(b *testing.B) {
	const nodes, perNode, tasksEach = 4, 250, 4
	db := clusterEnv(b)
	ctx := context.Background()
	ns := make([]*node, nodes)
	for i := range ns {
		ns[i] = startNode(b, db, fmt.Sprintf("n%d", i))
	}
	masters := make([]string, nodes)
	workers := make([][]string, nodes)
	for i, n := range ns {
		masters[i] = benchCreate(b, n.c, api.CreateRequest{Title: fmt.Sprintf("lead%d", i), Type: "cicy", Role: "master", Provider: "script"})
		for w := 1; w < perNode; w++ {
			workers[i] = append(workers[i], benchCreate(b, n.c, api.CreateRequest{Title: fmt.Sprintf("n%d-w%d", i, w), Type: "cicy", Provider: "script", Master: masters[(i+nodes-1)%nodes]}))
		}
	}
	for _, n := range ns { // every node follows every pane
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			ps, err := n.c.List(ctx)
			if err != nil {
				b.Fatal(err)
			}
			idle := 0
			for _, p := range ps {
				if p.State == "idle" {
					idle++
				}
			}
			if idle == nodes*perNode {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("node %s sees %d of %d panes idle", n.name, idle, nodes*perNode)
			}
		}
	}
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ids []int64
		for i, n := range ns {
			wg.Add(1)
			go func() { // master i's node dispatches to the next node's workers
				defer wg.Done()
				for k := 0; k < tasksEach; k++ {
					for _, w := range workers[(i+1)%nodes] {
						t, err := n.c.Dispatch(ctx, api.DispatchRequest{From: masters[i], To: w, Text: fmt.Sprintf("job %d round %d", k, round)})
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						ids = append(ids, t.ID)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		tasks := waitAllTold(b, ns[0].c, ids)
		elapsed := time.Since(start)
		b.StopTimer()
		var lat taskLatencies
		for _, t := range tasks {
			if t.Status != "done" || t.Result != fmt.Sprintf("done %d", t.ID) {
				b.Fatalf("task %d: %s %q %q", t.ID, t.Status, t.Result, t.Error)
			}
			lat.deliver = append(lat.deliver, t.DeliveredAt.Sub(t.CreatedAt))
			lat.run = append(lat.run, t.FinishedAt.Sub(*t.DeliveredAt))
			lat.notify = append(lat.notify, t.NotifiedAt.Sub(*t.FinishedAt))
		}
		toldOnce(b, ns, masters, tasks)
		b.ReportMetric(float64(len(tasks))/elapsed.Seconds(), "tasks/s")
		reportPercentiles(b, "deliver", lat.deliver)
		reportPercentiles(b, "notify", lat.notify)
		b.StartTimer()
	}
	b.StopTimer()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(procStatusKiB("VmHWM"))/1024, "rss-peak-MiB")
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-live-MiB")
}

// waitAllTold polls until every task of ids has ended and its master was
// told, and returns them.
func waitAllTold(b *testing.B, c *api.Client, ids []int64) []api.TaskInfo {
	b.Helper()
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		all, err := c.Tasks(context.Background(), "")
		if err != nil {
			b.Fatal(err)
		}
		var got []api.TaskInfo
		for _, t := range all {
			if want[t.ID] && t.Ended() && t.NotifiedAt != nil {
				got = append(got, t)
			}
		}
		if len(got) == len(ids) {
			return got
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tasks ended and told after 10 minutes", len(got), len(ids))
		}
	}
}

// toldOnce checks that each master's history mentions each of its tasks'
// notifications exactly once.
func toldOnce(b *testing.B, ns []*node, masters []string, tasks []api.TaskInfo) {
	b.Helper()
	counts := map[int64]int{}
	for i, m := range masters {
		p, err := ns[i].c.Get(context.Background(), m)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(cicy.HistoryDir(p.Workspace), "current.json"))
		if err != nil {
			b.Fatal(err)
		}
		var cur cicy.Current
		if err := json.Unmarshal(raw, &cur); err != nil {
			b.Fatal(err)
		}
		for _, msg := range cur.Messages {
			for _, bl := range msg.Content {
				if msg.Role != "user" {
					continue
				}
				for _, line := range strings.Split(bl.Text, "\n") {
					var w string
					var id int64
					if _, err := fmt.Sscanf(line, "🔔 [%s task %d", &w, &id); err == nil {
						counts[id]++
					}
				}
			}
		}
	}
	for _, t := range tasks {
		if counts[t.ID] != 1 {
			b.Errorf("task %d: its master was told %d times", t.ID, counts[t.ID])
		}
	}
}

// BenchmarkClusterConvergence: how soon a pane created on node b shows on
// node a — from b's create answering to a's event stream carrying the
// pane (b's event stream to a's peer watcher, a's own stream to its
// client). 50 cicy panes on the scripted model, one after another.
func BenchmarkClusterConvergence(b *testing.B) {
	db := clusterEnv(b)
	na, nb := startNode(b, db, "a"), startNode(b, db, "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := na.c.TeamEvents(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	seen := make(chan string, 64)
	go func() {
		for {
			ev, err := st.Next()
			if err != nil {
				close(seen)
				return
			}
			if ev.Type == "pane" && ev.Pane.Node == "b" {
				seen <- ev.Pane.ID
			}
		}
	}()
	var lat []time.Duration
	for n := 0; b.Loop(); n++ {
		for i := 0; i < 50; i++ {
			id := benchCreate(b, nb.c, api.CreateRequest{Title: fmt.Sprintf("p%d-%d", n, i), Type: "cicy", Provider: "script"})
			created := time.Now()
			waitSeen(b, seen, id)
			lat = append(lat, time.Since(created))
		}
	}
	reportPercentiles(b, "converge", lat)
}

// waitSeen reads ids from seen until id comes.
func waitSeen(b *testing.B, seen <-chan string, id string) {
	b.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case got, ok := <-seen:
			if !ok {
				b.Fatal("node a's event stream ended")
			}
			if got == id {
				return
			}
		case <-timeout:
			b.Fatalf("pane %s never showed on node a", id)
		}
	}
}

// BenchmarkClusterNodeStopped: how soon a node whose process is stopped
// (SIGSTOP: its lease holds, its connections stay open and silent) shows
// its panes unreachable on another node — from the signal taking effect
// to node a's ls showing b's pane unreachable — over b.N stops, each
// followed by a SIGCONT and the pane live again (target: within 10 s; the
// peers' probes say 7 s at most).
func BenchmarkClusterNodeStopped(b *testing.B) {
	db, env := privateClusterEnv(b)
	ctx := context.Background()
	a := startNode(b, db, "a", env...)
	nb := spawnNode(b, db, "b", Home{Root: filepath.Join(b.TempDir(), "b")}, env...)
	sw := benchCreate(b, nb.c, api.CreateRequest{Title: "sw", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	pid := nb.cmd.Process.Pid
	b.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGCONT) })
	stateOnA := func() string {
		ps, err := a.c.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range ps {
			if p.ID == sw {
				return p.State
			}
		}
		return ""
	}
	await := func(what string, ok func() bool) {
		for deadline := time.Now().Add(90 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("never: %s", what)
			}
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		await("b's pane idle on a", func() bool { return stateOnA() == "idle" })
		// Stops at every phase of the 2 s probe (the first probe after a
		// reconnect is 2 s after it).
		time.Sleep(time.Duration(i%4) * 500 * time.Millisecond)
		if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
			b.Fatal(err)
		}
		await("node b stopped", func() bool {
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			_, rest, ok := strings.Cut(string(stat), ") ")
			return ok && strings.HasPrefix(rest, "T")
		})
		start := time.Now()
		await("b's pane unreachable on a", func() bool { return stateOnA() == "unreachable" })
		lat = append(lat, time.Since(start))
		if err := syscall.Kill(-pid, syscall.SIGCONT); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2].Seconds(), "unreachable-p50-s")
	b.ReportMetric(lat[len(lat)-1].Seconds(), "unreachable-max-s")
}
