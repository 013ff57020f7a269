package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func open(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() }) // a closed pool has nothing left to report
	return db
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// dbExists tells whether the server has a database of that name.
func dbExists(t *testing.T, s *Server, name string) bool {
	t.Helper()
	var n int
	if err := s.admin.QueryRowContext(ctx(t), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestNewDBWriteReadDrop(t *testing.T) {
	s := Need(t)
	var name string
	t.Run("db", func(t *testing.T) {
		db := open(t, s.NewDB(t))
		c := ctx(t)
		if err := db.QueryRowContext(c, "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(c, "CREATE TABLE t (id integer PRIMARY KEY, v text NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(c, "INSERT INTO t (id, v) VALUES ($1, $2)", 1, "héllo"); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := db.QueryRowContext(c, "SELECT v FROM t WHERE id = $1", 1).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "héllo" {
			t.Fatalf("read %q, wrote %q", v, "héllo")
		}
		if !dbExists(t, s, name) {
			t.Fatalf("database %s not in pg_database while in use", name)
		}
		// The pool stays open: the drop at cleanup must not wait for it.
	})
	if name == "" {
		t.Fatal("the subtest did not get its database's name")
	}
	if dbExists(t, s, name) {
		t.Fatalf("database %s still there after its test's cleanup", name)
	}
}

func TestNewDBSeparate(t *testing.T) {
	s := Need(t)
	a, b := open(t, s.NewDB(t)), open(t, s.NewDB(t))
	c := ctx(t)
	var na, nb string
	if err := a.QueryRowContext(c, "SELECT current_database()").Scan(&na); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRowContext(c, "SELECT current_database()").Scan(&nb); err != nil {
		t.Fatal(err)
	}
	if na == nb {
		t.Fatalf("both URLs lead to database %s", na)
	}
	if _, err := a.ExecContext(c, "CREATE TABLE only_in_a (x integer)"); err != nil {
		t.Fatal(err)
	}
	var reg sql.NullString
	if err := b.QueryRowContext(c, "SELECT to_regclass('only_in_a')::text").Scan(&reg); err != nil {
		t.Fatal(err)
	}
	if reg.Valid {
		t.Fatalf("a table created in %s is seen in %s", na, nb)
	}
}

// serverProcs lists the pids whose command line names dir.
func serverProcs(t *testing.T, dir string) []string {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process has gone
		}
		if strings.Contains(string(b), dir) {
			pids = append(pids, filepath.Base(filepath.Dir(f))+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return pids
}

func TestStopLeavesNothing(t *testing.T) {
	Need(t) // skips alike when PostgreSQL is not installed
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	t.Run("db", func(t *testing.T) {
		db := open(t, s.NewDB(t))
		if err := db.PingContext(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})
	if len(serverProcs(t, s.dir)) == 0 {
		t.Fatalf("no process names %s while the server runs", s.dir)
	}
	s.Stop()
	if left := serverProcs(t, s.dir); len(left) > 0 {
		t.Fatalf("after Stop, processes of the server are left:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Stop, %s: %v (want it removed)", s.dir, err)
	}
	s.Stop() // a second Stop is a no-op
}

func TestNoBinaries(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findBinaries(t.TempDir())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("findBinaries with nothing installed: %v, want ErrUnavailable", err)
	}
}

func TestVersionOrder(t *testing.T) {
	dirs := []string{"/l/9.6/bin", "/l/15/bin", "/l/10/bin"}
	newest := dirs[0]
	for _, d := range dirs[1:] {
		if versionLess(newest, d) {
			newest = d
		}
	}
	if newest != "/l/15/bin" {
		t.Fatalf("newest of %v: %s, want /l/15/bin", dirs, newest)
	}
}

func TestSweepStale(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	mk := func(name, owner string) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale := mk(dirPrefix+"1", strconv.Itoa(dead.Process.Pid))
	live := mk(dirPrefix+"2", strconv.Itoa(os.Getpid()))
	making := mk(dirPrefix+"3", "")
	other := mk("other-1", strconv.Itoa(dead.Process.Pid))
	sweepStale(tmp)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder of a dead test binary: %v (want it removed)", err)
	}
	for _, dir := range []string{live, making, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v (want it kept)", dir, err)
		}
	}
}
