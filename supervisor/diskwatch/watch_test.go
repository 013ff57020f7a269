package diskwatch

import (
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestNoteStandsUntilTheWriterSucceeds: a write that failed for lack of
// space stands until the same writer's next write succeeds; the reason
// names every writer standing and the folder of a file's error; other
// errors are no news of the disk.
func TestNoteStandsUntilTheWriterSucceeds(t *testing.T) {
	t.Parallel()
	var changed atomic.Int32
	d := New(func() { changed.Add(1) })
	defer d.Close()
	d.Note("the ledger", errors.New("connection refused"))
	if r := d.Reason(); r != "" || changed.Load() != 0 {
		t.Fatalf("another error: reason %q, %d changes", r, changed.Load())
	}
	d.Note("the ledger", syscall.ENOSPC)
	d.Note("the history of w-3", &fs.PathError{Op: "write", Path: "/home/x/panes/w-3/history.jsonl", Err: syscall.ENOSPC})
	r := d.Reason()
	if !strings.HasPrefix(r, "disk full: the history of w-3 and the ledger cannot be written (") || !strings.Contains(r, "/home/x/panes/w-3") {
		t.Fatalf("reason %q", r)
	}
	d.Note("the history of w-3", nil)
	d.Note("the ledger", nil)
	if r := d.Reason(); r != "" || changed.Load() != 4 {
		t.Fatalf("after the writes succeeded: reason %q, %d changes (want 4)", r, changed.Load())
	}
}

// TestRetryRunsUntilItSucceeds: a writer that writes only when asked is
// retried on the timer until its write succeeds, then cleared.
func TestRetryRunsUntilItSucceeds(t *testing.T) {
	t.Parallel()
	d := New(nil)
	defer d.Close()
	var tries atomic.Int32
	d.Retry("the database", syscall.ENOSPC, func() error {
		if tries.Add(1) < 2 {
			return syscall.ENOSPC
		}
		return nil
	})
	if d.Reason() == "" {
		t.Fatal("a refused write does not stand")
	}
	deadline := time.Now().Add(20 * time.Second)
	for d.Reason() != "" {
		if time.Now().After(deadline) {
			t.Fatalf("still %q after %d tries", d.Reason(), tries.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := tries.Load(); n != 2 {
		t.Fatalf("%d tries, want 2", n)
	}
}

// TestRetryNowWhenRoomIsMade: a waiting retry runs at once when another
// writer's write succeeds again (not a timer later).
func TestRetryNowWhenRoomIsMade(t *testing.T) {
	t.Parallel()
	d := New(nil)
	defer d.Close()
	ran := make(chan struct{}, 10)
	d.Note("the ledger", syscall.ENOSPC)
	d.Retry("the database", syscall.ENOSPC, func() error { ran <- struct{}{}; return nil })
	d.mu.Lock()
	d.timer.Stop() // the timer's first run would come in a second: only room made runs it now
	d.timer = nil
	d.mu.Unlock()
	d.Note("the ledger", nil)
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("the retry did not run when room was made")
	}
}
