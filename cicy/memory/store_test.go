package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

func TestSlug(t *testing.T) {
	ok := []struct{ in, want string }{
		{"preference_color", "preference_color"},
		{"Preference_Color", "preference_color"},
		{"Preference Color", "preference_color"},
		{"  lesson: proxy / localhost?! ", ""}, // has "/": refused, below
		{"fact-Project.X v2!", "fact-project_x_v2"},
		{"__--fact__--", "fact"},
		{"fact___a", "fact___a"},
		{"person 张三 (老板)", "person_张三_老板"},
		{"préférence", "pr_f_rence"},
		{"a\tb\nc", "a_b_c"},
	}
	for _, c := range ok {
		if c.want == "" {
			continue
		}
		got, err := Slug(c.in)
		if err != nil || got != c.want {
			t.Errorf("Slug(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	// 80-byte cap on a rune boundary: 79 ASCII bytes then 3-byte Han runes.
	long := strings.Repeat("a", 79) + "张三李四"
	got, err := Slug(long)
	if err != nil || got != strings.Repeat("a", 79) {
		t.Errorf("Slug(long) = %q (%d bytes), %v", got, len(got), err)
	}
	got, err = Slug(strings.Repeat("记", 40))
	if err != nil || len(got) != 78 || got != strings.Repeat("记", 26) {
		t.Errorf("Slug(han×40) = %q (%d bytes), %v", got, len(got), err)
	}
	// A cut that ends on "_" is trimmed again.
	got, err = Slug(strings.Repeat("a", 79) + " b")
	if err != nil || got != strings.Repeat("a", 79) {
		t.Errorf("Slug(cut at _) = %q, %v", got, err)
	}
	for _, bad := range []string{"../../x", "a/b", `a\b`, "..", "x..y", "", "   ", "!!!", "___", "★"} {
		if got, err := Slug(bad); err == nil {
			t.Errorf("Slug(%q) = %q, want an error", bad, got)
		}
	}
}

func readAll(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustUpsert(t *testing.T, s *Store, now time.Time, ms ...Memory) {
	t.Helper()
	n, probs, err := s.Upsert(ms, now)
	if err != nil || len(probs) != 0 || n != len(ms) {
		t.Fatalf("Upsert: stored %d of %d, problems %v, err %v", n, len(ms), probs, err)
	}
}

func TestRoundTrip(t *testing.T) {
	ws := t.TempDir()
	s := Open(ws)
	if s.Dir != filepath.Join(ws, ".cicy", "memory") {
		t.Fatalf("Dir = %s", s.Dir)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open created the folder: %v", err)
	}
	now := time.Date(2025, 3, 1, 10, 0, 0, 123456789, time.FixedZone("CST", 8*3600))
	mustUpsert(t, s, now, Memory{
		MemID: "preference_color", Type: "Preference", Title: "Favourite\ncolour",
		Content: "\n  The user likes teal.\nNot orange.  \n", Salience: 4, Tags: []string{" domain:ui ", "", "kind:taste"},
	})
	want := "---\nmem_id: preference_color\ntype: preference\ntitle: Favourite colour\nsalience: 4\ntags: domain:ui, kind:taste\nupdated: 2025-03-01T10:00:00+08:00\n---\n\nThe user likes teal.\nNot orange.\n"
	if got := readAll(t, filepath.Join(s.Dir, "preference_color.md")); got != want {
		t.Fatalf("file:\n%q\nwant\n%q", got, want)
	}
	m, err := s.Get("preference_color")
	if err != nil {
		t.Fatal(err)
	}
	if m.MemID != "preference_color" || m.Type != "preference" || m.Title != "Favourite colour" ||
		m.Content != "The user likes teal.\nNot orange." || m.Salience != 4 ||
		strings.Join(m.Tags, "|") != "domain:ui|kind:taste" || !m.Updated.Equal(now.Truncate(time.Second)) ||
		m.File != "preference_color.md" {
		t.Fatalf("Get = %+v", m)
	}
	if got := s.Index(); got != "- [preference★4] Favourite colour: The user likes teal. Not orange.\n" {
		t.Fatalf("index %q", got)
	}
	if got := s.IndexLines(); got != "- preference_color | preference | Favourite colour" {
		t.Fatalf("IndexLines %q", got)
	}
	// Writing the parsed memory again gives the same bytes.
	if got := string(format(m)); got != want {
		t.Fatalf("format(parse(file)) differs:\n%q", got)
	}
	// No temp file is left behind.
	ents, _ := os.ReadDir(s.Dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left over: %s", e.Name())
		}
	}
}

func TestEmptyStore(t *testing.T) {
	s := Open(t.TempDir())
	ms, probs, err := s.List()
	if err != nil || len(ms) != 0 || len(probs) != 0 {
		t.Fatal(ms, probs, err)
	}
	if s.Index() != "" || s.IndexLines() != "(empty)" {
		t.Fatal("empty store has an index")
	}
	if _, err := s.Get("x"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := s.Remove("x"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := s.RebuildIndex(); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.Upsert(nil, t0); n != 0 || err != nil {
		t.Fatal(n, err)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("an empty store created its folder")
	}
	// The last memory removed → MEMORY.md removed.
	mustUpsert(t, s, t0, Memory{MemID: "fact_a", Content: "a"})
	if s.Index() == "" {
		t.Fatal("no index")
	}
	if err := s.Remove("fact_a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, IndexFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("MEMORY.md kept for an empty store")
	}
}

func TestUpsertUpdatesInPlace(t *testing.T) {
	s := Open(t.TempDir())
	mustUpsert(t, s, t0, Memory{MemID: "preference_color", Type: "preference", Title: "Colour", Content: "teal", Salience: 4, Tags: []string{"domain:ui"}})
	mustUpsert(t, s, t0.Add(time.Hour), Memory{MemID: "preference_color", Content: "green now"})
	ms, _, _ := s.List()
	if len(ms) != 1 {
		t.Fatalf("%d memories", len(ms))
	}
	m := ms[0]
	// Fields the update leaves empty keep their value.
	if m.File != "preference_color.md" || m.Content != "green now" || m.Title != "Colour" || m.Type != "preference" ||
		m.Salience != 4 || len(m.Tags) != 1 || !m.Updated.Equal(t0.Add(time.Hour)) {
		t.Fatalf("%+v", m)
	}
	mustUpsert(t, s, t0.Add(2*time.Hour), Memory{MemID: "preference_color", Type: "nonsense", Title: "Colour", Content: "blue", Salience: 2})
	m, _ = s.Get("preference_color")
	if m.Type != "preference" || m.Salience != 2 || m.Content != "blue" {
		t.Fatalf("%+v", m)
	}
	// A new memory with an unknown type becomes a fact.
	mustUpsert(t, s, t0, Memory{MemID: "x_y", Type: "opinion", Content: "c"})
	if m, _ := s.Get("x_y"); m.Type != "fact" || m.Salience != 3 {
		t.Fatalf("%+v", m)
	}
}

func TestSameSlugDoesNotOverwrite(t *testing.T) {
	s := Open(t.TempDir())
	mustUpsert(t, s, t0, Memory{MemID: "Preference Color", Content: "first"})
	mustUpsert(t, s, t0, Memory{MemID: "preference_color", Content: "second"})
	mustUpsert(t, s, t0, Memory{MemID: "preference.color", Content: "third"})
	mustUpsert(t, s, t0, Memory{MemID: "preference_color_2", Content: "fourth"}) // its own slug is taken by "preference_color"
	want := map[string][2]string{
		"Preference Color":   {"preference_color.md", "first"},
		"preference_color":   {"preference_color_2.md", "second"},
		"preference.color":   {"preference_color_3.md", "third"},
		"preference_color_2": {"preference_color_2_2.md", "fourth"},
	}
	check := func() {
		t.Helper()
		ms, probs, err := s.List()
		if err != nil || len(probs) != 0 || len(ms) != len(want) {
			t.Fatalf("%v %v %v", ms, probs, err)
		}
		for _, m := range ms {
			w := want[m.MemID]
			if m.File != w[0] || m.Content != w[1] {
				t.Errorf("%s: %s %q, want %v", m.MemID, m.File, m.Content, w)
			}
		}
	}
	check()
	// Updates go to each mem_id's own file.
	mustUpsert(t, s, t0.Add(time.Minute), Memory{MemID: "preference_color", Content: "second v2"}, Memory{MemID: "Preference Color", Content: "first v2"})
	want["preference_color"] = [2]string{"preference_color_2.md", "second v2"}
	want["Preference Color"] = [2]string{"preference_color.md", "first v2"}
	check()
	// The first file gone, its name is free again, but "preference_color"
	// still updates its own file.
	if err := s.Remove("Preference Color"); err != nil {
		t.Fatal(err)
	}
	delete(want, "Preference Color")
	mustUpsert(t, s, t0.Add(2*time.Minute), Memory{MemID: "preference_color", Content: "second v3"})
	want["preference_color"] = [2]string{"preference_color_2.md", "second v3"}
	check()
}

// writeMem writes a memory file by hand.
func writeMem(t *testing.T, s *Store, name, body string) {
	t.Helper()
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func memFile(id string, sal int, updated string, content string) string {
	return fmt.Sprintf("---\nmem_id: %s\ntype: fact\ntitle: %s\nsalience: %d\ntags:\nupdated: %s\n---\n\n%s\n", id, strings.ToUpper(id), sal, updated, content)
}

func indexIDs(t *testing.T, s *Store) string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(s.Index()), "\n") {
		// "- [fact★3] TITLE: content"
		_, rest, _ := strings.Cut(line, "] ")
		title, _, _ := strings.Cut(rest, ":")
		ids = append(ids, strings.ToLower(title))
	}
	return strings.Join(ids, ",")
}

func TestIndexOrderComesFromFrontmatter(t *testing.T) {
	s := Open(t.TempDir())
	writeMem(t, s, "old.md", memFile("old", 3, "2025-01-01T00:00:00Z", "o"))
	writeMem(t, s, "new.md", memFile("new", 3, "2025-02-01T00:00:00+08:00", "n"))
	writeMem(t, s, "mid.md", memFile("mid", 3, "2025-01-15T00:00:00Z", "m"))
	writeMem(t, s, "top.md", memFile("top", 5, "2020-01-01T00:00:00Z", "t"))
	writeMem(t, s, "low.md", memFile("low", 1, "2030-01-01T00:00:00Z", "l"))
	writeMem(t, s, "nodate.md", memFile("nodate", 3, "yesterday", "x"))
	// File times say the opposite of the frontmatter.
	base := time.Now()
	for i, n := range []string{"new", "mid", "old", "nodate"} {
		mt := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(filepath.Join(s.Dir, n+".md"), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if probs, err := s.RebuildIndex(); err != nil || len(probs) != 0 {
		t.Fatal(probs, err)
	}
	const want = "top,new,mid,old,nodate,low"
	if got := indexIDs(t, s); got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	// Touching a file does not reorder.
	future := base.Add(48 * time.Hour)
	if err := os.Chtimes(filepath.Join(s.Dir, "old.md"), future, future); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RebuildIndex(); err != nil {
		t.Fatal(err)
	}
	if got := indexIDs(t, s); got != want {
		t.Fatalf("after touch: order %s, want %s", got, want)
	}
	// An upsert's `updated` does.
	mustUpsert(t, s, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Memory{MemID: "old", Content: "o2"})
	if got := indexIDs(t, s); got != "top,old,new,mid,nodate,low" {
		t.Fatalf("after upsert: order %s", got)
	}
	ms, _, _ := s.List()
	for _, m := range ms {
		if m.MemID == "nodate" && !m.Updated.IsZero() {
			t.Errorf("bad updated parsed as %v", m.Updated)
		}
	}
}

func TestArchiveOverflow(t *testing.T) {
	s := Open(t.TempDir())
	var batch []Memory
	for i := 0; i < 121; i++ {
		batch = append(batch, Memory{MemID: fmt.Sprintf("fact_%03d", i), Content: fmt.Sprintf("c%d", i), Salience: 1 + i%5})
	}
	// 120 is the limit: nothing moves.
	mustUpsert(t, s, t0, batch[:120]...)
	if ms, _, _ := s.List(); len(ms) != 120 {
		t.Fatalf("%d memories at the limit", len(ms))
	}
	// Make the salience-1 memories differ in age: fact_000 is the newest of them.
	mustUpsert(t, s, t0.Add(time.Hour), batch[0])
	mustUpsert(t, s, t0.Add(time.Minute), batch[120]) // salience 1, the 121st
	ms, probs, err := s.List()
	if err != nil || len(probs) != 0 || len(ms) != KeepMemories {
		t.Fatalf("%d memories, %v, %v", len(ms), probs, err)
	}
	arch, err := os.ReadDir(filepath.Join(s.Dir, ArchiveDir))
	if err != nil || len(arch) != 21 {
		t.Fatalf("%d archived, %v", len(arch), err)
	}
	// 25 had salience 1: the 21 oldest of them moved; fact_000 (newest) and
	// fact_120 (second newest) stayed.
	kept := map[string]bool{}
	sal1 := 0
	for _, m := range ms {
		kept[m.MemID] = true
		if m.Salience == 1 {
			sal1++
		}
	}
	if sal1 != 4 || !kept["fact_000"] || !kept["fact_120"] {
		t.Fatalf("kept %d of salience 1; fact_000 %v, fact_120 %v", sal1, kept["fact_000"], kept["fact_120"])
	}
	for _, e := range arch {
		b := readAll(t, filepath.Join(s.Dir, ArchiveDir, e.Name()))
		m, err := parse(stem(e.Name()), []byte(b))
		if err != nil || m.Salience != 1 || kept[m.MemID] {
			t.Errorf("archived %s: %+v %v", e.Name(), m, err)
		}
	}
	// Nothing deleted: 100 + 21 files, the index lists the 100.
	if n := len(strings.Split(strings.TrimSpace(s.Index()), "\n")); n != KeepMemories {
		t.Fatalf("index has %d lines", n)
	}
}

// Memory files added by hand past the limit are brought down to
// KeepMemories by Reindex, the weakest archived, as a write does.
func TestReindexArchivesOverflow(t *testing.T) {
	t.Parallel()
	s := Open(t.TempDir())
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxMemories+5; i++ {
		m := Memory{MemID: fmt.Sprintf("fact_%03d", i), Type: "fact", Content: fmt.Sprintf("c%d", i), Salience: 2, Updated: t0.Add(time.Duration(i) * time.Minute)}
		if i < 10 {
			m.Salience = 5
		}
		m.File = m.MemID + ".md"
		if err := os.WriteFile(filepath.Join(s.Dir, m.File), format(m), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	archived, probs, err := s.Reindex()
	if err != nil || len(probs) != 0 || archived != MaxMemories+5-KeepMemories {
		t.Fatalf("Reindex: %d archived, %v, %v", archived, probs, err)
	}
	ms, _, _ := s.List()
	if len(ms) != KeepMemories {
		t.Fatalf("%d memories left", len(ms))
	}
	// The salience-5 ones and the newest of salience 2 stay; the oldest go.
	for _, id := range []string{"fact_000", "fact_009", "fact_124", "fact_035"} {
		if _, err := s.Get(id); err != nil {
			t.Errorf("%s archived: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, ArchiveDir, "fact_010.md")); err != nil {
		t.Errorf("the oldest of the weakest is not in %s: %v", ArchiveDir, err)
	}
	if n := len(strings.Split(strings.TrimSpace(s.Index()), "\n")); n != KeepMemories {
		t.Errorf("the index has %d lines", n)
	}
	// Within the limit, nothing moves.
	if archived, _, err := s.Reindex(); archived != 0 || err != nil {
		t.Errorf("again: %d archived, %v", archived, err)
	}
}

func TestCorruptFilesSkipped(t *testing.T) {
	s := Open(t.TempDir())
	mustUpsert(t, s, t0, Memory{MemID: "fact_good", Title: "Good", Content: "kept"})
	broken := map[string]string{
		"noframe.md":   "just some notes\n",
		"unclosed.md":  "---\nmem_id: x\ntitle: y\n\ncontent\n",
		"empty.md":     "",
		"blank.md":     "---\nmem_id: blank\n---\n\n   \n",
		"badline.md":   "---\nmem_id: z\nthis line has no colon\n---\n\nbody\n",
		"fact_good.md": "", // placeholder, replaced below
	}
	delete(broken, "fact_good.md")
	for n, b := range broken {
		writeMem(t, s, n, b)
	}
	// A file that is too big, a directory and a symlink named like memories.
	writeMem(t, s, "huge.md", "---\nmem_id: huge\n---\n\n"+strings.Repeat("x", maxFileBytes))
	if err := os.Mkdir(filepath.Join(s.Dir, "dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("---\nmem_id: secret\n---\n\nsecret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	// Files that are not memories are ignored, not reported.
	writeMem(t, s, "notes.txt", "whatever")
	writeMem(t, s, ".hidden.md", "whatever")

	probs, err := s.RebuildIndex()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range probs {
		if p.Err == "" {
			t.Errorf("problem without a reason: %+v", p)
		}
		got[p.File] = true
	}
	for _, n := range []string{"noframe.md", "unclosed.md", "empty.md", "blank.md", "badline.md", "huge.md", "link.md"} {
		if !got[n] {
			t.Errorf("%s not reported (problems %v)", n, probs)
		}
	}
	if len(probs) != 7 {
		t.Errorf("problems %v", probs)
	}
	if idx := s.Index(); idx != "- [fact★3] Good: kept\n" {
		t.Fatalf("index %q", idx)
	}
	// Upsert still works, reports the broken files, and never overwrites
	// one: mem_id "noframe" gets noframe_2.md.
	n, ps, err := s.Upsert([]Memory{{MemID: "noframe", Content: "new"}}, t0)
	if err != nil || n != 1 || len(ps) != 7 {
		t.Fatalf("%d %v %v", n, ps, err)
	}
	if readAll(t, filepath.Join(s.Dir, "noframe.md")) != "just some notes\n" {
		t.Fatal("a broken file was overwritten")
	}
	if m, err := s.Get("noframe"); err != nil || m.File != "noframe_2.md" {
		t.Fatalf("%+v %v", m, err)
	}
	// A broken file can be cleared away by its stem.
	if err := s.Remove("unclosed"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, ArchiveDir, "unclosed.md")); err != nil {
		t.Fatal(err)
	}
}

func TestHandEditedFile(t *testing.T) {
	s := Open(t.TempDir())
	writeMem(t, s, "My-Notes.md", "\uFEFF\r\n---\r\n# a comment\r\ntype: Lesson\r\ntitle: \"Proxy: use 127.0.0.1\"\r\ntags: [net, 'proxy']\r\nextra: ignored\r\nsalience: 9\r\n---\r\nlocalhost resolves to ::1 first\r\n--- not a delimiter\r\n")
	m, err := s.Get("My-Notes")
	if err != nil {
		t.Fatal(err)
	}
	if m.MemID != "My-Notes" || m.Type != "lesson" || m.Title != "Proxy: use 127.0.0.1" || m.Salience != 5 ||
		strings.Join(m.Tags, "|") != "net|proxy" || !m.Updated.IsZero() ||
		m.Content != "localhost resolves to ::1 first\n--- not a delimiter" {
		t.Fatalf("%+v", m)
	}
	// Its update goes to the same file.
	mustUpsert(t, s, t0, Memory{MemID: "My-Notes", Content: "use 127.0.0.1"})
	ms, _, _ := s.List()
	if len(ms) != 1 || ms[0].File != "My-Notes.md" || ms[0].Title != "Proxy: use 127.0.0.1" {
		t.Fatalf("%+v", ms)
	}
}

func TestRemove(t *testing.T) {
	s := Open(t.TempDir())
	mustUpsert(t, s, t0, Memory{MemID: "fact_a", Content: "a1"}, Memory{MemID: "fact_b", Content: "b"})
	if err := s.Remove("fact_a"); err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, s, t0, Memory{MemID: "fact_a", Content: "a2"})
	if err := s.Remove("fact_a"); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, filepath.Join(s.Dir, ArchiveDir, "fact_a.md")); !strings.Contains(got, "a1") {
		t.Fatalf("first archive %q", got)
	}
	if got := readAll(t, filepath.Join(s.Dir, ArchiveDir, "fact_a_2.md")); !strings.Contains(got, "a2") {
		t.Fatalf("second archive %q", got)
	}
	if _, err := s.Get("fact_a"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if s.Index() != "- [fact★3] b\n" {
		t.Fatalf("index %q", s.Index())
	}
	if err := s.Remove("fact_a"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := s.Remove("../fact_b"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

func TestValidation(t *testing.T) {
	s := Open(t.TempDir())
	n, probs, err := s.Upsert([]Memory{
		{MemID: "fact_high", Content: "x", Salience: 99},
		{MemID: "fact_zero", Content: "x", Salience: 0},
		{MemID: "fact_neg", Content: "x", Salience: -4},
		{MemID: "fact_title", Title: strings.Repeat("标题\n", 100)},
		{MemID: "../../x", Content: "escape"},
		{MemID: "a/b", Content: "escape"},
		{MemID: "", Content: "no id"},
		{MemID: "fact_empty", Title: " \n", Content: "  "},
		{MemID: strings.Repeat("m", MaxMemIDBytes+1), Content: "long id"},
		{MemID: "fact_tags", Content: "x", Tags: []string{"a,b", "a b", " ", "a b", strings.Repeat("t", 100)}},
	}, t0)
	if err != nil || n != 5 || len(probs) != 5 {
		t.Fatalf("stored %d, problems %v, err %v", n, probs, err)
	}
	for _, p := range probs {
		if p.File == "" || p.Err == "" {
			t.Errorf("problem %+v", p)
		}
	}
	sal := map[string]int{"fact_high": 5, "fact_zero": 3, "fact_neg": 1}
	for id, want := range sal {
		if m, err := s.Get(id); err != nil || m.Salience != want {
			t.Errorf("%s: %+v %v", id, m, err)
		}
	}
	m, _ := s.Get("fact_title")
	if len(m.Title) > MaxTitleBytes || strings.Contains(m.Title, "\n") || !strings.HasPrefix(m.Title, "标题 标题") {
		t.Errorf("title %q", m.Title)
	}
	m, _ = s.Get("fact_tags")
	if strings.Join(m.Tags, "|") != "a b|"+strings.Repeat("t", MaxTagBytes) {
		t.Errorf("tags %q", m.Tags)
	}
	assertInside(t, filepath.Dir(filepath.Dir(s.Dir)), s.Dir)
}

func TestHugeContentClipped(t *testing.T) {
	s := Open(t.TempDir())
	big := strings.Repeat("记住这个很长的内容。", 1<<20/30+1) // > 1 MB, 3-byte runes
	mustUpsert(t, s, t0, Memory{MemID: "fact_big", Title: "Big", Content: big})
	m, err := s.Get("fact_big")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) > MaxContentBytes || !strings.Contains(m.Content, fmt.Sprintf("clipped from %d bytes", len(big))) {
		t.Fatalf("content %d bytes, ends %q", len(m.Content), m.Content[len(m.Content)-60:])
	}
	if !strings.HasPrefix(big, strings.SplitN(m.Content, "\n", 2)[0]) {
		t.Fatal("clip is not a prefix on a rune boundary")
	}
	fi, _ := os.Stat(filepath.Join(s.Dir, m.File))
	if fi.Size() > MaxContentBytes+400 {
		t.Fatalf("file %d bytes", fi.Size())
	}
	line := strings.TrimSuffix(s.Index(), "\n")
	if len(line) > 500 || strings.Contains(line, "\n") {
		t.Fatalf("index line %d bytes", len(line))
	}
}

func TestFiveHundredAtOnce(t *testing.T) {
	ws := t.TempDir()
	s := Open(ws)
	var batch []Memory
	for i := 0; i < 500; i++ {
		batch = append(batch, Memory{
			MemID: fmt.Sprintf("fact_%03d", i), Type: Types[i%len(Types)], Salience: i % 7,
			Title:   strings.Repeat("T", 200),
			Content: strings.Repeat("内容 with\nnewlines ", 100),
		})
	}
	n, probs, err := s.Upsert(batch, t0)
	if err != nil || n != 500 || len(probs) != 0 {
		t.Fatalf("stored %d, %v, %v", n, probs, err)
	}
	ms, _, _ := s.List()
	if len(ms) != KeepMemories {
		t.Fatalf("%d memories remain", len(ms))
	}
	arch, _ := os.ReadDir(filepath.Join(s.Dir, ArchiveDir))
	if len(arch) != 400 {
		t.Fatalf("%d archived", len(arch))
	}
	idx := s.Index()
	lines := strings.Split(strings.TrimSuffix(idx, "\n"), "\n")
	if len(lines) != KeepMemories {
		t.Fatalf("%d index lines", len(lines))
	}
	maxLine := len("- [constraint★5] ") + MaxTitleBytes + 2 + IndexContentBytes
	for _, l := range lines {
		if len(l) > maxLine || !strings.HasPrefix(l, "- [") {
			t.Fatalf("line of %d bytes: %q", len(l), l)
		}
	}
	cut := CutIndex(idx, 6000)
	if len(cut) > 6000 || !strings.HasSuffix(cut, lines[len(strings.Split(cut, "\n"))-1]) {
		t.Fatalf("cut %d bytes", len(cut))
	}
	if len(s.IndexLines()) > KeepMemories*(MaxMemIDBytes+MaxTitleBytes+20) {
		t.Fatal("IndexLines unbounded")
	}
	assertInside(t, ws, s.Dir)
}

// assertInside walks the workspace: every file is under dir.
func assertInside(t *testing.T, ws, dir string) {
	t.Helper()
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if rel, err := filepath.Rel(dir, p); err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("written outside %s: %s", dir, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCutIndex(t *testing.T) {
	text := "aaa\nbbb\nccc\n"
	for max, want := range map[int]string{100: text, 12: text, 11: "aaa\nbbb\nccc", 10: "aaa\nbbb", 8: "aaa\nbbb", 7: "aaa\nbbb", 6: "aaa", 4: "aaa", 3: "aaa", 2: "aa"} {
		if got := CutIndex(text, max); got != want {
			t.Errorf("CutIndex(%d) = %q, want %q", max, got, want)
		}
	}
	if got := CutIndex("张三李四", 7); got != "张三" {
		t.Errorf("rune cut %q", got)
	}
}

func TestConcurrentUpserts(t *testing.T) {
	ws := t.TempDir()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s := Open(ws) // separate Store values share the folder's lock
			for i := 0; i < 10; i++ {
				// All goroutines write the same slug under distinct mem_ids.
				if _, _, err := s.Upsert([]Memory{{MemID: fmt.Sprintf("Fact X%d", g), Content: fmt.Sprint(i)}, {MemID: fmt.Sprintf("fact.x%d", g), Content: "y"}}, t0.Add(time.Duration(i)*time.Second)); err != nil {
					t.Error(err)
				}
				_ = s.Index()
			}
		}(g)
	}
	wg.Wait()
	ms, probs, err := Open(ws).List()
	if err != nil || len(probs) != 0 || len(ms) != 16 {
		t.Fatalf("%d memories, %v, %v", len(ms), probs, err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.MemID, "Fact") && m.Content != "9" {
			t.Errorf("%s = %q", m.MemID, m.Content)
		}
	}
}
