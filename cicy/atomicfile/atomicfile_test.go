package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWithTheModeAsked(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []os.FileMode{0o600, 0o644} {
		path := filepath.Join(dir, "f-"+perm.String())
		if err := os.WriteFile(path, []byte("old, and longer than the new"), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := Write(path, []byte("new"), perm); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != "new" {
			t.Fatalf("read %q, %v; want \"new\"", b, err)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != perm {
			t.Fatalf("mode %v, %v; want %v", fi.Mode().Perm(), err, perm)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 2 {
		t.Fatalf("folder holds %v (%v); want the two files and no temp file", ents, err)
	}
}

func TestWriteFailsWithoutTheFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	if err := Write(path, []byte("x"), 0o600); err == nil {
		t.Fatal("no error writing into a missing folder")
	}
}
