package pane

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// benchFloodMB is how much output each iteration of the flood benchmarks
// moves (CICY_BENCH_MB overrides it).
func benchFloodMB(b *testing.B) int {
	if v, err := strconv.Atoi(os.Getenv("CICY_BENCH_MB")); err == nil && v > 0 {
		return v
	}
	return 8
}

// BenchmarkPTYThroughput measures how fast `yes` output reaches a PTY
// pane's screen: each iteration starts a pane that prints N MB of "y"
// lines and then a marker, and waits until the marker is on the screen.
func BenchmarkPTYThroughput(b *testing.B) {
	mb := benchFloodMB(b)
	script := fmt.Sprintf("yes | head -c %d; echo; echo flood-done", mb<<20)
	benchFlood(b, mb, script)
}

// BenchmarkPTYThroughputLongLines is the same with 160-column lines of
// base64, which wrap and fill every cell of the screen and scrollback.
func BenchmarkPTYThroughputLongLines(b *testing.B) {
	mb := benchFloodMB(b)
	script := fmt.Sprintf("head -c %d /dev/zero | base64 -w 160; echo; echo flood-done", mb<<20*3/4)
	benchFlood(b, mb, script)
}

func benchFlood(b *testing.B, mb int, script string) {
	b.SetBytes(int64(mb) << 20)
	for b.Loop() {
		p, err := StartPTY(Options{
			Argv: []string{"bash", "--norc", "--noprofile", "-c", script + "; sleep 60"},
			Env:  append(os.Environ(), "TERM=xterm-256color"),
			Log:  discardLog(),
		})
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Minute)
		for !hasLine(p.Screen(), "flood-done") {
			if time.Now().After(deadline) {
				p.Close()
				b.Fatal("the marker never reached the screen")
			}
			time.Sleep(5 * time.Millisecond)
		}
		b.StopTimer()
		p.Close()
		b.StartTimer()
	}
}

func discardLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}
