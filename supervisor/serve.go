package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/cluster"
	"github.com/cicy-ai/cicy-agent/supervisor/httpapi"
	"github.com/cicy-ai/cicy-agent/supervisor/logscrub"
)

// ErrAlreadyRunning is returned by Serve when another supervisor holds the
// home.
var ErrAlreadyRunning = errors.New("a supervisor is already running")

// openStore opens the home's SQLite database (refused when it was lost:
// see checkDatabase) or, with cfg.DB, the PostgreSQL database, which it
// holds for this supervisor's node alone: two supervisors serving one
// node would each take the other's panes for their own.
func openStore(ctx context.Context, cfg Config) (*schema.Store, error) {
	if cfg.DB == "" {
		if err := checkDatabase(cfg.Home, cfg.Fresh, cfg.Log); err != nil {
			return nil, err
		}
		return schema.Open(ctx, cfg.Home.DB())
	}
	store, err := schema.OpenURL(ctx, cfg.DB)
	if err != nil {
		return nil, err
	}
	if err := store.Hold(ctx, cfg.Node, 5*time.Second); err != nil {
		store.Close()
		if errors.Is(err, schema.ErrHeld) {
			return nil, fmt.Errorf("node %s: %w; give each supervisor its own --node (CICY_NODE)", cfg.Node, err)
		}
		return nil, err
	}
	cfg.Log.WithField("db", schema.RedactURL(cfg.DB)).Info("State in PostgreSQL")
	return store, nil
}

// Serve runs the supervisor until ctx is cancelled or a client asks it to
// shut down, then stops every pane and returns. Its socket answers from
// the start: while the panes are restored, health says so and other
// requests wait (httpapi.Gate).
func Serve(ctx context.Context, cfg Config) error {
	if cfg.Node == "" {
		cfg.Node = DefaultNode()
	}
	h := cfg.Home
	if err := h.Prepare(); err != nil {
		return err
	}
	unlock, err := lockHome(h)
	if err != nil {
		return err
	}
	defer unlock()
	ln, err := listenSocket(h)
	if err != nil {
		return err
	}
	defer os.Remove(h.PIDFile())
	defer os.Remove(h.Socket())
	g := httpapi.NewGate(api.Health{Version: cfg.Version, Home: h.Root, Node: cfg.Node})
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	defer srv.Close() // a start that failed: the held requests were answered
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	sup, store, cln, err := start(ctx, &cfg, g)
	if err != nil {
		g.Fail(err)
		if ctx.Err() != nil {
			return nil // stopped (SIGTERM) while starting: a graceful stop
		}
		return err
	}
	defer store.Close()
	defer sup.Close()
	if cln != nil {
		defer cln.Close()
	}
	handler := newAPI(sup, cfg, stop)
	defer sup.web.Close()
	if err := sup.web.Boot(ctx, cfg.Web); err != nil {
		if ctx.Err() != nil {
			return nil // stopped (SIGTERM) while starting: a graceful stop
		}
		g.Fail(err)
		return err
	}
	g.Ready(handler)
	var tcp *http.Server
	if cln != nil {
		tcp = &http.Server{Handler: cluster.RequireToken(cfg.Listen.Token, socketOnly(handler), cfg.Log), ReadHeaderTimeout: 10 * time.Second}
		go func() { served <- tcp.Serve(cln) }()
		cfg.Log.WithField("addr", cln.Addr().String()).Info("Cluster API listening")
	}
	cfg.Log.WithFields(map[string]any{"pid": os.Getpid(), "socket": h.Socket(), "version": cfg.Version}).Info("Supervisor listening")
	if cfg.Ready != nil {
		cfg.Ready()
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
	cfg.Log.Info("Supervisor shutting down")
	// Panes first: that ends their event streams and attached viewers,
	// which would otherwise hold the server's shutdown.
	sup.Close()
	sup.web.Close()
	shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(shutCtx) != nil {
		_ = srv.Close()
	}
	if tcp != nil && tcp.Shutdown(shutCtx) != nil {
		_ = tcp.Close()
	}
	return nil
}

// listenSocket listens on the home's socket (a file left there is stale:
// the caller holds the home's lock), the user's alone, and writes the pid
// file.
func listenSocket(h Home) (net.Listener, error) {
	if err := os.Remove(h.Socket()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", h.Socket())
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", h.Socket(), err)
	}
	if err := os.Chmod(h.Socket(), 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict the socket: %w", err)
	}
	if err := os.WriteFile(h.PIDFile(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("write pid file: %w", err)
	}
	return ln, nil
}

// start opens the store, makes the supervisor (restoring its panes, their
// progress told to g) and joins its cluster; on an error nothing is left
// open.
func start(ctx context.Context, cfg *Config, g *httpapi.Gate) (*Supervisor, *schema.Store, net.Listener, error) {
	store, err := openStore(ctx, *cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	told := cfg.Restoring
	cfg.Restoring = func(done, total int) {
		g.Restoring(done, total)
		if told != nil {
			told(done, total)
		}
	}
	sup, err := New(ctx, *cfg, store)
	if err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	cln, err := joinCluster(sup, cfg)
	if err != nil {
		sup.Close()
		store.Close()
		return nil, nil, nil, err
	}
	return sup, store, cln, nil
}

// joinCluster opens the cluster API's listener, if one is asked for
// (cfg.Listen.Addr becomes its address: the port, when :0 asked for any),
// and makes the supervisor a node of its database's cluster.
func joinCluster(sup *Supervisor, cfg *Config) (net.Listener, error) {
	cln, err := cfg.Listen.Open(cfg.Log)
	if err != nil {
		return nil, err
	}
	if cln != nil {
		cfg.Listen.Addr = cln.Addr().String()
	}
	if err := sup.join(cfg.Listen.Addr); err != nil {
		if cln != nil {
			cln.Close()
		}
		return nil, err
	}
	return cln, nil
}

// lockHome takes the home's lock file, held until unlock or process death,
// so two supervisors never share a database or socket.
func lockHome(h Home) (unlock func(), err error) {
	f, err := os.OpenFile(h.LockFile(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		pid, _ := os.ReadFile(h.PIDFile())
		if p := strings.TrimSpace(string(pid)); p != "" {
			return nil, fmt.Errorf("%w for %s (pid %s)", ErrAlreadyRunning, h.Root, p)
		}
		return nil, fmt.Errorf("%w for %s", ErrAlreadyRunning, h.Root)
	}
	return func() { f.Close() }, nil
}

// newAPI is the control socket's HTTP API (package httpapi) on this
// supervisor, with the routes of its rooms (the notifications, the web
// page's management) and the cluster's forwarding, every answer scrubbed
// of credentials; it makes the web page's front, which serves the API too.
func newAPI(sup *Supervisor, cfg Config, shutdown func()) http.Handler {
	sup.web = newWebFront(sup, cfg.WebPages)
	mux := httpapi.New(sup, httpapi.Config{
		Version: cfg.Version, Home: cfg.Home.Root, Cluster: cfg.Listen.Addr,
		BodyTimeout: cfg.BodyTimeout, Shutdown: shutdown,
		Spend: sup.spend, Answers: sup.notify, Views: sup.screens, Cicy: sup.cicyPanes,
		Rooms: []httpapi.Room{sup.notify.Routes, sup.web.Routes},
		Forward: func(next http.Handler) http.Handler {
			return cluster.DropLate(sup.cl.Forward(next), sup.log)
		},
	})
	h := logscrub.Answers(mux, sup.scrub)
	sup.web.SetAPI(h)
	return h
}
