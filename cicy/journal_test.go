package cicy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// TestJournalRoundsSurviveACrash: rounds go to the journal between full
// writes; a restore applies them (stopping at a line torn by the crash)
// and folds them into current.json.
func TestJournalRoundsSurviveACrash(t *testing.T) {
	ws := t.TempDir()
	dir := HistoryDir(ws)
	hist := realisticHistory(6)
	w := historyWriter{dir: dir, agentID: "w-1", convID: "c1"}
	if err := w.save(hist[:4], time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := w.appendRound(hist[:5], time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := w.appendRound(hist[:6], time.Now()); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(filepath.Join(dir, "current.json"))
	if strings.Count(string(cur), `{"id":`) != 4 {
		t.Fatalf("current.json was rewritten by a round:\n%s", cur)
	}
	j, _ := os.OpenFile(filepath.Join(dir, journalName), os.O_APPEND|os.O_WRONLY, 0)
	j.WriteString(`{"id":7,"role":"user","content":[{"type":"te`) // torn by the crash
	j.Close()
	if err := os.WriteFile(filepath.Join(dir, "reply.json"), []byte(`{"status":"working"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	a, err := Start(PaneConfig{ID: "w-1", Workspace: ws, RoleTemplate: "assistant"}, Env{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// hist[5] is a tool call: 6 messages, its synthetic result, the marker.
	if n := a.MessageCount(); n != 8 {
		t.Fatalf("restored %d messages, want 6 + a synthetic result + the interrupted marker", n)
	}
	if _, err := os.Stat(filepath.Join(dir, journalName)); !os.IsNotExist(err) {
		t.Fatalf("the journal was not folded into current.json: %v", err)
	}
	var c Current
	if _, err := readJSON(filepath.Join(dir, "current.json"), &c); err != nil || len(c.Messages) != 8 {
		t.Fatalf("current.json after restore: %d messages, %v", len(c.Messages), err)
	}
	if c.Messages[7].Content[0].Text != markerInterrupted || c.Messages[6].Content[0].Type != wire.TypeToolResult {
		t.Fatalf("tail = %+v", c.Messages[5:])
	}
}

// TestRawBodyMatchesMarshal: the body spliced from the cached encodings is
// byte for byte what encoding the request gives.
func TestRawBodyMatchesMarshal(t *testing.T) {
	for _, n := range []int{1, 7, 650} {
		hist := realisticHistory(n)
		w := historyWriter{dir: t.TempDir()}
		if err := w.encode(hist); err != nil {
			t.Fatal(err)
		}
		p := Prompt{Model: "m", MaxTokens: 10, System: "s", Role: "r", Memories: "mem", History: hist, Final: true,
			Tools: []wire.Tool{{Name: "shell", Description: "d", InputSchema: []byte(`{"type":"object"}`)}}}
		plain := Assemble(p)
		p.Encoded = w.enc
		fast := Assemble(p)
		if fast.RawMessages == nil {
			t.Fatalf("n=%d: no raw messages", n)
		}
		a, err := plain.Body()
		if err != nil {
			t.Fatal(err)
		}
		b, err := fast.Body()
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Fatalf("n=%d: spliced body differs from the encoded one", n)
		}
		if strings.Count(string(b), `"cache_control"`) != 3 {
			t.Fatalf("n=%d: %d breakpoints", n, strings.Count(string(b), `"cache_control"`))
		}
	}
}
