package schema

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// t0 is a whole second: its text ("…:00Z") sorts after that of a time half
// a second later ("…:00.5Z"), so a comparison of the text and not of the
// instant shows.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func mustEnqueue(t *testing.T, s *Store, event string, sinks []string, at time.Time) {
	t.Helper()
	if _, err := s.EnqueueNotify(context.Background(), event, `{"id":"`+event+`"}`, sinks, at); err != nil {
		t.Fatal(err)
	}
}

func ids(items []NotifyItem) []int64 {
	var out []int64
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// Sinks: a name is added once (ErrExists after), put replaces it and keeps
// when it was made, the list is by name, and deleting one removes its
// unsent queue rows (not its sent ones, nor another sink's).
func TestNotifySinks(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifySinks)
}

func testNotifySinks(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	tg := NotifySink{Name: "tg", Type: "telegram", URL: "http://127.0.0.1:1", Chat: "42", Events: "needs-you", SecretRef: "file:/s/tg"}
	if err := s.AddNotifySink(ctx, tg); err != nil {
		t.Fatal(err)
	}
	if err := s.AddNotifySink(ctx, NotifySink{Name: "tg", Type: "webhook"}); !errors.Is(err, ErrExists) {
		t.Fatalf("adding tg twice: %v, want ErrExists", err)
	}
	if err := s.PutNotifySink(ctx, NotifySink{Name: "hook", Type: "webhook", URL: "http://h", Team: "dev", SecretRef: "env:HOOK"}); err != nil {
		t.Fatal(err)
	}
	ks, err := s.NotifySinks(ctx)
	if err != nil || len(ks) != 2 || ks[0].Name != "hook" || ks[1].Name != "tg" {
		t.Fatalf("sinks = %+v, %v; want hook and tg", ks, err)
	}
	made := ks[1].CreatedAt
	if ks[1].Type != "telegram" || ks[1].Chat != "42" || ks[1].Events != "needs-you" || ks[1].SecretRef != "file:/s/tg" || ParseTime(made).IsZero() {
		t.Fatalf("tg = %+v", ks[1])
	}
	if ks[0].Team != "dev" || ks[0].SecretRef != "env:HOOK" {
		t.Fatalf("hook = %+v", ks[0])
	}
	tg.Chat, tg.Events, tg.CreatedAt = "43", "", FormatTime(t0)
	if err := s.PutNotifySink(ctx, tg); err != nil {
		t.Fatal(err)
	}
	ks, _ = s.NotifySinks(ctx)
	if ks[1].Chat != "43" || ks[1].Events != "" || ks[1].CreatedAt != made || len(ks) != 2 {
		t.Fatalf("tg put again = %+v (made %s), of %d", ks[1], made, len(ks))
	}

	mustEnqueue(t, s, "e1", []string{"tg", "hook"}, t0)
	mustEnqueue(t, s, "e2", []string{"tg"}, t0)
	items, err := s.ClaimNotify(ctx, "n1", []string{"tg"}, t0, time.Minute, 1)
	if err != nil || len(items) != 1 {
		t.Fatalf("claim = %+v, %v", items, err)
	}
	if err := s.NotifySent(ctx, items[0].ID, "n1", 200, "ok", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteNotifySink(ctx, "tg"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteNotifySink(ctx, "tg"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting tg twice: %v, want ErrNotFound", err)
	}
	var left []string
	for _, e := range []string{"e1", "e2"} {
		its, _ := s.NotifyItems(ctx, e)
		for _, it := range its {
			left = append(left, fmt.Sprintf("%s/%s/%t", e, it.Sink, it.SentAt != ""))
		}
	}
	if want := []string{"e1/tg/true", "e1/hook/false"}; !slices.Equal(left, want) {
		t.Fatalf("queue after deleting tg = %v, want %v", left, want)
	}
	if ks, _ := s.NotifySinks(ctx); len(ks) != 1 || ks[0].Name != "hook" {
		t.Fatalf("sinks after deleting tg = %+v", ks)
	}
}

// An event is queued once per sink however often it is enqueued, and
// the queue survives a reopen.
func TestNotifyEnqueueIdempotent(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyEnqueueIdempotent)
}

func testNotifyEnqueueIdempotent(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	n, err := s.EnqueueNotify(ctx, "e1", `{"a":1}`, []string{"a", "b"}, t0)
	if err != nil || n != 2 {
		t.Fatalf("first enqueue added %d, %v; want 2", n, err)
	}
	if n, err := s.EnqueueNotify(ctx, "e1", `{"a":2}`, []string{"a", "b", "c"}, t0.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("second enqueue added %d, %v; want 1 (c)", n, err)
	}
	if n, err := s.EnqueueNotify(ctx, "e1", `{}`, nil, t0); err != nil || n != 0 {
		t.Fatalf("enqueue to no sink added %d, %v", n, err)
	}
	s.Close()
	s = reopen()
	items, err := s.NotifyItems(ctx, "e1")
	if err != nil || len(items) != 3 {
		t.Fatalf("items = %+v, %v; want 3", items, err)
	}
	a := items[0]
	if a.Sink != "a" || a.Payload != `{"a":1}` || a.NextAt != FormatTime(t0) || a.CreatedAt != FormatTime(t0) ||
		a.Attempts != 0 || a.SentAt != "" || a.ClaimedBy != "" || a.ClaimedUntil != "" {
		t.Fatalf("a's row = %+v", a)
	}
	if c := items[2]; c.Sink != "c" || c.Payload != `{"a":2}` {
		t.Fatalf("c's row = %+v", c)
	}
}

// A claim takes the due rows of the sinks asked for, oldest first, up to
// the limit; no one else takes them until the lease lapses; the lapsed
// holder can no longer report on them; a sent row is never claimed again.
func TestNotifyClaimLease(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyClaimLease)
}

func testNotifyClaimLease(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	mustEnqueue(t, s, "e1", []string{"a", "b"}, t0)
	mustEnqueue(t, s, "e2", []string{"a"}, t0)
	mustEnqueue(t, s, "e3", []string{"a"}, t0.Add(time.Hour)) // not due
	mustEnqueue(t, s, "e4", []string{"z"}, t0)                // another sender's sink
	half := t0.Add(500 * time.Millisecond)

	if items, err := s.ClaimNotify(ctx, "n1", []string{"a", "b"}, t0.Add(-time.Second), time.Minute, 10); err != nil || len(items) != 0 {
		t.Fatalf("claim before due = %+v, %v", items, err)
	}
	items, err := s.ClaimNotify(ctx, "n1", []string{"a", "b"}, half, time.Minute, 2)
	if err != nil || len(items) != 2 || items[0].EventID != "e1" || items[0].Sink != "a" || items[1].EventID != "e1" || items[1].Sink != "b" {
		t.Fatalf("claim of 2 = %+v, %v; want e1 to a and b", items, err)
	}
	if it := items[0]; it.ClaimedBy != "n1" || it.ClaimedUntil != FormatTime(half.Add(time.Minute)) {
		t.Fatalf("claimed row = %+v", it)
	}
	rest, err := s.ClaimNotify(ctx, "n1", []string{"a", "b"}, half, time.Minute, 10)
	if err != nil || len(rest) != 1 || rest[0].EventID != "e2" {
		t.Fatalf("claim of the rest = %+v, %v; want e2 only", rest, err)
	}
	if other, err := s.ClaimNotify(ctx, "n2", []string{"a", "b"}, half.Add(59*time.Second), time.Minute, 10); err != nil || len(other) != 0 {
		t.Fatalf("n2 claimed %+v, %v while n1's lease runs", other, err)
	}
	// n1 is gone: its lease lapses and n2 takes its rows.
	taken, err := s.ClaimNotify(ctx, "n2", []string{"a", "b"}, half.Add(time.Minute), time.Minute, 10)
	if err != nil || !slices.Equal(ids(taken), append(ids(items), rest[0].ID)) {
		t.Fatalf("n2 after n1's lease = %v, %v; want %v and %d", ids(taken), err, ids(items), rest[0].ID)
	}
	if err := s.NotifySent(ctx, items[0].ID, "n1", 200, "ok", half); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("n1 reports a row n2 took: %v, want ErrNotClaimed", err)
	}
	if err := s.NotifyFailed(ctx, items[0].ID, "n1", 500, "x", half, half); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("n1 fails a row n2 took: %v, want ErrNotClaimed", err)
	}
	if err := s.NotifySent(ctx, items[0].ID, "n2", 204, `{"ok":true}`, half.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.NotifySent(ctx, items[0].ID, "n2", 204, "", half.Add(time.Minute)); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("sent twice: %v, want ErrNotClaimed", err)
	}
	if err := s.NotifySent(ctx, 9999, "n2", 200, "", half); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a row that does not exist: %v, want ErrNotFound", err)
	}
	// Hours later every lease has lapsed: the sent row is not claimed
	// again, the others are, with e3 now due.
	later, err := s.ClaimNotify(ctx, "n3", []string{"a", "b"}, t0.Add(2*time.Hour), time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range later {
		got = append(got, it.EventID+"/"+it.Sink)
	}
	if want := []string{"e1/b", "e2/a", "e3/a"}; !slices.Equal(got, want) {
		t.Fatalf("claim hours later = %v, want %v", got, want)
	}
	sent, _ := s.NotifyItems(ctx, "e1")
	if a := sent[0]; a.SentAt != FormatTime(half.Add(time.Minute)) || a.Status != 204 || a.Answer != `{"ok":true}` || a.ClaimedBy != "n2" {
		t.Fatalf("the sent row = %+v", a)
	}
	if items, err := s.ClaimNotify(ctx, "n1", nil, t0.Add(3*time.Hour), time.Minute, 10); err != nil || len(items) != 0 {
		t.Fatalf("claim of no sink = %+v, %v", items, err)
	}
}

// A failed attempt releases the claim, counts, keeps its first error's
// time and is not claimed again before the time the sender gave; the
// next due time says when.
func TestNotifyFailedBackoff(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyFailedBackoff)
}

func testNotifyFailedBackoff(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	sinks := []string{"a"}
	if _, ok, err := s.NotifyNextDue(ctx, sinks); ok || err != nil {
		t.Fatalf("next due of an empty queue: %v, %v", ok, err)
	}
	mustEnqueue(t, s, "e1", sinks, t0)
	if at, ok, err := s.NotifyNextDue(ctx, sinks); !ok || err != nil || !at.Equal(t0) {
		t.Fatalf("next due = %s, %v, %v; want %s", at, ok, err, t0)
	}
	items, err := s.ClaimNotify(ctx, "n1", sinks, t0, time.Minute, 10)
	if err != nil || len(items) != 1 {
		t.Fatalf("claim = %+v, %v", items, err)
	}
	id := items[0].ID
	// Claimed: not due again before its lease lapses.
	if at, ok, _ := s.NotifyNextDue(ctx, sinks); !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next due while claimed = %s, %v; want the lease's end", at, ok)
	}
	if err := s.NotifyFailed(ctx, id, "n1", 500, "boom", t0.Add(10*time.Second), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	it, _ := s.NotifyItems(ctx, "e1")
	if f := it[0]; f.Attempts != 1 || f.Status != 500 || f.LastError != "boom" || f.FirstErrorAt != FormatTime(t0.Add(time.Second)) ||
		f.ClaimedBy != "" || f.ClaimedUntil != "" || f.NextAt != FormatTime(t0.Add(10*time.Second)) || f.SentAt != "" {
		t.Fatalf("after a failure = %+v", f)
	}
	if at, ok, _ := s.NotifyNextDue(ctx, sinks); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("next due after a failure = %s, %v; want its backoff", at, ok)
	}
	if got, _ := s.ClaimNotify(ctx, "n1", sinks, t0.Add(9*time.Second), time.Minute, 10); len(got) != 0 {
		t.Fatalf("claimed before its backoff ended: %+v", got)
	}
	got, err := s.ClaimNotify(ctx, "n2", sinks, t0.Add(10*time.Second), time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].ID != id || got[0].Attempts != 1 {
		t.Fatalf("claim after the backoff = %+v, %v", got, err)
	}
	if err := s.NotifyFailed(ctx, id, "n2", 401, "unauthorized", t0.Add(time.Hour), t0.Add(11*time.Second)); err != nil {
		t.Fatal(err)
	}
	it, _ = s.NotifyItems(ctx, "e1")
	if f := it[0]; f.Attempts != 2 || f.Status != 401 || f.LastError != "unauthorized" || f.FirstErrorAt != FormatTime(t0.Add(time.Second)) {
		t.Fatalf("after a second failure = %+v; want the first error's time kept", f)
	}
	if err := s.NotifyFailed(ctx, id, "n2", 401, "again", t0, t0); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("failing a row no longer claimed: %v, want ErrNotClaimed", err)
	}
	// The earliest of several.
	mustEnqueue(t, s, "e2", sinks, t0.Add(30*time.Minute))
	if at, ok, _ := s.NotifyNextDue(ctx, sinks); !ok || !at.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("next due of two = %s, %v; want e2's", at, ok)
	}
	if _, ok, _ := s.NotifyNextDue(ctx, []string{"b"}); ok {
		t.Fatal("another sink's row is due for b")
	}
}

// Stats: per sink, the unsent count, the last send, the latest attempt's
// status and error, and since when its oldest unsent row fails.
func TestNotifyStats(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyStats)
}

func testNotifyStats(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	for _, n := range []string{"tg", "hook"} {
		if err := s.AddNotifySink(ctx, NotifySink{Name: n, Type: "webhook"}); err != nil {
			t.Fatal(err)
		}
	}
	tg := []string{"tg"}
	mustEnqueue(t, s, "e1", tg, t0)
	mustEnqueue(t, s, "e2", tg, t0)
	mustEnqueue(t, s, "e3", tg, t0)
	claim := func(now time.Time, n int) []NotifyItem {
		t.Helper()
		items, err := s.ClaimNotify(ctx, "n1", tg, now, time.Minute, n)
		if err != nil || len(items) != n {
			t.Fatalf("claim = %+v, %v; want %d", items, err, n)
		}
		return items
	}
	e1 := claim(t0, 1)[0]
	if err := s.NotifySent(ctx, e1.ID, "n1", 200, "", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	rest := claim(t0.Add(time.Second), 2)
	// e2 fails first at :02, e3 at :04; then e2 again at :04.5 (401),
	// the latest attempt (whose time's text sorts before :04's).
	if err := s.NotifyFailed(ctx, rest[0].ID, "n1", 500, "boom", t0.Add(5*time.Second), t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.NotifyFailed(ctx, rest[1].ID, "n1", 502, "bad gateway", t0.Add(5*time.Second), t0.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	again := claim(t0.Add(5*time.Second), 2)
	if err := s.NotifyFailed(ctx, again[0].ID, "n1", 401, "unauthorized", t0.Add(time.Hour), t0.Add(4*time.Second+500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	stats, err := s.NotifyStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []NotifyStat{
		{Sink: "hook"},
		{Sink: "tg", Pending: 2, LastSentAt: FormatTime(t0.Add(time.Second)), LastStatus: 401, LastError: "unauthorized",
			FailingSince: FormatTime(t0.Add(2 * time.Second))},
	}
	if !slices.Equal(stats, want) {
		t.Fatalf("stats = %+v\nwant %+v", stats, want)
	}
	// Both sent: tg no longer fails; its latest attempt succeeded.
	if err := s.NotifySent(ctx, again[1].ID, "n1", 201, "", t0.Add(6*time.Second)); err != nil {
		t.Fatal(err)
	}
	late := claim(t0.Add(2*time.Hour), 1)
	if err := s.NotifySent(ctx, late[0].ID, "n1", 200, "", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	stats, _ = s.NotifyStats(ctx)
	want[1] = NotifyStat{Sink: "tg", LastSentAt: FormatTime(t0.Add(2 * time.Hour)), LastStatus: 200}
	if !slices.Equal(stats, want) {
		t.Fatalf("stats once all sent = %+v\nwant %+v", stats, want)
	}
}

// Claimers racing on two connections (two stores on one database, as two
// nodes) never get the same row, and between them get every row.
func TestNotifyClaimConcurrent(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyClaimConcurrent)
}

func testNotifyClaimConcurrent(t *testing.T, reopen func() *Store) {
	stores := []*Store{reopen(), reopen()}
	ctx := context.Background()
	sinks := []string{"a", "b"}
	const events = 40
	for i := range events {
		mustEnqueue(t, stores[0], fmt.Sprintf("e%d", i), sinks, t0)
	}
	const claimers = 6
	got := make([][]int64, claimers)
	errs := make(chan error, claimers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, node := stores[c%2], fmt.Sprintf("n%d", c)
			for {
				items, err := s.ClaimNotify(ctx, node, sinks, t0, time.Hour, 3)
				if err != nil {
					errs <- err
					return
				}
				if len(items) == 0 {
					return
				}
				for _, it := range items {
					if it.ClaimedBy != node {
						errs <- fmt.Errorf("%s got row %d claimed by %s", node, it.ID, it.ClaimedBy)
						return
					}
					got[c] = append(got[c], it.ID)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for c, ids := range got {
		for _, id := range ids {
			if prev, dup := seen[id]; dup {
				t.Fatalf("row %d claimed by n%d and n%d", id, prev, c)
			}
			seen[id] = c
		}
	}
	if len(seen) != events*len(sinks) {
		t.Fatalf("claimed %d rows, want %d", len(seen), events*len(sinks))
	}
}

// The first answer of an event wins; a second gets the first back. The
// answers read by pane, by task and all, oldest first.
func TestNotifyAnswers(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyAnswers)
}

func testNotifyAnswers(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	first := NotifyAnswer{EventID: "e1", Pane: "w-3", Task: 7, Action: "approve", By: "tg:alice", Via: "tg", At: FormatTime(t0.Add(time.Second))}
	got, ok, err := s.RecordNotifyAnswer(ctx, first)
	if err != nil || !ok || got != first {
		t.Fatalf("first answer = %+v, %v, %v", got, ok, err)
	}
	got, ok, err = s.RecordNotifyAnswer(ctx, NotifyAnswer{EventID: "e1", Pane: "w-3", Task: 7, Action: "deny", By: "tg:bob", Via: "tg"})
	if err != nil || ok || got != first {
		t.Fatalf("second answer = %+v, %v, %v; want the first and false", got, ok, err)
	}
	// Recorded out of order: read oldest first (t0 sorts after
	// t0+0.5s as text).
	for _, a := range []NotifyAnswer{
		{EventID: "e2", Pane: "w-3", Task: 8, Action: "option:2", At: FormatTime(t0.Add(500 * time.Millisecond))},
		{EventID: "e3", Pane: "w-4", Task: 7, Action: "restart", At: FormatTime(t0)},
		{EventID: "e4", Pane: "w-3", Action: "deny"},
	} {
		if _, ok, err := s.RecordNotifyAnswer(ctx, a); err != nil || !ok {
			t.Fatalf("answer %s: %v, %v", a.EventID, ok, err)
		}
	}
	if _, _, err := s.RecordNotifyAnswer(ctx, NotifyAnswer{EventID: "e5", Action: "deny", At: "yesterday"}); err == nil {
		t.Fatal("an answer at a time that is not one was recorded")
	}
	events := func(as []NotifyAnswer, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out string
		for _, a := range as {
			out += a.EventID + " "
		}
		return out
	}
	if got := events(s.NotifyAnswers(ctx, "w-3")); got != "e2 e1 e4 " {
		t.Errorf("w-3's answers = %s, want e2 e1 e4", got)
	}
	if got := events(s.NotifyAnswers(ctx, "")); got != "e3 e2 e1 e4 " {
		t.Errorf("all answers = %s, want e3 e2 e1 e4", got)
	}
	if got := events(s.NotifyAnswersOfTask(ctx, 7)); got != "e3 e1 " {
		t.Errorf("task 7's answers = %s, want e3 e1", got)
	}
	all, _ := s.NotifyAnswers(ctx, "w-3")
	if a := all[1]; a != first {
		t.Errorf("e1 read back = %+v, want %+v", a, first)
	}
	if a := all[2]; ParseTime(a.At).IsZero() {
		t.Errorf("e4 recorded with no time: %+v", a)
	}
}

// Flaps: the first event of a key is sent and opens a window; the next
// ones in it are held back (counted, the last kept); once the window ends
// its digest is due and taken once — or handed to the event that opens the
// next window.
func TestNotifyFlaps(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyFlaps)
}

func testNotifyFlaps(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	const w = time.Minute
	flap := func(key string, at time.Time, ev string) (bool, NotifyFlap) {
		t.Helper()
		send, d, err := s.NotifyFlap(ctx, key, at, w, ev)
		if err != nil {
			t.Fatal(err)
		}
		return send, d
	}
	if send, d := flap("w-1/approval", t0, "ev1"); !send || d != (NotifyFlap{}) {
		t.Fatalf("first event: send %v, digest %+v", send, d)
	}
	if send, _ := flap("w-1/approval", t0.Add(10*time.Second), "ev2"); send {
		t.Fatal("an event inside the window was sent")
	}
	if send, _ := flap("w-1/approval", t0.Add(59*time.Second+500*time.Millisecond), "ev3"); send {
		t.Fatal("an event inside the window was sent")
	}
	if send, _ := flap("w-2/approval", t0.Add(10*time.Second), "other"); !send {
		t.Fatal("another key's first event was held back")
	}
	if due, err := s.DueNotifyDigests(ctx, t0.Add(59*time.Second), w); err != nil || len(due) != 0 {
		t.Fatalf("digests due inside the window: %+v, %v", due, err)
	}
	due, err := s.DueNotifyDigests(ctx, t0.Add(w), w)
	want := NotifyFlap{Key: "w-1/approval", WindowStart: FormatTime(t0), Suppressed: 2, LastEvent: "ev3"}
	if err != nil || len(due) != 1 || due[0] != want {
		t.Fatalf("digests due = %+v, %v; want %+v", due, err, want)
	}
	if ok, err := s.TakeNotifyDigest(ctx, want.Key, want.WindowStart); err != nil || !ok {
		t.Fatalf("take the digest: %v, %v", ok, err)
	}
	if ok, _ := s.TakeNotifyDigest(ctx, want.Key, want.WindowStart); ok {
		t.Fatal("a digest taken twice")
	}
	if due, _ := s.DueNotifyDigests(ctx, t0.Add(w), w); len(due) != 0 {
		t.Fatalf("digests due once taken: %+v", due)
	}

	// A window that held events back and ended: the event opening the next
	// window gets its digest, and the digest can no longer be taken.
	t1 := t0.Add(time.Hour)
	flap("w-1/approval", t1, "ev4")
	flap("w-1/approval", t1.Add(time.Second), "ev5")
	send, d := flap("w-1/approval", t1.Add(w), "ev6")
	if want := (NotifyFlap{Key: "w-1/approval", WindowStart: FormatTime(t1), Suppressed: 1, LastEvent: "ev5"}); !send || d != want {
		t.Fatalf("the event after a window = send %v, digest %+v; want true, %+v", send, d, want)
	}
	if send, _ := flap("w-1/approval", t1.Add(w+time.Second), "ev7"); send {
		t.Fatal("an event inside the new window was sent")
	}
	if ok, _ := s.TakeNotifyDigest(ctx, "w-1/approval", FormatTime(t1)); ok {
		t.Fatal("a digest handed out twice (or the new window's taken for the old)")
	}
	if send, d := flap("w-1/approval", t1.Add(3*w), "ev8"); !send || d.Suppressed != 1 || d.LastEvent != "ev7" {
		t.Fatalf("after the new window: send %v, digest %+v; want ev7's", send, d)
	}
	if send, d := flap("w-1/approval", t1.Add(5*w), "ev9"); !send || d != (NotifyFlap{}) {
		t.Fatalf("after a window that held nothing: send %v, digest %+v", send, d)
	}
}

// Events of a key racing on two connections, the key's first ones and
// the first ones after its window ended: one of each is sent.
func TestNotifyFlapConcurrent(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyFlapConcurrent)
}

func testNotifyFlapConcurrent(t *testing.T, reopen func() *Store) {
	stores := []*Store{reopen(), reopen()}
	ctx := context.Background()
	keys := []string{"w-1/question", "w-2/question"}
	// w-2 had a window, long ended.
	if _, _, err := stores[0].NotifyFlap(ctx, keys[1], t0.Add(-time.Hour), time.Minute, "old"); err != nil {
		t.Fatal(err)
	}
	const racers = 8
	sends := make(chan string, 2*racers)
	errs := make(chan error, 2*racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 * racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			key := keys[i%2]
			send, _, err := stores[i/2%2].NotifyFlap(ctx, key, t0, time.Minute, fmt.Sprint(i))
			if err != nil {
				errs <- err
				return
			}
			if send {
				sends <- key
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	close(sends)
	for err := range errs {
		t.Fatal(err)
	}
	n := map[string]int{}
	for key := range sends {
		n[key]++
	}
	if n[keys[0]] != 1 || n[keys[1]] != 1 {
		t.Fatalf("racing events sent: %v, want one of each key", n)
	}
	due, err := stores[0].DueNotifyDigests(ctx, t0.Add(time.Minute), time.Minute)
	if err != nil || len(due) != 2 || due[0].Suppressed != racers-1 || due[1].Suppressed != racers-1 {
		t.Fatalf("digests = %+v, %v; want %d held back of each key", due, err, racers-1)
	}
}

// Open needs: one row per key (the first event's), found by its event,
// gone once closed.
func TestNotifyOpenNeeds(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyOpenNeeds)
}

func testNotifyOpenNeeds(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	a := OpenNeed{Key: "w-3/approval", EventID: "e1", Pane: "w-3", Kind: "approval", OpenedAt: FormatTime(t0), Detail: "rm -rf build"}
	for _, n := range []OpenNeed{a, {Key: "w-4/question", EventID: "e2", Pane: "w-4", Kind: "question"}} {
		if added, err := s.OpenNeed(ctx, n); err != nil || !added {
			t.Fatalf("open %s: %v, %v", n.Key, added, err)
		}
	}
	if added, err := s.OpenNeed(ctx, OpenNeed{Key: a.Key, EventID: "e9", Pane: "w-3", Kind: "approval"}); err != nil || added {
		t.Fatalf("opening an open key again: %v, %v; want false", added, err)
	}
	s.Close()
	s = reopen()
	open, err := s.OpenNeeds(ctx)
	if err != nil || len(open) != 2 || open[0] != a || open[1].Key != "w-4/question" || ParseTime(open[1].OpenedAt).IsZero() {
		t.Fatalf("open needs = %+v, %v", open, err)
	}
	if n, err := s.OpenNeedByEvent(ctx, "e1"); err != nil || n != a {
		t.Fatalf("need of e1 = %+v, %v", n, err)
	}
	if _, err := s.OpenNeedByEvent(ctx, "e9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("need of an event that opened nothing: %v, want ErrNotFound", err)
	}
	if err := s.CloseNeeds(ctx, []string{a.Key, "w-9/none"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenNeedByEvent(ctx, "e1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("need of a closed episode: %v, want ErrNotFound", err)
	}
	if open, _ := s.OpenNeeds(ctx); len(open) != 1 || open[0].EventID != "e2" {
		t.Fatalf("open needs after closing one = %+v", open)
	}
	if added, _ := s.OpenNeed(ctx, OpenNeed{Key: a.Key, EventID: "e10"}); !added {
		t.Fatal("a closed key could not open again")
	}
}

// Mutes: set, replaced, listed, removed (ErrNotFound when none).
func TestNotifyMutes(t *testing.T) {
	t.Parallel()
	eachStore(t, testNotifyMutes)
}

func testNotifyMutes(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	if m, err := s.NotifyMutes(ctx); err != nil || len(m) != 0 {
		t.Fatalf("mutes of a new home = %v, %v", m, err)
	}
	for _, m := range [][2]string{{"w-3", FormatTime(t0)}, {"dev", ""}, {"w-3", FormatTime(t0.Add(time.Hour))}} {
		if err := s.SetNotifyMute(ctx, m[0], m[1]); err != nil {
			t.Fatal(err)
		}
	}
	m, err := s.NotifyMutes(ctx)
	if want := map[string]string{"w-3": FormatTime(t0.Add(time.Hour)), "dev": ""}; err != nil || len(m) != 2 || m["w-3"] != want["w-3"] || m["dev"] != "" {
		t.Fatalf("mutes = %v, %v; want %v", m, err, want)
	}
	if err := s.DeleteNotifyMute(ctx, "dev"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteNotifyMute(ctx, "dev"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unmuting twice: %v, want ErrNotFound", err)
	}
	if m, _ := s.NotifyMutes(ctx); len(m) != 1 {
		t.Fatalf("mutes after unmuting dev = %v", m)
	}
}

// A database made before 0013 gets the notification tables and keeps its
// panes.
func TestNotifyMigration(t *testing.T) {
	t.Parallel()
	eachOldStore(t, testNotifyMigration)
}

func testNotifyMigration(t *testing.T, old *conn, reopen func() *Store) {
	ctx := context.Background()
	applyBefore(t, old, 13)
	if _, err := old.ExecContext(ctx, `INSERT INTO agent_config (pane_id, title, agent_type, workspace, backend, created_at, updated_at)
		VALUES ('w-1', 'lead', 'claude', '/w', 'tmux', 't0', 't1')`); err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, `SELECT COUNT(*) FROM notify_queue`); err == nil {
		t.Fatal("the old database has notify_queue: the test does not start where it should")
	}
	old.Close()
	s := reopen()
	if p, err := s.GetPane(ctx, "w-1"); err != nil || p.Title != "lead" {
		t.Fatalf("the pane after 0013: %+v, %v", p, err)
	}
	var n int
	if err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM schema_migrations WHERE version = 13`); err != nil || n != 1 {
		t.Fatalf("0013 recorded %d times, %v", n, err)
	}
	if n, err := s.EnqueueNotify(ctx, "e1", "{}", []string{"a"}, t0); err != nil || n != 1 {
		t.Fatalf("enqueue after 0013: %d, %v", n, err)
	}
	if err := s.AddNotifySink(ctx, NotifySink{Name: "a", Type: "ntfy"}); err != nil {
		t.Fatal(err)
	}
	if stats, err := s.NotifyStats(ctx); err != nil || len(stats) != 1 || stats[0].Pending != 1 {
		t.Fatalf("stats after 0013: %+v, %v", stats, err)
	}
}

// A node starting again releases the claims it held when it died: its
// rows are due at once, to it or another node; sent rows stay sent.
func TestReleaseNotifyClaims(t *testing.T) {
	t.Parallel()
	eachStore(t, testReleaseNotifyClaims)
}

func testReleaseNotifyClaims(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	if _, err := s.EnqueueNotify(ctx, "e1", `{}`, []string{"a", "b"}, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.ClaimNotify(ctx, "n1", []string{"a", "b"}, t0, time.Hour, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	if err := s.NotifySent(ctx, got[0].ID, "n1", 200, "ok", t0); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.ClaimNotify(ctx, "n1", []string{"a", "b"}, t0.Add(time.Minute), time.Hour, 10); len(again) != 0 {
		t.Fatalf("claimed before the release: %+v", again)
	}
	if err := s.ReleaseNotifyClaims(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	again, err := s.ClaimNotify(ctx, "n1", []string{"a", "b"}, t0.Add(time.Minute), time.Hour, 10)
	if err != nil || len(again) != 1 || again[0].ID != got[1].ID {
		t.Fatalf("after the release, claim = %+v, %v; want only the unsent row %d", again, err, got[1].ID)
	}
}
