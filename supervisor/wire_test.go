package supervisor

import (
	"encoding/json"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
)

// TestWireDocumentsMatchTheirSources: package api keeps its own copies of
// documents the daemon builds from other packages' types (a flush's
// result; a pane's status is package eventhub's to check); each encodes as
// its source does.
func TestWireDocumentsMatchTheirSources(t *testing.T) {
	f := cicy.FlushResult{Turns: 2, Stored: 1, Error: "e"}
	for _, c := range []struct {
		name     string
		src, got any
	}{
		{"flush result", f, api.FlushResult(f)},
	} {
		want, _ := json.Marshal(c.src)
		got, _ := json.Marshal(c.got)
		if string(got) != string(want) {
			t.Errorf("%s: api encodes %s, its source %s", c.name, got, want)
		}
	}
}
