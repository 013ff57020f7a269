package supervisor

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/topology"
)

// BenchmarkNeedsYouToSink measures a CLI agent's permission dialog, from
// the text that makes it draw one being typed, until the webhook sink receives
// the approval: the screen read, the watch, the queue in SQLite and the
// send. Each round denies the dialog, so the next is a new episode.
func BenchmarkNeedsYouToSink(b *testing.B) {
	s, _ := newStandInSupervisor(b, os.Getenv, standInAsking)
	s.notify.SetWindow(time.Nanosecond) // each round is told, not coalesced
	k := addSinks(b, s, "needs-you")
	ctx := context.Background()
	p, err := s.Create(ctx, api.CreateRequest{Title: "careful", Type: "claude", Backend: "tmux"})
	if err != nil {
		b.Fatal(err)
	}
	waitPane(b, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
	lat := make([]time.Duration, 0, b.N)
	var afterState []time.Duration // from the pane seen waiting
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := len(k.hook.Requests())
		start := time.Now() // the dialog is drawn once the text is typed
		sent := make(chan error, 1)
		go func() { // Send returns once the pane's output settles
			_, err := s.Send(ctx, p.ID, api.SendRequest{Text: "ask"})
			sent <- err
		}()
		var waitingAt time.Time
		for len(k.hook.Requests()) <= before {
			if e, _ := s.get(p.ID); waitingAt.IsZero() && e != nil && e.status().State == pane.Waiting {
				waitingAt = time.Now()
			}
			if time.Since(start) > 30*time.Second {
				b.Fatal("no request within 30 s")
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(start))
		if !waitingAt.IsZero() {
			afterState = append(afterState, time.Since(waitingAt))
		}
		if err := <-sent; err != nil {
			b.Fatal(err)
		}
		if _, err := s.Send(ctx, p.ID, api.SendRequest{Keys: []string{"Escape"}, NoEnter: true}); err != nil {
			b.Fatal(err)
		}
		waitPane(b, s, p.ID, "idle", func(st pane.Status) bool { return st.State == pane.Idle })
		// The episode's end is seen before the next begins.
		waitFor(b, "the episode's end", func() bool { return s.notify.EpisodeOf(p.ID) == "" })
	}
	b.StopTimer()
	report(b, "needs-you-to-sink", lat)
	if len(afterState) > 0 {
		report(b, "waiting-to-sink", afterState)
	}
}

// BenchmarkNotifyBurst raises 1,000 needs at once — 50 panes, each
// flapping 20 times within the coalescing window — and reports how many
// messages the webhook got (one per pane; the digests come after the
// window) and the supervisor's CPU time for the burst and its sending.
func BenchmarkNotifyBurst(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s, _ := newTestSupervisor(b, os.Getenv)
		k := addSinks(b, s)
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		start := time.Now()
		for flap := 0; flap < 20; flap++ {
			var needs []topology.Attention
			for p := 0; p < 50; p++ {
				needs = append(needs, topology.Attention{ID: fmt.Sprintf("w-%d", p+1), Kind: topology.NeedError, State: "error", Reason: fmt.Sprintf("flap %d", flap)})
			}
			raiseAll(s, needs)
			if err := s.notify.End(context.Background(), needs...); err != nil {
				b.Fatal(err)
			}
		}
		k.hook.Wait(b, 50, time.Minute)
		took := time.Since(start)
		time.Sleep(time.Second) // anything more would come now
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		b.ReportMetric(float64(len(k.hook.Requests())), "messages")
		b.ReportMetric(float64(took.Milliseconds()), "burst-to-sent-ms")
		b.ReportMetric(float64(cpu.Milliseconds()), "cpu-ms")
	}
}
