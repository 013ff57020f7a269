package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/cicy-ai/cicy-agent/api"
)

// printPanes is the table of ls for panes, as ls prints it.
func printPanes(w io.Writer, panes []api.PaneInfo) error {
	t := newPaneTable(w, nil)
	for _, p := range panes {
		if err := t.add(p); err != nil {
			return err
		}
	}
	return t.flush()
}

// TestLsTableAsTabwriter: up to a block of rows, the streamed table of ls
// is laid out exactly as text/tabwriter lays out the same cells (wide
// and non-ASCII titles, empty reasons, clipped cells).
func TestLsTableAsTabwriter(t *testing.T) {
	t.Parallel()
	var panes []api.PaneInfo
	for i := range 40 {
		panes = append(panes, api.PaneInfo{ID: fmt.Sprintf("w-%d", i*37), Title: strings.Repeat("界", i%30), Type: []string{"cicy", "opencode", "shell"}[i%3],
			Role: strings.Repeat("r", i%20), State: "idle", Reason: strings.Repeat("x", i*3%50), CacheHit: -1, Workspace: "/ws/" + fmt.Sprint(i)})
	}
	var got, want bytes.Buffer
	if err := printPanes(&got, panes); err != nil {
		t.Fatal(err)
	}
	tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tTYPE\tROLE\tSTATE\tREASON\tTOKENS\tCACHE\tWORKSPACE")
	pt := newPaneTable(nil, nil)
	for _, p := range panes {
		fmt.Fprintln(tw, strings.Join(pt.cells(p), "\t"))
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("ls's table:\n%s\ntabwriter's:\n%s", got.String(), want.String())
	}
}

// TestLsTableStreams: past the first block, each row is printed as it
// comes, in the first block's columns (a wider cell pushes its row
// right); the NODE column is there when the home has several nodes even
// if the first block is all on one.
func TestLsTableStreams(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	asked := 0
	tb := newPaneTable(&out, func() bool { asked++; return true })
	for i := range tableBlock {
		if err := tb.add(api.PaneInfo{ID: fmt.Sprintf("w-%d", i+1), Title: "t", Type: "cicy", Role: "worker", State: "idle", Node: "a", CacheHit: -1, Workspace: "/ws"}); err != nil {
			t.Fatal(err)
		}
	}
	if lines := strings.Count(out.String(), "\n"); lines != tableBlock+1 {
		t.Fatalf("after a full block, %d lines printed, want %d", lines, tableBlock+1)
	}
	if err := tb.add(api.PaneInfo{ID: "w-1000", Title: "a much longer title", Type: "cicy", Role: "worker", State: "busy", Node: "b", CacheHit: -1, Workspace: "/ws"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != tableBlock+2 || asked != 1 {
		t.Fatalf("the row after the block: %d lines, nodes asked %d times", len(lines), asked)
	}
	if !strings.HasPrefix(lines[0], "ID     NODE  TITLE  TYPE") || lines[1] != "w-1    a     t      cicy  worker  idle           -       -      /ws" {
		t.Fatalf("the first block:\n%q\n%q", lines[0], lines[1])
	}
	if last := lines[len(lines)-1]; last != "w-1000  b     a much longer title  cicy  worker  busy           -       -      /ws" {
		t.Fatalf("the streamed row: %q", last)
	}
	if err := tb.flush(); err != nil || strings.Count(out.String(), "\n") != tableBlock+2 {
		t.Fatalf("flush printed again: %v", err)
	}
}
