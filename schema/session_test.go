package schema

import (
	"context"
	"errors"
	"testing"
)

// A CLI agent pane's session id is empty at create, recorded, replaced by
// a later one, kept across a reopen and read by ListPanes too; a pane
// that does not exist is ErrNotFound.
func TestPaneSession(t *testing.T) { eachStore(t, testPaneSession) }

func testPaneSession(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	p := newPane("a")
	p.Type = "claude"
	a, err := s.CreatePane(ctx, p, ws)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetPane(ctx, a.ID); got.SessionID != "" || got.SessionAt != "" {
		t.Fatalf("a new pane has session %q at %q", got.SessionID, got.SessionAt)
	}
	for _, sid := range []string{"13665f94-aaaa", "77d1c0de-bbbb"} {
		if err := s.SetPaneSession(ctx, a.ID, sid, Now()); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = reopen()
	got, err := s.GetPane(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.SessionID != "77d1c0de-bbbb" || ParseTime(got.SessionAt).IsZero() {
		t.Errorf("session after two records and a reopen = %q at %q, want the later one", got.SessionID, got.SessionAt)
	}
	all, err := s.ListPanes(ctx)
	if err != nil || len(all) != 1 || all[0].SessionID != "77d1c0de-bbbb" {
		t.Errorf("ListPanes = %+v, %v; want the session", all, err)
	}
	if err := s.SetPaneSession(ctx, "w-99", "x", Now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("session of a missing pane: %v, want ErrNotFound", err)
	}
}
