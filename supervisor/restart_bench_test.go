package supervisor

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// BenchmarkRestart measures a restart of a supervisor holding many cicy
// panes (on the scripted model), each one a turn loop it restores with
// its history: the supervisor runs in a process of its own on the home's
// SQLite, is started, and is measured until
//
//   - socket: its socket answers health (saying it is starting);
//   - ready: health says it is ready (every pane listed; a cicy pane's
//     history is read on its first input, or in the background);
//   - ls-first, ls: the first `ls` has brought its first pane, and every
//     pane;
//   - send: a message to the last pane (not restored yet) has its answer;
//   - restored: the background restore has restored every pane (its
//     line in the supervisor's log);
//
// then it is shut down (stop: the shutdown request until the process
// has exited). The panes are made once: one by the API, the others
// copied from its rows, and a first start (not measured) makes their
// folders, as their first start would have.
func BenchmarkRestart(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("panes=%d", n), func(b *testing.B) { benchRestart(b, n) })
	}
}

func benchRestart(b *testing.B, n int) {
	benchEnv(b)
	h := Home{Root: filepath.Join(b.TempDir(), "home")}
	seedCicyPanes(b, h, n)
	restartOnce(b, h, n) // the panes' folders are made
	var times [7][]time.Duration
	b.ResetTimer()
	for range b.N {
		for i, d := range restartOnce(b, h, n) {
			times[i] = append(times[i], d)
		}
	}
	b.StopTimer()
	for i, name := range []string{"socket", "ready", "ls-first", "ls", "send", "restored", "stop"} {
		reportPercentiles(b, name, times[i])
	}
	b.ReportMetric(0, "ns/op")
}

// restartOnce starts the supervisor, waits for it and lists its panes,
// sends the last pane a message and waits for the background restore,
// then shuts it down: the times to the socket, ready, the first pane and
// the last one listed, the answer, every pane restored, and of the stop.
func restartOnce(b *testing.B, h Home, n int) [7]time.Duration {
	b.Helper()
	var logFrom int64 // this start's lines of the supervisor's log
	if fi, err := os.Stat(h.Log()); err == nil {
		logFrom = fi.Size()
	}
	began := time.Now()
	p := startServeProcess(b, "", h)
	var socket time.Duration
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		hl, err := p.c.Health(context.Background())
		if err == nil && hl.PID == p.cmd.Process.Pid {
			if socket == 0 {
				socket = time.Since(began)
			}
			if !hl.Starting {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the supervisor was not ready within 10 minutes: %v %+v", err, hl)
		}
	}
	ready := time.Since(began)
	var first time.Duration
	listed := 0
	err := p.c.ListEach(context.Background(), api.PaneFilter{}, func(pi api.PaneInfo) error {
		if listed++; listed == 1 {
			first = time.Since(began)
		}
		if pi.State == "error" || pi.State == "exited" {
			return fmt.Errorf("pane %s is %s: %s", pi.ID, pi.State, pi.Reason)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	ls := time.Since(began)
	if listed != n {
		b.Fatalf("ls lists %d panes, want %d", listed, n)
	}
	res, err := p.c.Send(context.Background(), fmt.Sprintf("w-%d", n), api.SendRequest{Text: "hello", Wait: true})
	if err != nil || res.Status != "completed" {
		b.Fatalf("send to w-%d: %+v, %v", n, res, err)
	}
	sent := time.Since(began)
	waitLogged(b, h, logFrom, "Every cicy pane is restored", 10*time.Minute)
	restored := time.Since(began)
	stopped := time.Now()
	if err := p.c.Shutdown(context.Background(), 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		b.Fatalf("the supervisor's exit: %v", err)
	}
	return [7]time.Duration{socket, ready, first, ls, sent, restored, time.Since(stopped)}
}

// waitLogged waits up to d until the supervisor's log of h, past its
// first from bytes, holds line.
func waitLogged(b *testing.B, h Home, from int64, line string, d time.Duration) {
	b.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if log, _ := os.ReadFile(h.Log()); int64(len(log)) > from && bytes.Contains(log[from:], []byte(line)) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the supervisor did not log %q within %s", line, d)
		}
	}
}

// seedCicyPanes makes n cicy panes in h: one through the API, the rest
// copies of its rows (ids w-2 … w-n, each with a workspace of its own).
func seedCicyPanes(b *testing.B, h Home, n int) {
	b.Helper()
	c, stop := serveUntil(b, h, Config{})
	if _, err := c.Create(context.Background(), api.CreateRequest{Title: "p1", Type: "cicy", Provider: "script"}); err != nil {
		b.Fatal(err)
	}
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", h.DB())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cols := tableColumns(b, db, "agent_config")
	sel := make([]string, len(cols))
	for i, col := range cols {
		switch col {
		case "pane_id":
			sel[i] = "'w-' || i"
		case "title":
			sel[i] = "'p' || i"
		case "workspace":
			sel[i] = "replace(workspace, '" + string(filepath.Separator) + "w-1', '" + string(filepath.Separator) + "w-' || i)"
		default:
			sel[i] = col
		}
	}
	rt := tableColumns(b, db, "pane_runtime")
	rtSel := strings.Replace(strings.Join(rt, ", "), "pane_id", "'w-' || i", 1)
	gen := "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
	for _, q := range []string{
		gen + "INSERT INTO agent_config (" + strings.Join(cols, ", ") + ") SELECT " + strings.Join(sel, ", ") + " FROM agent_config, n WHERE pane_id = 'w-1'",
		gen + "INSERT INTO pane_runtime (" + strings.Join(rt, ", ") + ") SELECT " + rtSel + " FROM pane_runtime, n WHERE pane_id = 'w-1'",
		"UPDATE counters SET value = ? WHERE name = 'pane'",
	} {
		if _, err := db.Exec(q, n); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	var ws string
	if err := db.QueryRow("SELECT workspace FROM agent_config WHERE pane_id = 'w-2'").Scan(&ws); err != nil || filepath.Base(ws) != "w-2" {
		b.Fatalf("the copied pane's workspace is %q (%v)", ws, err)
	}
}

// tableColumns are a SQLite table's column names, in order.
func tableColumns(b *testing.B, db *sql.DB, table string) []string {
	b.Helper()
	rows, err := db.Query("SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			b.Fatal(err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil || len(cols) == 0 {
		b.Fatalf("the columns of %s: %v", table, err)
	}
	return cols
}
