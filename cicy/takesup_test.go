package cicy

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTakesUp: a pane's files say whether its restore starts work of its
// own — a turn in flight, queued messages, or a reply.json it cannot read
// (the restore decides) — and an ended turn or no files at all do not.
func TestTakesUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"no files", nil, false},
		{"ended turn", map[string]string{"reply.json": `{"status":"completed"}`}, false},
		{"turn in flight", map[string]string{"reply.json": `{"status":"working"}`}, true},
		{"queued messages", map[string]string{"reply.json": `{"status":"completed"}`, queueFile: `[{"text":"hi"}]`}, true},
		{"unreadable reply", map[string]string{"reply.json": `{"status":`}, true},
	} {
		ws := t.TempDir()
		dir := HistoryDir(ws)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, body := range c.files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if got := TakesUp(ws); got != c.want {
			t.Errorf("%s: TakesUp = %v, want %v", c.name, got, c.want)
		}
	}
}
