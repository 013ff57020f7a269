package schema

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cicy-ai/cicy-agent/schema/disktest"
)

// TestAddUsageKeepsItsTime: a row that waited to be written keeps the time
// of its call.
func TestAddUsageKeepsItsTime(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "cicy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := "2026-12-01T10:00:00Z"
	if err := s.AddUsage(context.Background(), UsageRow{PaneID: "w-1", Model: "m", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := s.db.GetContext(context.Background(), &got, `SELECT created_at FROM usage`); err != nil || got != at {
		t.Fatalf("created_at = %q, %v; want %s", got, err, at)
	}
}

// TestAddUsageDiskFull: SQLite on a real, full disk (a tiny tmpfs) refuses
// a usage row with an error that matches ENOSPC, as a file write's does.
func TestAddUsageDiskFull(t *testing.T) {
	t.Parallel()
	dir := disktest.Tiny(t, 2<<20)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(dir, "cicy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	disktest.Fill(t, filepath.Join(dir, "filler"))
	for i := 0; ; i++ {
		err := s.AddUsage(ctx, UsageRow{PaneID: "w-1", Model: fmt.Sprintf("model-%0200d", i)})
		if err == nil {
			if i > 10000 {
				t.Fatal("10000 rows went into a full disk")
			}
			continue
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("AddUsage on a full disk: %v; want an error matching ENOSPC", err)
		}
		return
	}
}
