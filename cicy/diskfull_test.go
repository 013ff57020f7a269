package cicy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cicy-ai/cicy-agent/schema/disktest"
)

// fullDisk fails the history's writes with ENOSPC while it is full, and
// records what the agent told of its writes (Env.OnWrite).
type fullDisk struct {
	full  atomic.Bool
	mu    sync.Mutex
	told  []error
	clock Clock // the agent's clock, when the test drives it
}

func (d *fullDisk) env(e *Env) {
	e.writeFault = func(string) error {
		if d.full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}
	e.OnWrite = func(err error) {
		d.mu.Lock()
		d.told = append(d.told, err)
		d.mu.Unlock()
	}
	if d.clock != nil {
		e.Clock = d.clock
	}
}

// last is how many writes the agent told of, and what it told of the
// last.
func (d *fullDisk) last() (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.told) == 0 {
		return 0, nil
	}
	return len(d.told), d.told[len(d.told)-1]
}

// onDisk reports whether current.json holds text.
func (r *rig) onDisk(text string) bool {
	b, _ := os.ReadFile(filepath.Join(HistoryDir(r.ws), "current.json"))
	return strings.Contains(string(b), text)
}

// checkUnsaved: a turn on the full disk answered, and said that its
// history is not written, in a sentence that starts "disk full: ".
func checkUnsaved(t *testing.T, res TurnResult, answer string) {
	t.Helper()
	if res.Status != TurnCompleted || res.Answer != answer {
		t.Fatalf("turn = %+v; want completed with %q", res, answer)
	}
	if !strings.HasPrefix(res.Unsaved, "disk full: the history of w-1 could not be written (") ||
		!strings.Contains(res.Unsaved, "no space left on device") || !strings.Contains(res.Unsaved, "kept in memory") {
		t.Fatalf("unsaved = %q; want the disk full sentence (the turn must not end as if its history were written)", res.Unsaved)
	}
}

// TestFullDiskTurnKeepsItsAnswer: a turn whose history cannot be written
// (ENOSPC) ends with "disk full: …", its answer kept in memory; the
// supervisor is told; the next turn writes the kept answer with its own.
func TestFullDiskTurnKeepsItsAnswer(t *testing.T) {
	r := newRig(t, replies(textReply("answer one"), textReply("answer two")))
	disk := &fullDisk{}
	r.tweak = disk.env
	r.start()
	disk.full.Store(true)
	res := r.send("first")
	checkUnsaved(t, res, "answer one")
	if r.onDisk("answer one") {
		t.Fatal("current.json holds the answer though every write failed")
	}
	if _, err := disk.last(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the supervisor was told %v of the last write; want ENOSPC", err)
	}
	if st := r.a.Status(); !strings.Contains(st.Reason, "not saved: disk full") {
		t.Fatalf("status reason %q does not say the turn is not saved", st.Reason)
	}
	disk.full.Store(false)
	if res := r.send("second"); res.Status != TurnCompleted || res.Unsaved != "" {
		t.Fatalf("the turn after the disk was freed = %+v", res)
	}
	var texts []string
	for _, m := range r.history() {
		texts = append(texts, m.JoinedText())
	}
	if got, want := strings.Join(texts, "|"), "first|answer one|second|answer two"; got != want {
		t.Fatalf("history on disk = %s; want %s", got, want)
	}
	if _, err := disk.last(); err != nil {
		t.Fatalf("the supervisor was last told %v; want a write that succeeded", err)
	}
}

// TestFullDiskRetryWritesTheHistory: with no next turn, a timer writes
// the kept history once the disk has room again (a retry while it is
// still full fails and waits longer).
func TestFullDiskRetryWritesTheHistory(t *testing.T) {
	clock := newFakeClock()
	r := newRig(t, replies(textReply("answer one")))
	disk := &fullDisk{clock: clock}
	r.tweak = disk.env
	r.start()
	disk.full.Store(true)
	checkUnsaved(t, r.send("first"), "answer one")
	n, _ := disk.last()
	clock.Advance(saveRetryFirst) // still full: the retry fails
	pollUntil(t, "the first retry", func() bool { m, _ := disk.last(); return m > n })
	if r.onDisk("answer one") {
		t.Fatal("written while the disk was full")
	}
	disk.full.Store(false)
	pollUntil(t, "the history written by the retry", func() bool {
		clock.Advance(saveRetryFirst)
		_, err := os.Stat(filepath.Join(HistoryDir(r.ws), "reply.json"))
		return r.onDisk("answer one") && err == nil
	})
	if rep := r.replyFile(); rep.Status != TurnCompleted || rep.Answer != "answer one" {
		t.Fatalf("reply.json = %+v; want the completed turn", rep)
	}
}

// TestFullDiskStopWritesTheHistory: a stop tries the kept history once
// more.
func TestFullDiskStopWritesTheHistory(t *testing.T) {
	r := newRig(t, replies(textReply("answer one")))
	disk := &fullDisk{clock: newFakeClock()} // no retry comes before the stop
	r.tweak = disk.env
	r.start()
	disk.full.Store(true)
	checkUnsaved(t, r.send("first"), "answer one")
	disk.full.Store(false)
	r.a.Close()
	if !r.onDisk("answer one") {
		t.Fatal("the stop did not write the kept history")
	}
}

// TestFullDiskQueueKeepsTheMessage: while the history cannot take a
// turn's message, the queue file keeps it, also when another message comes:
// a stop that cannot write the history either (a kill -9 alike) does not
// lose them; the next start runs them.
func TestFullDiskQueueKeepsTheMessage(t *testing.T) {
	r := newRig(t, replies(textReply("answer one"), textReply("answer two"), textReply("answer again")))
	disk := &fullDisk{clock: newFakeClock()}
	r.tweak = disk.env
	r.start()
	disk.full.Store(true)
	checkUnsaved(t, r.send("first"), "answer one")
	checkUnsaved(t, r.send("second"), "answer two")
	if b, _ := os.ReadFile(filepath.Join(HistoryDir(r.ws), queueFile)); !strings.Contains(string(b), "first") || !strings.Contains(string(b), "second") {
		t.Fatalf("the queue file dropped a message whose turn could not be written: %s", b)
	}
	r.a.Close() // still full: the history is lost with the process
	r.tweak = nil
	a := r.start()
	pollUntil(t, "the messages run again", func() bool { return a.Status().State == Idle && r.onDisk("answer again") })
	if h := r.history(); len(h) != 2 || h[0].JoinedText() != "first\nsecond" {
		t.Fatalf("history = %+v; want the two messages once and their answer", h)
	}
	if _, err := os.Stat(filepath.Join(HistoryDir(r.ws), queueFile)); !os.IsNotExist(err) {
		t.Fatalf("the queue file is still there (%v) once the history holds its messages", err)
	}
}

// failingUsage is a ledger that refuses every record.
type failingUsage struct{ err error }

func (f failingUsage) RecordUsage(context.Context, UsageRecord) error { return f.err }

// TestUnsavedUsage: a turn whose model calls' usage the ledger did not
// take says so, "disk full: " first when that is the cause.
func TestUnsavedUsage(t *testing.T) {
	for _, tc := range []struct {
		err    error
		prefix string
	}{
		{fmt.Errorf("record usage: %w", syscall.ENOSPC), "disk full: the usage of 2 model calls of this turn is not in the ledger yet"},
		{errors.New("record usage: the database is locked"), "the usage of 2 model calls of this turn is not in the ledger yet (record usage: the database is locked)"},
	} {
		r := newRig(t, replies(shellCall("toolu_1", "true"), textReply("done")))
		r.tweak = func(e *Env) { e.Usage = failingUsage{tc.err} }
		r.start()
		res := r.send("go")
		if res.Status != TurnCompleted || !strings.HasPrefix(res.Unsaved, tc.prefix) {
			t.Errorf("turn = %+v; want unsaved to start %q", res, tc.prefix)
		}
		r.a.Close()
	}
	if got := unsavedText("w-1", fmt.Errorf("write x: %w", syscall.EACCES), 0, nil); strings.HasPrefix(got, "disk full") ||
		!strings.HasPrefix(got, "the history of w-1 could not be written (write x: permission denied)") {
		t.Errorf("another write error: %q; want the write error, not disk full", got)
	}
}

// TestFullDiskReal: the same on a real full disk, a tiny tmpfs that the
// turn's own tool fills: the turn ends with "disk full: …"; once the
// filler is gone, the next turn writes the kept answer.
func TestFullDiskReal(t *testing.T) {
	ws := disktest.Tiny(t, 256<<10)
	filler := filepath.Join(ws, "filler")
	// The answer is longer than the page the tool's own record frees
	// when it ends.
	long := strings.Repeat("answer one ", 2000)
	r := newRig(t, replies(
		shellCall("toolu_1", "head -c 100000000 /dev/zero > "+filler+" 2>/dev/null; echo filled"),
		textReply(long), textReply("answer two")))
	r.ws, r.cfg.Workspace = ws, ws
	mustWrite(t, filepath.Join(ws, "AGENTS.md"), testAgentsMD)
	r.start()
	checkUnsaved(t, r.send("fill the disk"), long)
	if r.onDisk("answer one") {
		t.Fatal("current.json holds the answer on a full disk")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if res := r.send("second"); res.Status != TurnCompleted || res.Unsaved != "" {
		t.Fatalf("the turn after the disk was freed = %+v", res)
	}
	if !r.onDisk("answer one") || !r.onDisk("answer two") {
		t.Fatal("the kept answer was not written with the next turn")
	}
}

// TestToolNotRunWhenItsStartCannotBeRecorded: on a full disk a tool
// call whose start cannot be put on disk is not run (after a crash it
// could not be told from one that ran); its result says so, and the turn
// goes on.
func TestToolNotRunWhenItsStartCannotBeRecorded(t *testing.T) {
	r := newRig(t, replies(shellCall("toolu_1", "echo ran >> ran.txt"), textReply("ok")))
	disk := &fullDisk{}
	r.tweak = disk.env
	r.start()
	disk.full.Store(true)
	res := r.send("run it")
	if res.Status != TurnCompleted || res.Answer != "ok" {
		t.Fatalf("turn = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "ran.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the call ran although its start could not be recorded: %v", err)
	}
	trs := toolResults(lastMessage(t, r.requests(2)[1].Req.Messages))
	if len(trs) != 1 || !trs[0].IsError || !strings.HasPrefix(trs[0].Content, "error: the call was not run: its start could not be recorded (no space left on device in ") {
		t.Fatalf("the call's result: %+v", trs)
	}
}
