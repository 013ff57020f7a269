package cicypanes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/wire"
	"github.com/cicy-ai/cicy-agent/schema"
)

// files is a Core of one pane, w-1 (titled "one"), with no turn loop:
// its guidance file is in dir.
type files struct{ dir string }

func (f files) Agent(id string) (*cicy.Agent, error) {
	return nil, api.Usagef("pane %s is a shell pane; this works on cicy panes only", id)
}

func (f files) GuidanceFile(ref string) (string, string, error) {
	if ref != "w-1" && ref != "one" {
		return "", "", api.PaneNotFound(ref)
	}
	return "w-1", filepath.Join(f.dir, "AGENTS.md"), nil
}

// TestGuidanceReadAndWritten: a pane without its guidance file is not
// found, in a sentence naming the file; a file set is read back, under the
// pane's id whatever name the pane was asked by.
func TestGuidanceReadAndWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := New(files{dir})
	_, err := p.Guidance("one")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Kind != api.KindNotFound || ae.Message != "pane w-1 has no AGENTS.md" {
		t.Fatalf("no guidance file: %v", err)
	}
	doc, err := p.SetGuidance("one", "be brief")
	if err != nil || !doc.Saved || doc.Name != "w-1" || doc.Filename != "AGENTS.md" {
		t.Fatalf("set = %+v, %v", doc, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "AGENTS.md")); err != nil || string(b) != "be brief" {
		t.Fatalf("the file holds %q (%v)", b, err)
	}
	doc, err = p.Guidance("w-1")
	if err != nil || !doc.Exists || doc.Content != "be brief" || doc.Scope != "agent" {
		t.Fatalf("read back = %+v, %v", doc, err)
	}
	if _, err := p.SetGuidance("w-9", "x"); err == nil {
		t.Fatal("the guidance of no pane was set")
	}
}

// TestNotACicyPane: every cicy pane call answers the core's error for a
// pane that has no turn loop.
func TestNotACicyPane(t *testing.T) {
	t.Parallel()
	p := New(files{t.TempDir()})
	ctx := context.Background()
	_, err1 := p.Cancel("w-1")
	_, err2 := p.Command(ctx, "w-1", "/compact")
	_, _, err3 := p.Events("w-1")
	_, err4 := p.Memories("w-1")
	_, err5 := p.MemoryGet("w-1", "m")
	err6 := p.MemoryRemove("w-1", "m")
	_, err7 := p.MemoryReindex("w-1")
	_, err8 := p.MemoryFlush(ctx, "w-1")
	for i, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Kind != api.KindUsage {
			t.Errorf("call %d: %v, want the core's usage error", i+1, err)
		}
	}
}

// TestSendResult: a turn whose history or usage was not written is
// failed, with its answer and why.
func TestSendResult(t *testing.T) {
	t.Parallel()
	if r := sendResult(cicy.TurnResult{Status: cicy.TurnCompleted, Answer: "a"}); r.Status != cicy.TurnCompleted || r.Error != "" {
		t.Fatalf("a saved turn: %+v", r)
	}
	r := sendResult(cicy.TurnResult{Status: cicy.TurnCompleted, Answer: "a", Unsaved: "disk full"})
	if r.Status != cicy.TurnFailed || r.Answer != "a" || r.Error != "disk full" || r.Unsaved != "disk full" {
		t.Fatalf("an unsaved completed turn: %+v", r)
	}
	r = sendResult(cicy.TurnResult{Status: cicy.TurnFailed, Error: "no key", Unsaved: "disk full"})
	if r.Status != cicy.TurnFailed || r.Error != "no key; disk full" {
		t.Fatalf("an unsaved failed turn: %+v", r)
	}
}

// rows is a Ledger that keeps its rows.
type rows []schema.UsageRow

func (l *rows) Record(_ context.Context, r schema.UsageRow) error {
	*l = append(*l, r)
	return nil
}

// TestUsageSinkWritesTheRow: a model call of a cicy pane is one ledger
// row with its tokens and latency.
func TestUsageSinkWritesTheRow(t *testing.T) {
	t.Parallel()
	var l rows
	err := UsageSink{Ledger: &l}.RecordUsage(context.Background(), cicy.UsageRecord{
		PaneID: "w-1", ConversationID: "c", TurnID: "t", Model: "m", Latency: 1500 * time.Millisecond,
		Usage: wire.Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 3, CacheCreationInputTokens: 2},
	})
	want := schema.UsageRow{PaneID: "w-1", ConversationID: "c", TurnID: "t", Model: "m", InputTokens: 10, OutputTokens: 5,
		CacheRead: 3, CacheCreation: 2, LatencyMS: 1500}
	if err != nil || len(l) != 1 || l[0] != want {
		t.Fatalf("rows %+v (%v), want %+v", l, err, want)
	}
}
