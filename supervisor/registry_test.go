package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestStubbornPaneStallsNobody: while a pane whose program ignores SIGTERM
// is being killed (its grace period runs), ls and status still answer at
// once — the registry's readers never wait for a pane's stop.
func TestStubbornPaneStallsNobody(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	const grace = 2 * time.Second
	c := startServerWith(t, Config{StopGrace: grace})
	ctx := context.Background()
	stubborn := mustCreate(t, c, api.CreateRequest{Title: "stubborn", Type: "shell", Backend: "pty",
		Command: []string{"bash", "--norc", "--noprofile", "-c", `trap "" TERM HUP; echo ready; while :; do sleep 0.1; done`}})
	mustCreate(t, c, api.CreateRequest{Title: "other", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	waitScreen(t, c, stubborn.ID, "ready")

	killed := make(chan error, 1)
	started := time.Now()
	go func() { killed <- c.Kill(ctx, stubborn.ID) }()
	calls, slowest := 0, time.Duration(0)
	for done := false; !done; {
		select {
		case err := <-killed:
			if err != nil {
				t.Fatalf("kill: %v", err)
			}
			done = true
			continue
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
			slowest = max(slowest, took)
			if took > 50*time.Millisecond {
				t.Logf("call %d took %s", calls, took)
			}
			if took > 100*time.Millisecond {
				t.Errorf("a call took %s while a pane was being killed", took)
			}
			calls++
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(started); took < grace/2 {
		t.Fatalf("the kill took %s: the program did not make it wait out its grace period (%s)", took, grace)
	}
	t.Logf("%d calls during the kill, the slowest %s", calls, slowest)
	ps, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("after the kill: %d panes, want 1", len(ps))
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
