package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema/pgtest"
)

// benchRules answers every request of the task and many-pane benchmarks at
// once: memory recognition finds nothing, a 🔔 notification gets "ok", a
// task gets "done <id>", a scripted turn "answer <tag>".
const benchRules = `rules:
  - match: {aux: memory}
    reply: {text: '{"memories":[]}'}
  - match: {aux: compact}
    reply: {text: 'Summary: a benchmark conversation.'}
  - match: {last_user: '🔔'}
    reply: {text: ok}
  - match: {last_user: 'task (\d+): '}
    reply: {text: 'done {{1}}'}
  - match: {last_user: '^turn (\S+)$'}
    reply: {text: 'answer {{1}}'}
  - match: {aux: '*'}
    reply: {text: ok}
`

// benchEnv gives the in-process supervisor a private HOME (so no shell
// reads the machine's profile) and the scripted model's rules.
func benchEnv(b *testing.B) {
	b.Helper()
	b.Setenv("HOME", b.TempDir())
	rules := filepath.Join(b.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(benchRules), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Setenv("CICY_SCRIPT", rules)
}

func benchCreate(b *testing.B, c *api.Client, req api.CreateRequest) string {
	b.Helper()
	p, err := c.Create(context.Background(), req)
	if err != nil {
		b.Fatalf("create %s: %v", req.Title, err)
	}
	return p.ID
}

func waitPaneIdle(b *testing.B, c *api.Client, id string) {
	b.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if pi, _ := c.Get(context.Background(), id); pi.State == "idle" {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("pane %s never idle", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// taskLatencies are the three spans of each task, from the API's times.
type taskLatencies struct{ deliver, run, notify []time.Duration }

// runTasks dispatches n tasks to worker one after another; each is waited
// for until done and until its master has been told.
func runTasks(b *testing.B, c *api.Client, worker string, n int, text func(i int) string, lat *taskLatencies) {
	b.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		t, err := c.Dispatch(ctx, api.DispatchRequest{To: worker, Text: text(i)})
		if err != nil {
			b.Fatalf("dispatch %d: %v", i, err)
		}
		done, err := c.WaitTask(ctx, t.ID, 30*time.Second)
		if err != nil {
			b.Fatalf("wait task %d: %v", t.ID, err)
		}
		if done.Status != "done" {
			b.Fatalf("task %d ended %s (%s), not done", t.ID, done.Status, done.Error)
		}
		for deadline := time.Now().Add(10 * time.Second); done.NotifiedAt == nil; {
			if time.Now().After(deadline) {
				b.Fatalf("task %d: the master was never told", t.ID)
			}
			time.Sleep(time.Millisecond)
			if done, err = c.Task(ctx, t.ID); err != nil {
				b.Fatal(err)
			}
		}
		if done.DeliveredAt == nil || done.FinishedAt == nil {
			b.Fatalf("task %d has no delivered_at or finished_at: %+v", t.ID, done)
		}
		lat.deliver = append(lat.deliver, done.DeliveredAt.Sub(done.CreatedAt))
		lat.run = append(lat.run, done.FinishedAt.Sub(*done.DeliveredAt))
		lat.notify = append(lat.notify, done.NotifiedAt.Sub(*done.FinishedAt))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// reportPercentiles reports p50 and p99 of lat (in ms) as <name>-p50-ms
// and <name>-p99-ms.
func reportPercentiles(b *testing.B, name string, lat []time.Duration) {
	b.Helper()
	s := slices.Clone(lat)
	slices.Sort(s)
	b.ReportMetric(ms(s[len(s)/2]), name+"-p50-ms")
	b.ReportMetric(ms(s[len(s)*99/100]), name+"-p99-ms")
}

const benchTasks = 200

// BenchmarkTaskLatencyCicy measures the task outbox with a cicy master and
// a cicy worker on the scripted model: 200 tasks one after another, each
// waited for until done and until the master has been told. deliver is
// delivered_at − created_at, notify notified_at − finished_at, run
// finished_at − delivered_at (the worker's turn).
func BenchmarkTaskLatencyCicy(b *testing.B) { eachDB(b, benchTaskLatencyCicy) }

// eachDB runs f as sub-benchmarks db=sqlite and db=postgres (the latter on
// the test binary's private PostgreSQL, skipped where there is none), each
// with a supervisor config naming its database.
func eachDB(b *testing.B, f func(b *testing.B, cfg Config)) {
	b.Run("db=sqlite", func(b *testing.B) { f(b, Config{}) })
	b.Run("db=postgres", func(b *testing.B) { f(b, Config{DB: pgtest.Need(b).NewDB(b)}) })
}

func benchTaskLatencyCicy(b *testing.B, cfg Config) {
	benchEnv(b)
	c := startServerWith(b, cfg)
	master := benchCreate(b, c, api.CreateRequest{Title: "lead", Type: "cicy", Role: "master", RoleTemplate: "coordinator", Provider: "script"})
	worker := benchCreate(b, c, api.CreateRequest{Title: "eng", Type: "cicy", Role: "worker", RoleTemplate: "engineer", Provider: "script", Master: master})
	waitPaneIdle(b, c, worker)
	var lat taskLatencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runTasks(b, c, worker, benchTasks, func(j int) string { return fmt.Sprintf("job %d of round %d", j, i) }, &lat)
	}
	b.StopTimer()
	reportPercentiles(b, "deliver", lat.deliver)
	reportPercentiles(b, "notify", lat.notify)
	reportPercentiles(b, "run", lat.run)
}

// BenchmarkTaskLatencyShell is BenchmarkTaskLatencyCicy with a shell
// worker (bash --norc --noprofile) under the default settle time (500 ms):
// the tasks are `echo t<i>`, done once the output was quiet for the settle
// time, so run (delivery → done) cannot be under 500 ms.
func BenchmarkTaskLatencyShell(b *testing.B) {
	benchEnv(b)
	c := startServer(b) // Config.Settle 0: the default 500 ms
	master := benchCreate(b, c, api.CreateRequest{Title: "lead", Type: "cicy", Role: "master", RoleTemplate: "coordinator", Provider: "script"})
	worker := benchCreate(b, c, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Role: "worker", Master: master, Command: []string{"bash", "--norc", "--noprofile"}})
	waitPaneIdle(b, c, worker)
	var lat taskLatencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runTasks(b, c, worker, benchTasks, func(j int) string { return fmt.Sprintf("echo t%d", i*benchTasks+j) }, &lat)
	}
	b.StopTimer()
	reportPercentiles(b, "deliver", lat.deliver)
	reportPercentiles(b, "notify", lat.notify)
	reportPercentiles(b, "run", lat.run)
}

// procStatusKiB reads a field of /proc/self/status (VmRSS, VmHWM) in KiB.
func procStatusKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

const (
	benchPanes = 100
	benchTurns = 10
)

// BenchmarkHundredCicyPanes runs 100 cicy panes (assistant template,
// scripted model) at once, each taking 10 turns by `send --wait` from its
// own goroutine. It reports turns per second, and the memory of the test
// process — which is the supervisor's plus the small client side, as the
// supervisor runs in this process: RSS (VmRSS) and Go heap in use after the
// run. Every turn must come back completed with its own answer and each
// pane's history must hold 20 messages per round, or the benchmark fails.
func BenchmarkHundredCicyPanes(b *testing.B) { eachDB(b, benchHundredCicyPanes) }

func benchHundredCicyPanes(b *testing.B, cfg Config) {
	benchEnv(b)
	c := startServerWith(b, cfg)
	ctx := context.Background()
	rssBefore := procStatusKiB("VmRSS")
	ids := make([]string, benchPanes)
	for i := range ids {
		ids[i] = benchCreate(b, c, api.CreateRequest{Title: fmt.Sprintf("p%d", i), Type: "cicy", RoleTemplate: "assistant", Provider: "script"})
	}
	for _, id := range ids {
		waitPaneIdle(b, c, id)
	}
	var lost, turns int
	var mu sync.Mutex
	var elapsed time.Duration
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		start := time.Now()
		var wg sync.WaitGroup
		for p, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for t := 0; t < benchTurns; t++ {
					tag := fmt.Sprintf("r%d-p%d-t%d", round, p, t)
					res, err := c.Send(ctx, id, api.SendRequest{Text: "turn " + tag, Wait: true})
					mu.Lock()
					turns++
					if err != nil || res.Status != "completed" || res.Answer != "answer "+tag {
						lost++
						if lost <= 5 {
							b.Errorf("pane %s turn %s: %+v, %v", id, tag, res, err)
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		elapsed += time.Since(start)
	}
	b.StopTimer()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss := procStatusKiB("VmRSS")
	if lost > 0 {
		b.Fatalf("%d of %d turns lost", lost, turns)
	}
	panes, err := c.List(ctx)
	if err != nil {
		b.Fatal(err)
	}
	want := 2 * benchTurns * b.N
	for _, pi := range panes {
		if pi.Messages != want {
			b.Errorf("pane %s holds %d messages, want %d", pi.ID, pi.Messages, want)
		}
	}
	if len(panes) != benchPanes {
		b.Errorf("%d panes, want %d", len(panes), benchPanes)
	}
	if b.Failed() {
		b.FailNow()
	}
	b.ReportMetric(float64(turns)/elapsed.Seconds(), "turns/s")
	b.ReportMetric(float64(rss)/1024, "rss-MiB")
	b.ReportMetric(float64(rssBefore)/1024, "rss-before-MiB")
	b.ReportMetric(float64(procStatusKiB("VmHWM"))/1024, "rss-peak-MiB")
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-inuse-MiB")
	runtime.GC()
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-live-MiB")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
}
