package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Refresh rebuilds MEMORY.md after a hand edit, an added or a removed
// file, and only then.
func TestRefresh(t *testing.T) {
	s := Open(t.TempDir())
	if _, _, err := s.Upsert([]Memory{{MemID: "a", Title: "A", Content: "one", Salience: 3}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	refresh := func(want bool, what string) {
		t.Helper()
		got, _, err := s.Refresh()
		if err != nil || got != want {
			t.Fatalf("%s: Refresh = %v, %v; want %v", what, got, err, want)
		}
	}
	refresh(false, "nothing changed since Upsert")
	file := filepath.Join(s.Dir, "a.md")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), "one", "two", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	refresh(true, "a hand edit")
	refresh(false, "no change since")
	if !strings.Contains(s.Index(), "A: two") {
		t.Fatalf("MEMORY.md %q", s.Index())
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "b.md"), []byte("---\nmem_id: b\ntitle: B\nsalience: 5\n---\n\nnew\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refresh(true, "a file added")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	refresh(true, "a file removed")
	if idx := s.Index(); strings.Contains(idx, "A: two") || !strings.Contains(idx, "B: new") {
		t.Fatalf("MEMORY.md %q", idx)
	}
	// A new store (a restarted supervisor) takes MEMORY.md as it is unless
	// a memory file is newer.
	fresh := Open(filepath.Dir(filepath.Dir(s.Dir)))
	if got, _, _ := fresh.Refresh(); got {
		t.Error("a new store rebuilt an index newer than every memory file")
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(s.Dir, "b.md"), later, later); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := Open(filepath.Dir(filepath.Dir(s.Dir))).Refresh(); !got {
		t.Error("a new store kept an index older than a memory file")
	}
}

// BenchmarkRefreshUnchanged is the check made before every request: 100
// memory files, none changed.
func BenchmarkRefreshUnchanged(b *testing.B) {
	s := Open(b.TempDir())
	var ms []Memory
	for i := 0; i < KeepMemories; i++ {
		ms = append(ms, Memory{MemID: fmt.Sprintf("fact_%03d", i), Title: "T", Content: strings.Repeat("c", 200), Salience: 3})
	}
	if _, _, err := s.Upsert(ms, time.Now()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rebuilt, _, err := s.Refresh(); err != nil || rebuilt {
			b.Fatal(rebuilt, err)
		}
	}
}
