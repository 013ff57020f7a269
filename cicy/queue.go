package cicy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// queueFile holds the messages and commands a pane accepted that no turn
// has taken yet (next to current.json): what Send returned for survives
// any stop of the process.
const queueFile = "queue.json"

// queued is one entry of the queue file.
type queued struct {
	Text    string `json:"text,omitempty"`
	Command string `json:"command,omitempty"`
}

// saveQueue writes the queue file (removes it when q is empty).
func saveQueue(dir string, q []item) error {
	path := filepath.Join(dir, queueFile)
	if len(q) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", queueFile, err)
		}
		return nil
	}
	out := make([]queued, 0, len(q))
	for _, it := range q {
		out = append(out, queued{Text: it.text, Command: it.command})
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return writeJSONAtomic(path, out)
}

// restoreQueue puts the queue file's messages back in the queue, but for
// those the history's last user message holds (a stop between a turn's
// start and the queue file's update), and returns how many there are. An
// unreadable file is kept aside.
func (a *Agent) restoreQueue() (int, error) {
	var q []queued
	ok, err := readJSON(filepath.Join(a.dir(), queueFile), &q)
	if err != nil {
		aside := filepath.Join(a.dir(), fmt.Sprintf("queue.corrupt-%d.json", a.env.Now().Unix()))
		_ = os.Rename(filepath.Join(a.dir(), queueFile), aside)
		return 0, err
	}
	if !ok {
		return 0, nil
	}
	last := lastUserText(a.hist)
	for _, e := range q {
		if e.Command == "" && (e.Text == "" || strings.Contains(last, e.Text)) {
			continue
		}
		a.queue = append(a.queue, item{text: e.Text, command: e.Command})
	}
	return len(a.queue), saveQueue(a.dir(), a.queue)
}

// lastUserText is the text of the last user message that has text.
func lastUserText(h []wire.Message) string {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == wire.RoleUser {
			if t := h[i].JoinedText(); t != "" {
				return t
			}
		}
	}
	return ""
}

// TakesUp reports whether a pane's restore would start work of its own,
// read from its files without restoring it: its last turn was in flight
// (reply.json says working) or messages wait in its queue file. A file it
// cannot read says yes: the restore decides, and shows what it found.
func TakesUp(workspace string) bool {
	dir := HistoryDir(workspace)
	var rep struct {
		Status string `json:"status"`
	}
	if ok, err := readJSON(filepath.Join(dir, "reply.json"), &rep); err != nil || ok && rep.Status == TurnWorking {
		return true
	}
	_, err := os.Stat(filepath.Join(dir, queueFile))
	return !errors.Is(err, fs.ErrNotExist)
}
