package comeback

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/schema"
)

// TestDBLost: a missing, empty (0 bytes, or a SQLite file without a
// table) or foreign database is lost, and says how; one of ours is not.
func TestDBLost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", "file:"+foreign)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"a", "b", "c", "d"} {
		if _, err := db.Exec(`CREATE TABLE ` + table + ` (x TEXT)`); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	header := filepath.Join(dir, "header.db") // a `sqlite3 cicy.db .quit`
	db, err = sql.Open("sqlite", "file:"+header)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 7`); err != nil { // writes the file's header
		t.Fatal(err)
	}
	db.Close()
	ours := filepath.Join(dir, "ours.db")
	store, err := schema.Open(context.Background(), ours)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	for path, want := range map[string]string{
		filepath.Join(dir, "none.db"): "is missing",
		empty:                         "is empty (0 bytes)",
		header:                        "is an empty SQLite file (no tables)",
		foreign:                       "is a SQLite file without cicy-agent's tables (it holds a, b, c and 1 more)",
		ours:                          "",
	} {
		if got, err := DBLost(path); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", filepath.Base(path), got, err, want)
		}
	}
}

// TestCheckDatabase: a lost database beside pane folders is refused,
// naming them and what to do; with fresh they and what is left of the
// database are moved aside, and the start goes on; with no pane folders
// a missing database is a new home.
func TestCheckDatabase(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	db := filepath.Join(root, "db", "cicy.db")
	log := logrus.NewEntry(logrus.New())
	if err := CheckDatabase(root, db, false, log); err != nil {
		t.Fatalf("a new home: %v", err)
	}
	for _, d := range []string{"workspaces/w-1", "workspaces/w-2", "panes/w-1", "db"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := CheckDatabase(root, db, false, log)
	if err == nil || !strings.Contains(err.Error(), "is empty (0 bytes) but this home still holds the folders of panes it described (panes/w-1, workspaces/w-1, workspaces/w-2)") ||
		!strings.Contains(err.Error(), "'cicy-agent serve --fresh'") {
		t.Fatalf("refused: %v", err)
	}
	if err := CheckDatabase(root, db, true, log); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	aside, _ := filepath.Glob(filepath.Join(root, "orphaned-*"))
	if len(aside) != 1 {
		t.Fatalf("set aside in %q", aside)
	}
	for _, rel := range []string{"workspaces/w-1", "workspaces/w-2", "panes/w-1", "db/cicy.db"} {
		if _, err := os.Stat(filepath.Join(aside[0], rel)); err != nil {
			t.Errorf("%s not set aside: %v", rel, err)
		}
		if _, err := os.Stat(filepath.Join(root, rel)); err == nil {
			t.Errorf("%s still in the home", rel)
		}
	}
}

// TestCheckDatabaseForeign: a SQLite file with another program's tables
// beside the folders of panes is refused as an empty one is, naming its
// tables; the file is not changed.
func TestCheckDatabaseForeign(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(root, "db", "cicy.db")
	for _, d := range []string{"db", "workspaces/w-1"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (body TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const how = "is a SQLite file without cicy-agent's tables (it holds notes)"
	err = CheckDatabase(root, path, false, logrus.NewEntry(logrus.New()))
	if err == nil || !strings.Contains(err.Error(), how+" but this home still holds the folders of panes it described (workspaces/w-1)") {
		t.Fatalf("CheckDatabase: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the file was changed")
	}
}

// TestSetAsideForeign: a default folder that holds files is moved aside,
// said, and can be moved back; an empty or missing one is left.
func TestSetAsideForeign(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "workspaces", "w-1")
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if note, _, err := SetAsideForeign(root, dir, now); note != "" || err != nil {
		t.Fatalf("missing: %q %v", note, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if note, _, err := SetAsideForeign(root, dir, now); note != "" || err != nil {
		t.Fatalf("empty: %q %v", note, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	note, undo, err := SetAsideForeign(root, dir, now)
	want := "workspaces/w-1 already held files of an earlier pane that this home's database no longer knows; they were moved to workspaces/w-1.orphaned-20250102-030405"
	if err != nil || note != want {
		t.Fatalf("%q %v", note, err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("the folder was not moved")
	}
	undo()
	if _, err := os.Stat(filepath.Join(dir, "notes.md")); err != nil {
		t.Fatalf("not moved back: %v", err)
	}
}
