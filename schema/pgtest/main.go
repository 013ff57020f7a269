package pgtest

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// The server Main started (nil when none) and, when none, why. Main sets
// them before the tests run and clears nothing after; tests only read them.
var (
	shared    *Server
	sharedErr error
)

// Main is for TestMain: it starts the server, runs m, stops it, and returns
// the exit code. When PostgreSQL is unavailable it runs m anyway with
// Shared() returning nil (tests then skip) — unless the environment has
// CICY_REQUIRE_PG=1, in which case it prints why and returns 1. A server
// that is installed but fails to start is an error, not a skip.
func Main(m *testing.M) int {
	s, err := Start()
	switch {
	case err == nil:
	case !errors.Is(err, ErrUnavailable):
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	case os.Getenv("CICY_REQUIRE_PG") == "1":
		fmt.Fprintf(os.Stderr, "CICY_REQUIRE_PG=1 but %v\n", err)
		return 1
	default:
		sharedErr = err
		return m.Run()
	}
	shared = s
	defer s.Stop()
	return m.Run()
}

// Shared is the server Main started, or nil.
func Shared() *Server { return shared }

// Need returns Shared() or skips tb with the reason (PostgreSQL
// unavailable). It fails tb when the package's TestMain does not call Main.
func Need(tb testing.TB) *Server {
	tb.Helper()
	if shared != nil {
		return shared
	}
	if sharedErr == nil {
		tb.Fatal("pgtest.Need: the package's TestMain does not call pgtest.Main")
	}
	tb.Skip(sharedErr)
	return nil
}
