package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/vt"
	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/supervisor"
)

// frameWatch is the dashboard's terminal: a terminal emulator (the one
// the PTY panes use) takes what the renderer writes — which since Bubble
// Tea v2 is the changed cells only — and after each write the screen is
// searched for the line that is expected.
type frameWatch struct {
	mu    sync.Mutex
	emu   *vt.Emulator
	want  func(line string) bool
	found chan struct{}
}

func newFrameWatch() *frameWatch {
	f := &frameWatch{emu: vt.NewEmulator(80, 24)}
	go func() { _, _ = io.Copy(io.Discard, f.emu) }() // the emulator's replies: nobody reads them
	return f
}

func (f *frameWatch) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.emu.Write(p)
	if f.want != nil {
		for _, line := range strings.Split(f.emu.String(), "\n") {
			if f.want(line) {
				f.want = nil
				close(f.found)
				break
			}
		}
	}
	return n, err
}

// expect watches for a line holding all of parts.
func (f *frameWatch) expect(parts ...string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.want = func(line string) bool {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				return false
			}
		}
		return true
	}
	f.found = make(chan struct{})
	return f.found
}

// BenchmarkEventToScreen measures a pane's state change (a Claude Code
// hook posted to the supervisor, as `cicy-agent hook` does) until the
// running dashboard has written the pane's row with the new state to its
// terminal — stream, batching, drawing and all: in a quiet team, and with
// 49 other panes each changing state once a second around it (the CPU
// benchmark's load: a line every 2 s, busy, then idle 500 ms later).
func BenchmarkEventToScreen(b *testing.B) {
	b.Run("quiet", func(b *testing.B) { benchEventToScreen(b, 0) })
	b.Run("49-changing", func(b *testing.B) { benchEventToScreen(b, 49) })
}

func benchEventToScreen(b *testing.B, flipping int) {
	if !pane.TmuxAvailable() {
		b.Skip("needs tmux")
	}
	dir := b.TempDir()
	b.Setenv("HOME", dir)
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\nexec sleep 100000\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	b.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	h := supervisor.Home{Root: filepath.Join(dir, "home")}
	l := logrus.New()
	l.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- supervisor.Serve(ctx, supervisor.Config{Home: h, Version: "bench", Log: logrus.NewEntry(l)})
	}()
	defer func() { cancel(); <-served }()
	c := api.NewClient(h)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := c.Health(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("supervisor did not answer")
		}
	}
	agent, err := c.Create(ctx, api.CreateRequest{Title: "agent", Type: "claude", Backend: "tmux"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Kill(context.Background(), agent.ID) }()
	for i := 0; i < flipping; i++ {
		if _, err := c.Create(ctx, api.CreateRequest{Title: fmt.Sprintf("flip%d", i), Type: "shell", Backend: "pty",
			Command: []string{"sh", "-c", "while :; do echo tick; sleep 2; done"}}); err != nil {
			b.Fatal(err)
		}
	}

	screen := newFrameWatch()
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- Run(runCtx, c, RunOptions{ // stdout is not a terminal: 80x24, no colour
			In: bytes.NewReader(nil), Out: screen,
			ProgramOptions: []tea.ProgramOption{tea.WithInput(nil), tea.WithoutSignalHandler(), tea.WithWindowSize(80, 24)}})
	}()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			b.Errorf("dashboard: %v", err)
		}
	}()
	events := []struct{ event, state string }{{"PermissionRequest", "waiting"}, {"PostToolUse", "busy"}, {"Stop", "idle"}}
	// Warm up: the dashboard shows the team (the agent first, selected).
	found := screen.expect("▸ "+agent.ID+" ", " agent ")
	select {
	case <-found:
	case <-time.After(20 * time.Second):
		b.Fatal("the dashboard never showed the team")
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Events come at any time, not just after a batch went out: a
		// random pause puts this one anywhere in the batch cycle (in a
		// quiet team, after the last batch's interval: at once).
		b.StopTimer()
		pause := time.Duration(rand.Int64N(int64(100 * time.Millisecond)))
		if flipping == 0 {
			pause += 100 * time.Millisecond
		}
		time.Sleep(pause)
		b.StartTimer()
		ev := events[i%len(events)]
		found := screen.expect("▸ "+agent.ID+" ", " "+ev.state+" ")
		start := time.Now()
		if _, err := c.Hook(ctx, agent.ID, api.HookRequest{Agent: "claude", Event: ev.event, Payload: []byte(`{}`)}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-found:
		case <-time.After(10 * time.Second):
			b.Fatalf("state %s never reached the screen", ev.state)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}
