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

// WritePrivate makes the folders it needs, the user's alone, and the file
// 0600; a folder that exists keeps its mode.
func TestWritePrivateMakesTheFolder(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "f")
	if err := WritePrivate(path, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{filepath.Join(root, "a"): 0o700, filepath.Join(root, "a", "b"): 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "x" {
		t.Fatalf("read %q, %v; want \"x\"", b, err)
	}
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivate(filepath.Join(shared, "g"), []byte("y")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(shared); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("an existing folder's mode changed to %v (%v)", fi.Mode().Perm(), err)
	}
}

// A folder that cannot be made is an error naming it.
func TestWritePrivateWithoutAFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivate(filepath.Join(file, "sub", "f"), []byte("x")); err == nil {
		t.Fatal("no error writing under a file")
	}
}
