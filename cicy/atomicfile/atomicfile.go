// Package atomicfile writes a file so that a crash, or a reader at the same
// moment, sees the old file or the new one, never a part of either: the
// one way cicy-agent replaces a file it keeps (histories, memories,
// settings, a pane's guidance).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TempPrefix starts the name of the temp file Write creates beside path;
// a folder's owner may remove stale ones a crash left behind.
const TempPrefix = ".tmp-"

// Write writes data to path with the given mode through a temp file in the
// same folder: write, fsync, rename over path, fsync the folder (so the
// rename itself survives a crash). The folder must exist.
func Write(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err = errors.Join(werr, serr, cerr); err != nil {
		return err
	}
	// CreateTemp made the file 0600; another mode is set before the file
	// takes path's name.
	if perm != 0o600 {
		if err = os.Chmod(tmp, perm); err != nil {
			return err
		}
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// The rename is done; a folder that cannot be synced (some file
	// systems refuse) does not undo it.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// WritePrivate is Write for a file that is the user's alone: the file is
// 0600, and so is a folder it creates on the way (0700), since it may hold
// conversation text or an agent's settings. The cicy histories and the
// CLI agents' seed files are written so.
func WritePrivate(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return Write(path, data, 0o600)
}
