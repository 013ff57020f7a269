package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// BenchmarkFloodNeighbours measures what a pane flooding its screen costs
// the others: ten PTY shell panes in one supervisor, one of them (in the
// "flood" case) running `yes` for the whole benchmark with a preview
// stream open on it, while each iteration sends `echo <token>` to one of
// the nine others in turn and polls its screen until the token is there.
// The "busy" case runs the same program with its output thrown away.
// Reported: the nine panes' send→screen p50/p99, the supervisor process's
// CPU (share of one core over the run), its RSS and Go heap at the end,
// and the flood's pace (what `yes` wrote, from /proc/<pid>/io) — also for 3 s
// before the sends begin, with the supervisor's CPU then ("flood-alone").
func BenchmarkFloodNeighbours(b *testing.B) {
	for _, c := range []struct {
		name  string
		flood []string
	}{
		{"quiet", nil},
		// The same program writing to /dev/null: what its CPU alone costs
		// the others on this machine.
		{"busy", []string{"sh", "-c", "exec yes >/dev/null"}},
		{"flood", []string{"yes"}},
	} {
		b.Run(c.name, func(b *testing.B) { benchNeighbours(b, c.flood) })
	}
}

func benchNeighbours(b *testing.B, floodCmd []string) {
	flood := floodCmd != nil
	b.Setenv("HOME", b.TempDir())
	c := startServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bash := []string{"bash", "--norc", "--noprofile"}
	var others []string
	for i := range 9 {
		others = append(others, benchCreate(b, c, api.CreateRequest{Title: fmt.Sprintf("n%d", i), Type: "shell", Backend: "pty", Command: bash}))
	}
	for _, id := range others {
		waitPaneIdle(b, c, id)
	}
	floodPID := 0
	var aloneMBs, aloneCPU float64 // reported at the end: ResetTimer drops metrics
	if flood {
		id := benchCreate(b, c, api.CreateRequest{Title: "flood", Type: "shell", Backend: "pty", Command: floodCmd})
		pr, err := c.Preview(ctx, id, 40)
		if err != nil {
			b.Fatal(err)
		}
		defer pr.Close()
		go func() { // a viewer of the flood, as the dashboard would be
			sc := bufio.NewScanner(pr)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
			}
		}()
		pi, err := c.Get(ctx, id)
		if err != nil || pi.PID == 0 {
			b.Fatalf("flood pane: %+v, %v", pi, err)
		}
		floodPID = pi.PID
		// The flood alone, the nine others idle: its pace and its cost.
		time.Sleep(time.Second)
		cpu0, w0, t0 := processCPU(), writtenBytes(b, floodPID), time.Now()
		time.Sleep(3 * time.Second)
		secs := time.Since(t0).Seconds()
		aloneMBs = float64(writtenBytes(b, floodPID)-w0) / secs / 1e6
		aloneCPU = 100 * (processCPU() - cpu0).Seconds() / secs
	}
	runtime.GC()
	cpu0, wall0 := processCPU(), time.Now()
	var written0 int64
	if flood {
		written0 = writtenBytes(b, floodPID)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := others[i%len(others)]
		tok := fmt.Sprintf("t%d-%d", time.Now().UnixNano(), i)
		start := time.Now()
		if _, err := c.Send(ctx, id, api.SendRequest{Text: "echo " + tok}); err != nil {
			b.Fatal(err)
		}
		for {
			sc, err := c.Screen(ctx, id, 5)
			if err != nil {
				b.Fatal(err)
			}
			if hasScreenLine(sc.Screen, tok) {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("token %s never showed on %s", tok, id)
			}
		}
		lat = append(lat, time.Since(start))
		if i%50 == 49 {
			_, _ = c.Send(ctx, id, api.SendRequest{Keys: []string{"C-l"}, NoEnter: true})
		}
	}
	b.StopTimer()
	wall := time.Since(wall0)
	cpu := processCPU() - cpu0
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(100*float64(cpu)/float64(wall), "cpu-%")
	b.ReportMetric(float64(rssKiB())/1024, "rss-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	if flood {
		b.ReportMetric(float64(writtenBytes(b, floodPID)-written0)/wall.Seconds()/1e6, "flood-MB/s")
		b.ReportMetric(aloneMBs, "flood-alone-MB/s")
		b.ReportMetric(aloneCPU, "flood-alone-cpu-%")
	}
}

// processCPU is the user and system time this process (the supervisor
// and the benchmark's client) has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writtenBytes is how much the process pid has written (its wchar).
func writtenBytes(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// rssKiB is this process's resident set size.
func rssKiB() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
