package memory

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Refresh rebuilds MEMORY.md when the memory files changed on disk since
// this store last built it — a hand edit, a file added or removed by hand —
// judged by the name, size and modification time of each file, so the
// check costs one folder read and no file is opened when nothing changed.
// Its first call also rebuilds when a memory file is newer than MEMORY.md
// (an edit made while no store was watching). It reports whether it rebuilt
// and the files the rebuild skipped.
func (s *Store) Refresh() (bool, []Problem, error) {
	unlock := s.lock()
	defer unlock()
	fp, newest, err := s.fingerprint()
	if err != nil {
		return false, nil, err
	}
	if s.built != nil && *s.built == fp {
		return false, nil, nil
	}
	if s.built == nil && !s.newerThanIndex(fp, newest) {
		s.built = &fp
		return false, nil, nil
	}
	probs, err := s.rebuildIndex()
	return err == nil, probs, err
}

// newerThanIndex: the first look at the folder finds memory files and
// MEMORY.md missing, or a memory file modified after it.
func (s *Store) newerThanIndex(fp string, newest time.Time) bool {
	fi, err := os.Stat(filepath.Join(s.Dir, IndexFile))
	if err != nil {
		return fp != ""
	}
	return newest.After(fi.ModTime())
}

// fingerprint is one line per memory file (name, size, modification time
// in nanoseconds), in the folder's sorted order, and the newest
// modification time. A missing folder is "".
func (s *Store) fingerprint() (string, time.Time, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	var b strings.Builder
	var newest time.Time
	for _, e := range ents {
		if !isMemoryName(e.Name()) || e.IsDir() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the folder was read
		}
		if err != nil {
			return "", time.Time{}, err
		}
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		b.WriteString(e.Name())
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(fi.Size(), 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(fi.ModTime().UnixNano(), 10))
		b.WriteByte('\n')
	}
	return b.String(), newest, nil
}
