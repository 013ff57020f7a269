// Package pgtest starts a private PostgreSQL server for a test binary and
// hands each test a fresh, empty database on it.
//
// The server is initdb'd into a new temporary folder and listens only on a
// unix socket in that folder (no TCP), with trust authentication for the
// fixed superuser "cicy", so a database URL does not depend on who runs the
// tests. It is started as a child of the test binary that the kernel signals
// if the binary dies, runs with durability switched off for speed, and is
// stopped and its folder removed at the end (the folder of a binary that
// was killed is removed by the next Start).
//
// A package's TestMain calls Main; its tests call Need to get the server
// (they skip when PostgreSQL is not installed) and NewDB for a database that
// is dropped when the test ends:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.Need(t).NewDB(t)
//		db, err := sql.Open("pgx", url)
//		…
//	}
//
// The binaries are found with pg_config --bindir, else in the newest
// /usr/lib/postgresql/*/bin, else as initdb and postgres on PATH. initdb
// refuses to run as root, so as root both run as the "postgres" user.
// With CICY_REQUIRE_PG=1 in the environment (CI sets it) a missing
// PostgreSQL fails the test binary instead of skipping its tests.
package pgtest
