package cicy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/apitest"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
)

// TestHistoryFilesScrubbed: a key a tool printed and the model repeated
// is not on disk in the pane's history (current.json, reply.json, the
// memory buffer), whether written as is or as JSON escapes it.
func TestHistoryFilesScrubbed(t *testing.T) {
	key := "sk-ant-on-disk<&>-0123456789"
	r := newRig(t, replies(
		apitest.Reply{Resp: apitest.ToolResponse("toolu_k", "shell", map[string]any{"command": "printf '%s%s\\n' 'sk-ant-on-disk<&' '>-0123456789'"}, wire.Usage{InputTokens: 10, OutputTokens: 5})},
		apitest.Reply{Resp: apitest.TextResponse("the key is "+key, wire.Usage{InputTokens: 20, OutputTokens: 6})},
	))
	r.tweak = func(e *Env) {
		e.Getenv = func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": key}[k] }
	}
	r.start()
	if res := r.send("show the key"); res.Status != TurnCompleted {
		t.Fatalf("turn: %+v", res)
	}
	r.expectIdle()
	escaped, _ := json.Marshal(key)
	var files int
	err := filepath.Walk(filepath.Join(r.ws, ".cicy"), func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), key) || strings.Contains(string(b), strings.Trim(string(escaped), `"`)) {
			t.Errorf("%s holds the key:\n%s", path, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := r.replyFile()
	if len(rep.ToolCalls) != 1 || rep.ToolCalls[0].Result != "[redacted]\n" || rep.Answer != "the key is [redacted]" {
		t.Errorf("reply.json: %+v", rep)
	}
	if h := r.history(); len(h) != 4 || toolResults(h[2])[0].Content != "[redacted]\n" {
		t.Errorf("current.json: %+v", h)
	}
	if files < 2 {
		t.Errorf("only %d files under .cicy", files)
	}
}
