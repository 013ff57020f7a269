package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/atomicfile"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
)

// Types of memories.
var Types = []string{"preference", "fact", "person", "knowledge", "procedure", "constraint", "lesson"}

// Limits of the store (issue 4).
const (
	MaxMemories       = 120  // more than this → the weakest move to _archive/
	KeepMemories      = 100  // … until this many remain
	MaxSlugBytes      = 80   // file stem
	MaxMemIDBytes     = 200  // a longer mem_id is refused
	MaxTitleBytes     = 120  // stored and indexed title
	MaxContentBytes   = 4000 // stored content, clipping note included
	IndexContentBytes = 300  // content shown in one MEMORY.md line
	MaxTags           = 16
	MaxTagBytes       = 64

	// IndexFile is the rebuilt index, the text the turn loop injects.
	IndexFile = "MEMORY.md"
	// ArchiveDir is where overflow and removed memories go; nothing is deleted.
	ArchiveDir = "_archive"

	maxFileBytes = 1 << 20 // a bigger file is reported, not read
	tempPrefix   = atomicfile.TempPrefix
	staleTemp    = time.Hour
)

// ErrNotFound is wrapped by Get and Remove when no memory has the mem_id.
var ErrNotFound = errors.New("memory not found")

// Memory is one memory: one <slug>.md file. It is api.Memory, the one
// type the store reads and writes and the API carries.
type Memory = api.Memory

// Problem is a file that could not be read as a memory (skipped), or an
// entry Upsert refused (File is then the quoted mem_id): api.Problem.
type Problem = api.Problem

// Slug makes a mem_id safe as a file stem: lowercase; [a-z0-9_-]
// and Han characters kept; every other run of characters → "_"; trimmed of
// "_" and "-"; at most 80 bytes (cut on a rune boundary). It returns an
// error for a mem_id that is empty after this, or that contains "..", "/"
// or "\" (a mem_id that would leave the folder is refused, not rewritten).
func Slug(memID string) (string, error) {
	if strings.Contains(memID, "..") || strings.ContainsAny(memID, `/\`) {
		return "", fmt.Errorf("mem_id %s would leave the memory folder", quote(memID))
	}
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(memID) {
		if !slugRune(r) {
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteByte('_')
		}
		gap = false
		b.WriteRune(r)
	}
	s := strings.Trim(b.String(), "_-")
	s = strings.Trim(cutBytes(s, MaxSlugBytes), "_-")
	if s == "" {
		return "", fmt.Errorf("mem_id %s has nothing usable as a file name", quote(memID))
	}
	return s, nil
}

func slugRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || unicode.Is(unicode.Han, r)
}

// Store is the memory folder of one workspace.
type Store struct {
	Dir string // <workspace>/.cicy/memory
	// built is the fingerprint of the memory files when this store last
	// built MEMORY.md (nil before its first look; see Refresh). It is
	// guarded by the folder's lock.
	built *string
}

// Open returns the store of a workspace; its folder is created on the first
// write.
func Open(workspace string) *Store {
	return &Store{Dir: filepath.Join(workspace, ".cicy", "memory")}
}

// locks serialises the writers of one folder inside this process (the
// turn loop's flush, the CLI's rm, tests). Every write is atomic, so
// readers need no lock.
var locks sync.Map

func (s *Store) lock() func() {
	key := filepath.Clean(s.Dir)
	if abs, err := filepath.Abs(key); err == nil {
		key = abs
	}
	v, _ := locks.LoadOrStore(key, new(sync.Mutex))
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// List returns all memories (not _archive), sorted like the index, and the
// files it skipped. A missing folder is an empty store.
func (s *Store) List() ([]Memory, []Problem, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var ms []Memory
	var probs []Problem
	for _, e := range ents {
		name := e.Name()
		if !isMemoryName(name) || e.IsDir() {
			continue
		}
		m, err := s.readFile(name)
		if err != nil {
			probs = append(probs, Problem{File: name, Err: err.Error()})
			continue
		}
		ms = append(ms, m)
	}
	sortIndex(ms)
	seen := map[string]string{}
	for _, m := range ms {
		if first, ok := seen[m.MemID]; ok {
			probs = append(probs, Problem{File: m.File, Err: fmt.Sprintf("mem_id %s is also in %s (updates go to %s)", quote(m.MemID), first, first)})
			continue
		}
		seen[m.MemID] = m.File
	}
	return ms, probs, nil
}

// isMemoryName: a visible *.md file other than the index.
func isMemoryName(name string) bool {
	return !strings.HasPrefix(name, ".") && len(name) > 3 &&
		strings.EqualFold(name[len(name)-3:], ".md") && !strings.EqualFold(name, IndexFile)
}

func stem(name string) string { return name[:len(name)-3] }

func (s *Store) readFile(name string) (Memory, error) {
	p := filepath.Join(s.Dir, name)
	fi, err := os.Lstat(p)
	if err != nil {
		return Memory{}, err
	}
	if !fi.Mode().IsRegular() {
		return Memory{}, errors.New("not a regular file")
	}
	if fi.Size() > maxFileBytes {
		return Memory{}, fmt.Errorf("file too large (%d bytes, at most %d)", fi.Size(), maxFileBytes)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return Memory{}, err
	}
	m, err := parse(stem(name), b)
	if err != nil {
		return Memory{}, err
	}
	m.File = name
	return m, nil
}

// parse reads one memory file. It is lenient with what a person
// may write by hand (CRLF, a BOM, quotes around values, "[a, b]" tags,
// comments, unknown keys) and strict about the frontmatter itself.
func parse(fileStem string, data []byte) (Memory, error) {
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	text = strings.TrimPrefix(text, "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.TrimLeft(text, " \t\r\n")
	lines := strings.Split(text, "\n")
	if strings.TrimSpace(lines[0]) != "---" {
		return Memory{}, errors.New("no frontmatter (the file must start with a line ---)")
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return Memory{}, errors.New("frontmatter is not closed by a line ---")
	}
	m := Memory{Salience: 3}
	for i := 1; i < end; i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return Memory{}, fmt.Errorf("frontmatter line %d is not \"key: value\": %s", i+1, quote(cutBytes(line, 60)))
		}
		v = unquote(strings.TrimSpace(v))
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "mem_id":
			m.MemID = oneLine(v)
		case "type":
			m.Type = v
		case "title":
			m.Title = oneLine(v)
		case "salience":
			n, err := strconv.Atoi(v)
			if err != nil {
				n = 0
			}
			m.Salience = clampSalience(n)
		case "tags":
			m.Tags = splitTags(v)
		case "updated":
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				m.Updated = t
			}
		}
	}
	m.Type = normType(m.Type)
	if m.Type == "" {
		m.Type = "fact"
	}
	m.Content = strings.TrimSpace(strings.Join(lines[end+1:], "\n"))
	if m.MemID == "" {
		m.MemID = fileStem
	}
	if m.Title == "" && m.Content == "" {
		return Memory{}, errors.New("neither title nor content")
	}
	return m, nil
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		if u, err := strconv.Unquote(v); err == nil && v[0] == '"' {
			return u
		}
		return v[1 : len(v)-1]
	}
	return v
}

func splitTags(v string) []string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		v = v[1 : len(v)-1]
	}
	var tags []string
	for _, t := range strings.Split(v, ",") {
		tags = append(tags, unquote(strings.TrimSpace(t)))
	}
	return cleanTags(tags)
}

// format writes one memory file, byte for byte.
func format(m Memory) []byte {
	var b strings.Builder
	b.WriteString("---\n")
	b.WriteString("mem_id: " + m.MemID + "\n")
	b.WriteString("type: " + m.Type + "\n")
	b.WriteString("title: " + m.Title + "\n")
	b.WriteString("salience: " + strconv.Itoa(m.Salience) + "\n")
	if len(m.Tags) > 0 {
		b.WriteString("tags: " + strings.Join(m.Tags, ", ") + "\n")
	} else {
		b.WriteString("tags:\n")
	}
	b.WriteString("updated: " + m.Updated.Format(time.RFC3339) + "\n")
	b.WriteString("---\n\n")
	b.WriteString(m.Content + "\n")
	return []byte(b.String())
}

// sortIndex: salience high first, then most recently updated (frontmatter),
// then mem_id and file name so the order is total.
func sortIndex(ms []Memory) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.Salience != b.Salience {
			return a.Salience > b.Salience
		}
		if !a.Updated.Equal(b.Updated) {
			return a.Updated.After(b.Updated)
		}
		if a.MemID != b.MemID {
			return a.MemID < b.MemID
		}
		return a.File < b.File
	})
}

// Get returns the memory with this mem_id (or, failing that, the one whose
// file stem it is); ErrNotFound wrapped when there is none.
func (s *Store) Get(memID string) (Memory, error) {
	ms, _, err := s.List()
	if err != nil {
		return Memory{}, err
	}
	id := oneLine(memID)
	for _, m := range ms {
		if m.MemID == id {
			return m, nil
		}
	}
	for _, m := range ms {
		if stem(m.File) == id {
			return m, nil
		}
	}
	return Memory{}, fmt.Errorf("%w: %s", ErrNotFound, quote(memID))
}

// Upsert stores memories (one <slug>.md each), then archives overflow and
// rebuilds the index. Each entry is validated: type one of Types (else
// "fact"), salience clamped to 1..5 (0 → 3), title single-line ≤ 120 bytes,
// content trimmed and clipped to MaxContentBytes with a note, tags trimmed;
// Updated = now. An entry whose mem_id already has a file updates it in
// place, and fields it leaves empty (title, content, type, salience 0, no
// tags) keep their stored value. A new mem_id gets <slug>.md, or
// <slug>_2.md, _3 … when that name is taken by another mem_id (or by a file
// that cannot be read): nothing is overwritten but its own file. Refused
// entries (bad mem_id, empty content and title) and files skipped while
// reading come back as problems; the rest are still stored. err reports what
// could not be written or moved — the caller should keep its batch then.
func (s *Store) Upsert(ms []Memory, now time.Time) (stored int, problems []Problem, err error) {
	unlock := s.lock()
	defer unlock()
	existing, skipped, err := s.List()
	if err != nil {
		return 0, nil, err
	}
	for _, p := range skipped {
		problems = append(problems, Problem{File: p.File, Err: "skipped: " + p.Err})
	}
	byID := map[string]Memory{}
	taken := map[string]bool{}
	for _, m := range existing {
		if _, ok := byID[m.MemID]; !ok {
			byID[m.MemID] = m
		}
		taken[strings.ToLower(m.File)] = true
	}
	for _, p := range skipped {
		taken[strings.ToLower(p.File)] = true
	}
	now = now.Truncate(time.Second)
	var errs []error
	for _, in := range ms {
		m, slug, perr := clean(in)
		if perr != nil {
			problems = append(problems, Problem{File: quote(cutBytes(oneLine(in.MemID), 80)), Err: perr.Error()})
			continue
		}
		if old, ok := byID[m.MemID]; ok {
			m = merge(m, old)
			m.File = old.File
		} else {
			name, ferr := s.freeName(slug, taken)
			if ferr != nil {
				errs = append(errs, ferr)
				continue
			}
			m.File = name
		}
		finish(&m, now)
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			errs = append(errs, err)
			break
		}
		if err := atomicfile.Write(filepath.Join(s.Dir, m.File), format(m), 0o600); err != nil {
			errs = append(errs, fmt.Errorf("memory %s: %w", quote(m.MemID), err))
			continue
		}
		byID[m.MemID] = m
		taken[strings.ToLower(m.File)] = true
		stored++
	}
	if _, err := s.archiveOverflow(); err != nil {
		errs = append(errs, err)
	}
	if _, err := s.rebuildIndex(); err != nil {
		errs = append(errs, err)
	}
	return stored, problems, errors.Join(errs...)
}

// clean validates the fields an entry brings; defaults are applied by
// finish, after merge, so that an update may leave fields empty.
func clean(in Memory) (Memory, string, error) {
	m := Memory{
		MemID:    oneLine(in.MemID),
		Type:     normType(in.Type),
		Title:    cutBytes(oneLine(in.Title), MaxTitleBytes),
		Content:  strings.TrimSpace(strings.ReplaceAll(strings.ToValidUTF8(in.Content, "\uFFFD"), "\r\n", "\n")),
		Salience: in.Salience,
		Tags:     cleanTags(in.Tags),
	}
	if m.MemID == "" {
		return m, "", errors.New("empty mem_id")
	}
	if len(m.MemID) > MaxMemIDBytes {
		return m, "", fmt.Errorf("mem_id longer than %d bytes", MaxMemIDBytes)
	}
	slug, err := Slug(m.MemID)
	if err != nil {
		return m, "", err
	}
	if m.Title == "" && m.Content == "" {
		return m, "", errors.New("empty title and content")
	}
	return m, slug, nil
}

func merge(m, old Memory) Memory {
	if m.Type == "" {
		m.Type = old.Type
	}
	if m.Title == "" {
		m.Title = old.Title
	}
	if m.Content == "" {
		m.Content = old.Content
	}
	if m.Salience == 0 {
		m.Salience = old.Salience
	}
	if len(m.Tags) == 0 {
		m.Tags = old.Tags
	}
	return m
}

func finish(m *Memory, now time.Time) {
	if m.Type == "" {
		m.Type = "fact"
	}
	m.Salience = clampSalience(m.Salience)
	m.Content = clipContent(m.Content)
	m.Updated = now
}

// freeName picks <slug>.md, else <slug>_2.md, _3 …: the first name no file
// (memory, unreadable file, anything) holds. "memory.md" is skipped, so a
// case-insensitive file system never mixes a memory with MEMORY.md.
func (s *Store) freeName(slug string, taken map[string]bool) (string, error) {
	for i := 1; i < 10000; i++ {
		name := slug + ".md"
		if i > 1 {
			name = slug + "_" + strconv.Itoa(i) + ".md"
		}
		if strings.EqualFold(name, IndexFile) || taken[strings.ToLower(name)] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.Dir, name)); errors.Is(err, fs.ErrNotExist) {
			return name, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no free file name for slug %s", quote(slug))
}

// Remove moves the memory's file to _archive/ (never deletes; a name clash
// in _archive gets a numeric suffix) and rebuilds the index. memID may also
// be the stem of a file that cannot be read, to clear a broken file away.
func (s *Store) Remove(memID string) error {
	if _, err := Slug(memID); err != nil {
		return err
	}
	unlock := s.lock()
	defer unlock()
	ms, probs, err := s.List()
	if err != nil {
		return err
	}
	id := oneLine(memID)
	var files []string
	for _, m := range ms {
		if m.MemID == id {
			files = append(files, m.File)
		}
	}
	if len(files) == 0 {
		for _, m := range ms {
			if stem(m.File) == id {
				files = append(files, m.File)
			}
		}
		for _, p := range probs {
			if isMemoryName(p.File) && stem(p.File) == id {
				files = append(files, p.File)
			}
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, quote(memID))
	}
	var errs []error
	for _, f := range files {
		if err := s.archive(f); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := s.rebuildIndex(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// archive moves one file of the folder into _archive/, never replacing a
// file already there.
func (s *Store) archive(name string) error {
	dir := filepath.Join(s.Dir, ArchiveDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	base := stem(name)
	for i := 1; i < 100000; i++ {
		target := name
		if i > 1 {
			target = base + "_" + strconv.Itoa(i) + ".md"
		}
		dst := filepath.Join(dir, target)
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			if err := os.Rename(filepath.Join(s.Dir, name), dst); err != nil {
				return fmt.Errorf("archive %s: %w", name, err)
			}
			return nil
		} else if err != nil {
			return err
		}
	}
	return fmt.Errorf("archive %s: no free name in %s", name, ArchiveDir)
}

// archiveOverflow: more than MaxMemories memories → move the weakest
// (lowest salience, then oldest Updated — the tail of the index order) to
// _archive/ until KeepMemories remain; it returns how many moved. The
// caller holds the lock.
func (s *Store) archiveOverflow() (int, error) {
	ms, _, err := s.List()
	if err != nil || len(ms) <= MaxMemories {
		return 0, err
	}
	moved := 0
	var errs []error
	for _, m := range ms[KeepMemories:] {
		if err := s.archive(m.File); err != nil {
			errs = append(errs, err)
			continue
		}
		moved++
	}
	return moved, errors.Join(errs...)
}

// Reindex applies the store's rules to the files as they are — more than
// MaxMemories (written by hand, say) moves the weakest to _archive/ until
// KeepMemories remain, as a write does — then rebuilds MEMORY.md. It
// returns how many it archived and the files it skipped.
func (s *Store) Reindex() (archived int, problems []Problem, err error) {
	unlock := s.lock()
	defer unlock()
	archived, err = s.archiveOverflow()
	if err != nil {
		return archived, nil, err
	}
	problems, err = s.rebuildIndex()
	return archived, problems, err
}

// RebuildIndex writes MEMORY.md: one line per memory
// "- [<type>★<salience>] <title>: <content>" (single-line, content clipped
// to IndexContentBytes), in index order; an empty store removes MEMORY.md.
// It returns the files it skipped.
func (s *Store) RebuildIndex() ([]Problem, error) {
	unlock := s.lock()
	defer unlock()
	return s.rebuildIndex()
}

func (s *Store) rebuildIndex() ([]Problem, error) {
	fp, _, err := s.fingerprint() // before reading: a later edit is seen by the next Refresh
	if err != nil {
		return nil, err
	}
	ms, probs, err := s.List()
	if err != nil {
		return nil, err
	}
	s.removeStaleTemps()
	path := filepath.Join(s.Dir, IndexFile)
	if len(ms) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return probs, err
		}
		s.built = &fp
		return probs, nil
	}
	text := indexText(ms)
	if old, err := os.ReadFile(path); err != nil || string(old) != text {
		if err := atomicfile.Write(path, []byte(text), 0o600); err != nil {
			return probs, err
		}
	}
	s.built = &fp
	return probs, nil
}

func indexText(ms []Memory) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(IndexLine(m))
		b.WriteByte('\n')
	}
	return b.String()
}

// IndexLine is one line of MEMORY.md, bounded whatever the memory holds.
func IndexLine(m Memory) string {
	title := cutBytes(oneLine(m.Title), MaxTitleBytes)
	content := clip.Bytes(oneLine(m.Content), IndexContentBytes)
	text := title + ": " + content
	switch {
	case title == "":
		text = content
	case content == "":
		text = title
	}
	return "- [" + m.Type + "★" + strconv.Itoa(m.Salience) + "] " + text
}

// removeStaleTemps clears temp files a crash left behind.
func (s *Store) removeStaleTemps() {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleTemp {
			_ = os.Remove(filepath.Join(s.Dir, e.Name()))
		}
	}
}

// Index returns the content of MEMORY.md, or "".
func (s *Store) Index() string {
	b, err := os.ReadFile(filepath.Join(s.Dir, IndexFile))
	if err != nil {
		return ""
	}
	return string(b)
}

// IndexLines is the recognizer's view of the existing memories:
// "- <mem_id> | <type> | <title>" per line, or "(empty)".
func (s *Store) IndexLines() string {
	ms, _, err := s.List()
	if err != nil || len(ms) == 0 {
		return "(empty)"
	}
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- " + cutBytes(oneLine(m.MemID), MaxMemIDBytes) + " | " + m.Type + " | " + cutBytes(oneLine(m.Title), MaxTitleBytes))
	}
	return b.String()
}

// CutIndex cuts text at the last line boundary at or before max bytes (a
// hard cut on a rune boundary when the first line alone is longer).
func CutIndex(text string, max int) string {
	if len(text) <= max {
		return text
	}
	if i := strings.LastIndexByte(text[:max+1], '\n'); i > 0 {
		return text[:i]
	}
	return cutBytes(text, max)
}

func normType(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	for _, k := range Types {
		if t == k {
			return t
		}
	}
	return ""
}

// clampSalience: 1..5, 0 (missing) → 3.
func clampSalience(n int) int {
	switch {
	case n == 0:
		return 3
	case n < 1:
		return 1
	case n > 5:
		return 5
	}
	return n
}

func cleanTags(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range in {
		t = strings.TrimSpace(strings.ReplaceAll(oneLine(t), ",", " "))
		t = cutBytes(t, MaxTagBytes)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		if len(out) == MaxTags {
			break
		}
	}
	return out
}

// clipContent keeps content within MaxContentBytes, ending with a note of
// the original size when it had to cut.
func clipContent(c string) string {
	if len(c) <= MaxContentBytes {
		return c
	}
	note := fmt.Sprintf("\n…(clipped from %d bytes)", len(c))
	return strings.TrimRight(cutBytes(c, MaxContentBytes-len(note)), " \t\r\n") + note
}

// oneLine: valid UTF-8, whitespace runs (newlines included) → one space,
// trimmed.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
}

// cutBytes cuts s to at most n bytes on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func quote(s string) string { return strconv.Quote(cutBytes(s, 120)) }
