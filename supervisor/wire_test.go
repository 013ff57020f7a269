package supervisor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/memory"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// TestWireDocumentsMatchTheirSources: package api keeps its own copies of
// documents the daemon builds from other packages' types (a pane's status,
// a memory, a flush's result, the task statuses); each encodes as its
// source does.
func TestWireDocumentsMatchTheirSources(t *testing.T) {
	code := 3
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := pane.Status{State: pane.Exited, Reason: "exit 3", Since: at, PID: 42, ExitCode: &code}
	m := memory.Memory{MemID: "m", Type: "fact", Title: "T", Content: "C", Salience: 3, Tags: []string{"a"}, Updated: at, File: "m.md"}
	p := memory.Problem{File: "x.md", Err: "bad"}
	f := cicy.FlushResult{Turns: 2, Stored: 1, Error: "e"}
	for _, c := range []struct {
		name     string
		src, got any
	}{
		{"pane status", st, wireStatus(st)},
		{"memory", m, api.Memory(m)},
		{"problem", p, api.Problem(p)},
		{"flush result", f, api.FlushResult(f)},
	} {
		want, _ := json.Marshal(c.src)
		got, _ := json.Marshal(c.got)
		if string(got) != string(want) {
			t.Errorf("%s: api encodes %s, its source %s", c.name, got, want)
		}
	}
	for _, s := range []string{schema.TaskQueued, schema.TaskDelivered, schema.TaskDone, schema.TaskFailed, schema.TaskCancelled} {
		if (api.TaskInfo{Status: s}).Ended() != schema.Terminal(s) {
			t.Errorf("status %s: api says ended %v, the store %v", s, !schema.Terminal(s), schema.Terminal(s))
		}
	}
	if api.TaskQueued != schema.TaskQueued || api.TaskDelivered != schema.TaskDelivered || api.TaskDone != schema.TaskDone ||
		api.TaskFailed != schema.TaskFailed || api.TaskCancelled != schema.TaskCancelled {
		t.Error("package api's task statuses differ from the store's")
	}
}
