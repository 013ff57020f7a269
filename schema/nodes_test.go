package schema

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNodes(t *testing.T) { eachStore(t, testNodes) }

func testNodes(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	before := time.Now()
	if err := s.RegisterNode(ctx, Node{Name: "b", Addr: "h2:7000", PID: 20, Version: "v1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterNode(ctx, Node{Name: "a", Addr: "h1:7000", PID: 10, Version: "v1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	ns, err := s.Nodes(ctx)
	if err != nil || len(ns) != 2 || ns[0].Name != "a" || ns[1].Name != "b" {
		t.Fatalf("nodes = %+v, %v; want a and b", ns, err)
	}
	a := ns[0]
	if a.Addr != "h1:7000" || a.PID != 10 || a.Version != "v1" || a.StartedAt != a.HeartbeatAt {
		t.Fatalf("node a = %+v", a)
	}
	if lease := ParseTime(a.LeaseUntil); lease.Before(before.Add(time.Minute)) {
		t.Fatalf("a's lease until %s, want a minute from its registration", a.LeaseUntil)
	}

	// Renewing moves the heartbeat and the lease; registering again (a
	// restart) replaces address, pid and version.
	if err := s.RenewNode(ctx, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewNode(ctx, "nobody", time.Hour); !errors.Is(err, ErrNotFound) {
		t.Fatalf("renew an unregistered node: %v, want ErrNotFound", err)
	}
	if err := s.RegisterNode(ctx, Node{Name: "b", Addr: "h3:7001", PID: 21, Version: "v2"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	ns, _ = s.Nodes(ctx)
	if lease := ParseTime(ns[0].LeaseUntil); lease.Before(before.Add(time.Hour)) {
		t.Fatalf("a's lease until %s after renewing for an hour", ns[0].LeaseUntil)
	}
	if ParseTime(ns[0].HeartbeatAt).Before(ParseTime(a.HeartbeatAt)) || ns[0].StartedAt != a.StartedAt {
		t.Fatalf("a after renewing = %+v, before %+v", ns[0], a)
	}
	if b := ns[1]; b.Addr != "h3:7001" || b.PID != 21 || b.Version != "v2" || len(ns) != 2 {
		t.Fatalf("b registered again = %+v (of %d nodes)", b, len(ns))
	}

	// Leaving ends the lease now.
	if err := s.LeaveNode(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	ns, _ = s.Nodes(ctx)
	if lease := ParseTime(ns[0].LeaseUntil); lease.After(time.Now()) {
		t.Fatalf("a's lease until %s after it left", ns[0].LeaseUntil)
	}
}

func TestAdoptPanes(t *testing.T) { eachStore(t, testAdoptPanes) }

func testAdoptPanes(t *testing.T, reopen func() *Store) {
	s := reopen()
	ctx := context.Background()
	for _, node := range []string{"", "", "other"} {
		p := newPane("p")
		p.Node = node
		if _, err := s.CreatePane(ctx, p, ws); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.AdoptPanes(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	// SQLite: one home, one supervisor, every pane is its. PostgreSQL:
	// only the panes of no node.
	want := map[string]string{"w-1": "me", "w-2": "me", "w-3": "me"}
	if s.Dialect() == Postgres {
		want["w-3"] = "other"
	}
	wantN := int64(3)
	if s.Dialect() == Postgres {
		wantN = 2
	}
	ps, _ := s.ListPanes(ctx)
	for _, p := range ps {
		if p.Node != want[p.ID] {
			t.Errorf("%s node = %q, want %q", p.ID, p.Node, want[p.ID])
		}
	}
	if n != wantN {
		t.Fatalf("adopted %d panes, want %d", n, wantN)
	}
	if n, err := s.AdoptPanes(ctx, "me"); err != nil || n != 0 {
		t.Fatalf("adopting again changed %d rows, %v", n, err)
	}
	p, err := s.GetPane(ctx, "w-1")
	if err != nil || p.Node != "me" {
		t.Fatalf("GetPane w-1 = %+v, %v", p, err)
	}
}
