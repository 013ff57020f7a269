package pane

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/sirupsen/logrus"
)

// The flood benchmarks: each iteration starts a pane whose program prints
// N MB (CICY_BENCH_MB, 16 by default) and then a marker, and waits until
// the marker is on the pane's screen (polled every 5 ms, as a watcher
// would). MB/s is of the program's output.

func benchFloodMB() int {
	if v, err := strconv.Atoi(os.Getenv("CICY_BENCH_MB")); err == nil && v > 0 {
		return v
	}
	return 16
}

// yesScript prints mb MB of "y" lines; longLinesScript mb MB of
// 160-column base64 lines, which wrap on a 120-column screen.
func yesScript(mb int) string { return fmt.Sprintf("yes | head -c %d; echo; echo flood-done", mb<<20) }
func longLinesScript(mb int) string {
	return fmt.Sprintf("head -c %d /dev/zero | base64 -w 160; echo; echo flood-done", mb<<20*3/4)
}

func BenchmarkPTYThroughput(b *testing.B) { benchPTYFlood(b, yesScript) }

func BenchmarkPTYThroughputLongLines(b *testing.B) { benchPTYFlood(b, longLinesScript) }

func BenchmarkTmuxThroughput(b *testing.B) { benchTmuxFlood(b, yesScript) }

func BenchmarkTmuxThroughputLongLines(b *testing.B) { benchTmuxFlood(b, longLinesScript) }

// BenchmarkPTYReadCeiling reads the same output from a bare PTY with
// nothing behind it: what the kernel's terminal gives on this machine.
func BenchmarkPTYReadCeiling(b *testing.B) {
	mb := benchFloodMB()
	b.SetBytes(int64(mb) << 20)
	buf := make([]byte, 64<<10)
	for b.Loop() {
		cmd := exec.Command("bash", "--norc", "--noprofile", "-c", yesScript(mb))
		f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := f.Read(buf); err != nil {
				break
			}
		}
		f.Close()
		_ = cmd.Wait()
	}
}

func benchPTYFlood(b *testing.B, script func(mb int) string) {
	mb := benchFloodMB()
	b.SetBytes(int64(mb) << 20)
	cpu0, wall0 := cpuTime(), time.Now()
	var heap uint64
	for b.Loop() {
		p, err := StartPTY(Options{
			Argv: []string{"bash", "--norc", "--noprofile", "-c", script(mb) + "; exec sleep 600"},
			Env:  append(os.Environ(), "TERM=xterm-256color"),
			Log:  discardLog(),
		})
		if err != nil {
			b.Fatal(err)
		}
		waitMarker(b, p.Screen)
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = max(heap, ms.HeapInuse)
		p.Close()
		b.StartTimer()
	}
	// What the pane holds once the flood is on its screen (the Go heap in
	// use, with the pane still open).
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	// The share of one core this process (the pane, its reader, the
	// watcher's polls) used while the output flowed.
	b.ReportMetric(100*float64(cpuTime()-cpu0)/float64(time.Since(wall0)), "cpu-%")
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchTmuxFlood(b *testing.B, script func(mb int) string) {
	if !TmuxAvailable() {
		b.Skip("no tmux")
	}
	mb := benchFloodMB()
	b.SetBytes(int64(mb) << 20)
	s := NewTmuxServer(b.TempDir(), discardLog())
	b.Cleanup(func() {
		s.Close()
		_ = exec.Command("tmux", "-L", s.Socket, "kill-server").Run()
	})
	i := 0
	for b.Loop() {
		i++
		p, err := s.Start(fmt.Sprintf("w-%d", i), Options{
			Argv: []string{"bash", "--norc", "--noprofile", "-c", script(mb) + "; exec sleep 600"},
			Dir:  b.TempDir(),
			Env:  []string{"PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "HOME=" + b.TempDir()},
			Log:  discardLog(),
		})
		if err != nil {
			b.Fatal(err)
		}
		waitMarker(b, p.Screen)
		b.StopTimer()
		p.Stop(0, "bench")
		b.StartTimer()
	}
}

func waitMarker(b *testing.B, screen func() string) {
	deadline := time.Now().Add(10 * time.Minute)
	for !hasLine(screen(), "flood-done") {
		if time.Now().After(deadline) {
			b.Fatal("the marker never reached the screen")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func discardLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}
