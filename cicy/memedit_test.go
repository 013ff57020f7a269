package cicy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cicy/memory"
)

// A hand edit of a memory file reaches the next request: the index is
// rebuilt when the files change on disk, whether the edit is made while the
// pane runs, between two rounds of a turn, or while no supervisor ran.
func TestHandEditedMemoryReachesRequest(t *testing.T) {
	r := newRig(t, replies(textReply("ok")))
	st := memory.Open(r.ws)
	if _, _, err := st.Upsert([]memory.Memory{{MemID: "preference_color", Type: "preference", Title: "Colour", Content: "the user likes teal", Salience: 5}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(st.Dir, "preference_color.md")
	edit := func(old, new string) {
		t.Helper()
		b := mustRead(t, file)
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s holds no %q:\n%s", file, old, b)
		}
		mustWrite(t, file, strings.Replace(string(b), old, new, 1))
	}
	// Made while no pane watched: the file is newer than MEMORY.md.
	edit("teal", "navy")
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	r.start()
	carries := func(i int, want, not string) {
		t.Helper()
		body := r.requests(-1)[i].Body
		if !bytes.Contains(body, []byte("Colour: "+want)) || bytes.Contains(body, []byte(not)) {
			t.Errorf("request %d carries the memories %q, want %q and no %q", i, memoriesOf(body), want, not)
		}
	}
	r.send("first")
	carries(0, "the user likes navy", "teal")
	// Same size, made while the pane runs.
	edit("navy", "blue")
	r.send("second")
	carries(1, "the user likes blue", "navy")
	// A memory file added by hand.
	mustWrite(t, filepath.Join(st.Dir, "fact_editor.md"), "---\nmem_id: fact_editor\ntype: fact\ntitle: Editor\nsalience: 3\ntags:\nupdated: 2026-01-02T03:04:05Z\n---\n\nthe user works in vim\n")
	r.send("third")
	carries(2, "the user likes blue", "navy")
	if body := r.requests(3)[2].Body; !bytes.Contains(body, []byte("Editor: the user works in vim")) {
		t.Errorf("the hand-added memory is not in the request: %q", memoriesOf(body))
	}
	if idx := st.Index(); !strings.Contains(idx, "Colour: the user likes blue") || !strings.Contains(idx, "Editor: the user works in vim") {
		t.Errorf("MEMORY.md is %q", idx)
	}
}

// memoriesOf is the text of the <memories> block in a request body.
func memoriesOf(body []byte) string {
	s := string(body)
	i := strings.LastIndex(s, "\\u003cmemories\\u003e")
	if i < 0 {
		i = strings.LastIndex(s, "<memories>")
	}
	if i < 0 {
		return ""
	}
	return clip.Bytes(s[i:], 300)
}
