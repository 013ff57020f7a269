package supervisor

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestClientWaitsForARestore: while a supervisor restores its panes its
// socket answers health — starting, and how far — and holds the other
// requests until it is ready; a client command waits for it, telling its
// progress, instead of failing (a restore of 100,000 panes took longer
// than the client's 5 s).
func TestClientWaitsForARestore(t *testing.T) {
	t.Parallel()
	h := Home{Root: filepath.Join(t.TempDir(), "home")}
	c, stop := serveUntil(t, h, Config{})
	if _, err := c.Create(context.Background(), api.CreateRequest{Title: "p", Type: "shell", Backend: "pty", Command: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, Config{Home: h, Version: "test", Log: quietLog(),
			Restoring: func(done, total int) { <-release }})
	}()
	t.Cleanup(func() { let(); cancel(); <-served })
	c = api.NewClient(h)
	var hl api.Health
	// A loaded machine (the whole suite under two burners) can take long
	// to get a supervisor to its restore; one that stops tells why.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if hl, err = c.Health(context.Background()); err == nil && hl.Restoring != "" {
			break
		}
		select {
		case serr := <-served:
			served <- serr // for the cleanup
			t.Fatalf("the supervisor stopped before it restored its panes: %v", serr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the socket does not answer while the supervisor restores its panes: %v", err)
		}
	}
	if !hl.Starting || hl.Restoring != "restoring 1 of 1 panes" || hl.Home != h.Root {
		t.Fatalf("health while restoring: %+v", hl)
	}
	listed := make(chan []api.PaneInfo, 1)
	go func() {
		ps, _ := c.List(context.Background())
		listed <- ps
	}()
	var mu sync.Mutex
	var said []string
	c.Progress = func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() }
	c.StartTimeout = 500 * time.Millisecond // less than the restore takes: a starting supervisor gets StallTimeout
	ensured := make(chan error, 1)
	go func() { ensured <- c.Ensure(context.Background()) }()
	// Nothing may answer while the restore is held: a while (Ensure past
	// its StartTimeout) to see that nothing did.
	time.Sleep(1500 * time.Millisecond)
	select {
	case ps := <-listed:
		t.Fatalf("a request was answered before the panes were restored: %v", ps)
	case err := <-ensured:
		t.Fatalf("Ensure returned before the supervisor was ready: %v", err)
	default:
	}
	let()
	if err := <-ensured; err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if ps := <-listed; len(ps) != 1 || ps[0].Title != "p" {
		t.Fatalf("the held ls: %+v", ps)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !strings.Contains(said[0], "the supervisor is starting: restoring 1 of 1 panes") {
		t.Fatalf("progress told: %q", said)
	}
}
