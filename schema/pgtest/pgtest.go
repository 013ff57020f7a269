package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// ErrUnavailable is returned (wrapped, with the reason) by Start when there
// is no PostgreSQL to start: no binaries, or running as root with no
// "postgres" user to run them as.
var ErrUnavailable = errors.New("PostgreSQL unavailable")

const (
	dirPrefix  = "cicy-pg-"
	ownerFile  = "owner.pid" // the pid of the test binary that made the folder
	superuser  = "cicy"      // initdb -U: the same URL whoever runs the tests
	port       = 5432        // names the socket file; the folder is private
	readyWait  = 60 * time.Second
	stopWait   = 30 * time.Second
	createWait = 60 * time.Second
)

// Server is a private PostgreSQL started for a test binary.
type Server struct {
	dir   string // the temp folder: owner.pid, the socket, the log and data/
	cmd   *exec.Cmd
	admin *sql.DB // to the "postgres" database, for CREATE/DROP DATABASE
	log   *os.File

	done    chan struct{} // closed when the postmaster has been waited for
	waitErr error         // set before done is closed

	seq      atomic.Int64
	stopOnce sync.Once
}

// binaries are the two programs Start runs.
type binaries struct{ initdb, postgres string }

// Start starts a private PostgreSQL server (initdb into a fresh temp dir,
// listening only on a unix socket in that dir, no TCP) and returns it. It
// returns ErrUnavailable (wrapped, with the reason) when no PostgreSQL
// binaries are found. It first removes the folders that killed test
// binaries left behind.
func Start() (*Server, error) {
	bin, err := findBinaries("/usr/lib/postgresql")
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	sweepStale(os.TempDir())
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("pgtest: temp dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir) // nothing in it yet
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, done: make(chan struct{})}
	if err := s.start(bin, cred); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// start prepares the folder, runs initdb, starts postgres and waits until
// it accepts connections.
func (s *Server) start(bin binaries, cred *syscall.Credential) error {
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: chown %s to the postgres user: %w", s.dir, err)
		}
	}
	var err error
	if s.log, err = os.Create(filepath.Join(s.dir, "server.log")); err != nil {
		return fmt.Errorf("pgtest: server log: %w", err)
	}
	if err := s.initdb(bin.initdb, cred); err != nil {
		return err
	}
	if err := s.launch(bin.postgres, cred); err != nil {
		return err
	}
	if s.admin, err = sql.Open("pgx", s.url("postgres")); err != nil {
		return fmt.Errorf("pgtest: open the admin connection: %w", err)
	}
	s.admin.SetMaxOpenConns(4)
	return s.waitReady()
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// childAttr runs a child as cred (nil: as ourselves) in its own process
// group, killed with the test binary: SIGQUIT is postgres' immediate
// shutdown, which takes its backends down too.
func childAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
}

// childEnv is the environment of initdb and postgres: no PG* variable of
// the caller's leaks in.
func childEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
}

func (s *Server) initdb(initdb string, cred *syscall.Credential) error {
	cmd := exec.Command(initdb, "-D", s.dataDir(), "-U", superuser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = s.dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = childAttr(cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: %s: %w\n%s", initdb, err, bytes.TrimSpace(out))
	}
	return nil
}

// launch starts the postmaster as a child and a goroutine that waits for
// it; the goroutine ends when the process does.
func (s *Server) launch(postgres string, cred *syscall.Credential) error {
	cmd := exec.Command(postgres, "-D", s.dataDir(),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories="+s.dir,
		"-c", "max_connections=200",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off")
	cmd.Dir = s.dir
	cmd.Env = childEnv()
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	cmd.SysProcAttr = childAttr(cred)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start %s: %w", postgres, err)
	}
	s.cmd = cmd
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	return nil
}

// waitReady polls a connection until the server answers, it exits, or the
// deadline passes.
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := s.admin.PingContext(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("pgtest: postgres exited while starting: %v\n%s", s.waitErr, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres not ready after %s: %w\n%s", readyWait, err, s.logTail())
		case <-tick.C:
		}
	}
}

// logTail is the end of the server's log, for error messages.
func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return fmt.Sprintf("(no server log: %v)", err)
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(bytes.TrimSpace(b))
}

// url is the database URL of one database on this server.
func (s *Server) url(dbname string) string {
	q := url.Values{}
	q.Set("host", s.dir)
	q.Set("port", strconv.Itoa(port))
	q.Set("sslmode", "disable")
	u := url.URL{Scheme: "postgres", User: url.User(superuser), Host: "", Path: "/" + dbname, RawQuery: q.Encode()}
	return u.String()
}

// NewDB creates a fresh, empty database for one test and returns its URL
// (postgres://… with the socket folder as the host query parameter), for
// the database/sql driver "pgx" of github.com/jackc/pgx/v5/stdlib. The
// database is dropped at the test's cleanup.
func (s *Server) NewDB(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("test_%d", s.seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), createWait)
	defer cancel()
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), createWait)
		defer cancel()
		if _, err := s.admin.ExecContext(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.url(name)
}

// Stop stops the server (fast shutdown) and removes its directory. Safe to
// call twice.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.admin != nil {
			if err := s.admin.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: close the admin connection: %v\n", err)
			}
		}
		s.shutdown()
		if s.log != nil {
			_ = s.log.Close() // only the children wrote to it
		}
		if err := os.RemoveAll(s.dir); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: remove %s: %v\n", s.dir, err)
		}
	})
}

// shutdown asks the postmaster for a fast shutdown (SIGINT) and kills its
// process group if it has not exited by the deadline.
func (s *Server) shutdown() {
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: signal postgres: %v\n", err)
	}
	select {
	case <-s.done:
		if s.waitErr != nil {
			fmt.Fprintf(os.Stderr, "pgtest: postgres: %v\n%s\n", s.waitErr, s.logTail())
		}
	case <-time.After(stopWait):
		fmt.Fprintf(os.Stderr, "pgtest: postgres not stopped after %s, killing it\n", stopWait)
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // the group: postmaster and backends
		<-s.done
	}
}

// findBinaries finds initdb and postgres: pg_config --bindir, else the
// newest libRoot/*/bin, else both on PATH.
func findBinaries(libRoot string) (binaries, error) {
	var tried []string
	if pc, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(pc, "--bindir").Output(); err == nil {
			dir := strings.TrimSpace(string(out))
			if b, ok := inDir(dir); ok {
				return b, nil
			}
			tried = append(tried, dir)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(libRoot, "*", "bin")) // the pattern is valid
	sort.Slice(dirs, func(i, j int) bool { return versionLess(dirs[j], dirs[i]) })
	for _, dir := range dirs {
		if b, ok := inDir(dir); ok {
			return b, nil
		}
		tried = append(tried, dir)
	}
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return binaries{initdb: initdb, postgres: postgres}, nil
	}
	tried = append(tried, "PATH")
	return binaries{}, fmt.Errorf("%w: no initdb and postgres found (looked in %s; install Debian's postgresql package)",
		ErrUnavailable, strings.Join(tried, ", "))
}

// inDir is initdb and postgres in dir, if both are there.
func inDir(dir string) (binaries, bool) {
	b := binaries{initdb: filepath.Join(dir, "initdb"), postgres: filepath.Join(dir, "postgres")}
	for _, p := range []string{b.initdb, b.postgres} {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return binaries{}, false
		}
	}
	return b, true
}

// versionLess orders …/<version>/bin folders by version: 9.6 < 10 < 15.
func versionLess(a, b string) bool {
	va := strings.Split(filepath.Base(filepath.Dir(a)), ".")
	vb := strings.Split(filepath.Base(filepath.Dir(b)), ".")
	for i := 0; i < len(va) && i < len(vb); i++ {
		na, ea := strconv.Atoi(va[i])
		nb, eb := strconv.Atoi(vb[i])
		if ea != nil || eb != nil {
			if va[i] != vb[i] {
				return va[i] < vb[i]
			}
			continue
		}
		if na != nb {
			return na < nb
		}
	}
	return len(va) < len(vb)
}

// serverCredential is who initdb and postgres run as: nil (ourselves)
// unless we are root, which initdb refuses; then the "postgres" user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("%w: running as root and initdb refuses root, but there is no postgres user to run it as: %v",
			ErrUnavailable, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres user's uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres user's gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// sweepStale removes the folders of servers whose test binary was killed
// (their postgres died with it): a folder whose owner.pid names a process
// that no longer exists. A folder without one is still being made.
func sweepStale(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, dirPrefix+"*")) // the pattern is valid
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: remove the stale %s: %v\n", dir, err)
		}
	}
}
