package supervisor

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/schema/pgtest"
)

// TestMain starts a private PostgreSQL for the tests that keep the state
// there (see pgtest.Main); the others do not use it. Started with
// serveEnv, the test binary is a node's supervisor instead (a process a
// test can kill -9).
func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		os.Exit(serveNodeProcess())
	}
	os.Exit(pgtest.Main(m))
}

// serveUntil runs a supervisor on h with cfg until the returned stop is
// called (stop waits for it and returns Serve's error).
func serveUntil(t testing.TB, h Home, cfg Config) (*api.Client, func() error) {
	t.Helper()
	l := logrus.New()
	l.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg.Home, cfg.Version, cfg.Log = h, "test", logrus.NewEntry(l)
	go func() {
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			err := Serve(ctx, cfg)
			// A supervisor this process just stopped may leave its lock to a
			// child another test forked before the lock file was closed,
			// until that child's exec (the lock is the open file's): no other
			// supervisor runs then (no pid file), so try again a moment.
			_, pidErr := os.Stat(h.PIDFile())
			if errors.Is(err, ErrAlreadyRunning) && os.IsNotExist(pidErr) && ctx.Err() == nil && time.Since(start) < 3*time.Second {
				continue
			}
			done <- err
			return
		}
	}()
	var once bool
	var err error
	stop := func() error {
		if !once {
			once = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	c := api.NewClient(h)
	for deadline := time.Now().Add(15 * time.Second); ; {
		if h, herr := c.Health(context.Background()); herr == nil && !h.Starting {
			return c, stop
		}
		select {
		case err := <-done:
			done <- err // for stop
			return nil, stop
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("supervisor did not answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeOnPostgres: a supervisor keeps its panes, tasks and usage in
// PostgreSQL; a restart finds them there (the home has no SQLite file),
// and a second supervisor for the same node is refused while the first
// runs.
func TestServeOnPostgres(t *testing.T) {
	db := pgtest.Need(t).NewDB(t)
	t.Setenv("HOME", t.TempDir())
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(benchRules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CICY_SCRIPT", rules)
	ctx := context.Background()
	h := Home{Root: filepath.Join(t.TempDir(), "home")}
	c, stop := serveUntil(t, h, Config{DB: db})
	if c == nil {
		t.Fatalf("serve on PostgreSQL: %v", stop())
	}
	sh := mustCreate(t, c, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	ci := mustCreate(t, c, api.CreateRequest{Title: "ci", Type: "cicy", Provider: "script"})
	task, err := c.Dispatch(ctx, api.DispatchRequest{To: sh.ID, Text: "echo done-marker"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.WaitTask(ctx, task.ID, 30*time.Second); err != nil || got.Status != "done" {
		t.Fatalf("task on PostgreSQL: %+v, %v", got, err)
	}
	if _, err := c.Send(ctx, ci.ID, api.SendRequest{Text: "hello", Wait: true}); err != nil {
		t.Fatal(err)
	}

	other := Home{Root: filepath.Join(t.TempDir(), "other")}
	if c2, stop2 := serveUntil(t, other, Config{DB: db}); c2 != nil || !errors.Is(stop2(), schema.ErrHeld) {
		t.Fatalf("a second supervisor on the database: answered %v, %v; want ErrHeld", c2 != nil, stop2())
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.DB()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a SQLite database beside PostgreSQL: %v", err)
	}
	c, stop = serveUntil(t, h, Config{DB: db})
	if c == nil {
		t.Fatalf("restart on PostgreSQL: %v", stop())
	}
	ps, err := c.List(ctx)
	if err != nil || len(ps) != 2 {
		t.Fatalf("panes after the restart: %+v, %v", ps, err)
	}
	if got, err := c.Task(ctx, task.ID); err != nil || got.Status != "done" {
		t.Fatalf("the task after the restart: %+v, %v", got, err)
	}
	var usage int64
	for _, p := range ps {
		if p.ID == ci.ID {
			usage = p.Usage.OutputTokens
		}
	}
	if usage == 0 {
		t.Fatalf("the cicy pane's usage was not kept: %+v", ps)
	}
	if next := mustCreate(t, c, api.CreateRequest{Title: "sh2", Type: "shell", Backend: "pty", Command: []string{"true"}}); next.ID != "w-3" {
		t.Fatalf("the next pane is %s, want w-3", next.ID)
	}
}
