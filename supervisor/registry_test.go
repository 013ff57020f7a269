package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestStubbornPaneStallsNobody: while a pane whose program ignores SIGTERM
// is being killed (its grace period runs), ls and status still answer —
// the registry's readers never wait for a pane's stop (the old registry
// made them wait the whole grace period). A call that takes half the
// grace period waited for the kill and fails; how fast the calls are is
// not a test's business (a loaded machine stalls any call for a moment),
// so the grace period is long enough that no stall comes near it.
func TestStubbornPaneStallsNobody(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	const grace = 4 * time.Second
	c := startServerWith(t, Config{StopGrace: grace})
	mustCreate(t, c, api.CreateRequest{Title: "other", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	calls, slowest := killWhileListing(t, c, grace)
	t.Logf("%d calls during the kill, the slowest %s", calls, slowest)
	if calls < 2 {
		t.Fatalf("only %d calls were made while the pane was being killed", calls)
	}
	ps, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("after the kills: %d panes, want 1", len(ps))
	}
}

// killWhileListing creates a pane that ignores SIGTERM, kills it, and
// calls ls and status in a loop until the kill returns; it returns how
// many calls were made and the slowest. A call as slow as half the grace
// period waited for the kill: the test fails.
func killWhileListing(t *testing.T, c *api.Client, grace time.Duration) (calls int, slowest time.Duration) {
	t.Helper()
	ctx := context.Background()
	stubborn := mustCreate(t, c, api.CreateRequest{Title: "stubborn", Type: "shell", Backend: "pty",
		Command: []string{"bash", "--norc", "--noprofile", "-c", `trap "" TERM HUP; echo ready; while :; do sleep 0.1; done`}})
	waitScreen(t, c, stubborn.ID, "ready")
	killed := make(chan error, 1)
	started := time.Now()
	go func() { killed <- c.Kill(ctx, stubborn.ID) }()
	for {
		select {
		case err := <-killed:
			if err != nil {
				t.Fatalf("kill: %v", err)
			}
			if took := time.Since(started); took < grace/2 {
				t.Fatalf("the kill took %s: the program did not make it wait out its grace period (%s)", took, grace)
			}
			return calls, slowest
		default:
		}
		for _, call := range []func() error{
			func() error { _, err := c.List(ctx); return err },
			func() error { _, err := c.Status(ctx); return err },
		} {
			at := time.Now()
			if err := call(); err != nil {
				t.Fatal(err)
			}
			took := time.Since(at)
			if took >= grace/2 {
				t.Fatalf("a call took %s while a pane was being killed: it waited for the kill", took)
			}
			slowest = max(slowest, took)
			calls++
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitScreen waits until the pane's screen has a line holding text.
func waitScreen(t *testing.T, c *api.Client, id, text string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		sc, err := c.Screen(context.Background(), id, 0)
		if err == nil && strings.Contains(sc.Screen, text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pane %s never showed %q (last: %+v, %v)", id, text, sc, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
