package cicy

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A turn whose history (current.json, its journal, reply.json) or whose
// usage could not be written does not end as if all were well: its
// result says so in one sentence (TurnResult.Unsaved), its history stays
// in memory, and the loop writes it again at the next turn or on a timer
// (saveRetryFirst, doubling up to saveRetryMax) until a write succeeds.

// The history's retry timer while it is not on disk.
const (
	saveRetryFirst = 2 * time.Second
	saveRetryMax   = time.Minute
)

// IsDiskFull reports whether err says the file system has no room left
// (ENOSPC), or the user's quota is spent (EDQUOT).
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// unsavedText is the sentence of a turn whose history (histErr) or usage
// (usageErr, of n model calls) was not written; "" when both were. It
// starts with "disk full: " when the disk is the cause.
func unsavedText(pane string, histErr error, n int, usageErr error) string {
	var parts []string
	full := false
	if histErr != nil {
		full = IsDiskFull(histErr)
		parts = append(parts, fmt.Sprintf("the history of %s could not be written (%s); its answer is kept in memory and written at the next turn or retry", pane, WriteProblem(histErr)))
	}
	if usageErr != nil {
		full = full || IsDiskFull(usageErr)
		calls := "1 model call"
		if n != 1 {
			calls = fmt.Sprintf("%d model calls", n)
		}
		parts = append(parts, fmt.Sprintf("the usage of %s of this turn is not in the ledger yet (%s)", calls, WriteProblem(usageErr)))
	}
	if len(parts) == 0 {
		return ""
	}
	s := strings.Join(parts, "; ")
	if full {
		return "disk full: " + s
	}
	return s
}

// WriteProblem is a write error in few words, on one line: the cause and
// the folder of the file that could not be written ("no space left on
// device in /w/.cicy/history"), else the error's own text.
func WriteProblem(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%v in %s", pe.Err, filepath.Dir(pe.Path))
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// wrote tells the supervisor how a write of the history went.
func (a *Agent) wrote(err error) {
	if a.env.OnWrite != nil {
		a.env.OnWrite(err)
	}
}

// faultAt is the test hook's error for a write of path (nil without a
// hook, or when it lets the write through).
func faultAt(fault func(string) error, path string) error {
	if fault == nil {
		return nil
	}
	if err := fault(path); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// writeReplyFile writes reply.json.
func (a *Agent) writeReplyFile(r Reply) error {
	path := filepath.Join(a.dir(), "reply.json")
	if err := faultAt(a.env.writeFault, path); err != nil {
		return err
	}
	return writeScrubbed(path, r, a.env.Scrub)
}

// markUnsaved records, on the loop, whether the history in memory is on
// disk; while it is not, a timer writes it again.
func (a *Agent) markUnsaved(err error) {
	if err == nil {
		a.unsaved = false
		a.saveBackoff = 0
		if a.saveTimer != nil {
			a.saveTimer.Stop()
			a.saveTimer = nil
		}
		if len(a.held) > 0 { // the history on disk holds them now
			a.held = nil
			a.keepQueue()
		}
		return
	}
	a.unsaved = true
	if a.saveTimer == nil {
		if a.saveBackoff == 0 {
			a.saveBackoff = saveRetryFirst
		}
		a.saveTimer = a.env.Clock.AfterFunc(a.saveBackoff, func() { a.post(a.retrySave) })
	}
}

// retrySave writes the history and reply.json again (on the loop). A
// running job holds the history and writes it itself.
func (a *Agent) retrySave() {
	a.saveTimer = nil
	if a.running || !a.unsaved {
		return
	}
	err := a.saveAll()
	if err != nil {
		a.saveBackoff = min(2*a.saveBackoff, saveRetryMax)
		a.log.WithError(err).Warn("Could not write the history again; retrying")
		a.markUnsaved(err)
		return
	}
	a.log.Info("The history kept in memory is written")
	a.markUnsaved(nil)
}

// saveAll writes current.json and reply.json from the loop's state, and
// tells how it went.
func (a *Agent) saveAll() error {
	err := a.save()
	if err == nil {
		err = a.writeReplyFile(a.reply)
	}
	a.wrote(err)
	return err
}

// lastSave is the loop's last chance, as it stops, to write a history
// still kept in memory (a running job writes its own end).
func (a *Agent) lastSave() {
	if a.saveTimer != nil {
		a.saveTimer.Stop()
		a.saveTimer = nil
	}
	if a.running || !a.unsaved {
		return
	}
	if err := a.saveAll(); err != nil {
		a.log.WithError(err).Error("The history kept in memory could not be written before the stop: its last turn is lost")
		return
	}
	a.unsaved = false
	a.log.Info("The history kept in memory is written")
}
