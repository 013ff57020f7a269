package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/api"
)

// flushCounter is a ResponseWriter that records what was flushed when.
type flushCounter struct {
	*httptest.ResponseRecorder
	at []int // the body's length at each flush
}

func (f *flushCounter) Flush() { f.at = append(f.at, f.Body.Len()) }

// TestListStreams: the list of panes goes out as it is encoded, a few
// hundred panes at a time, and is the same JSON array the whole list
// would be.
func TestListStreams(t *testing.T) {
	t.Parallel()
	var panes []api.PaneInfo
	for i := range 1000 {
		panes = append(panes, api.PaneInfo{ID: fmt.Sprintf("w-%d", i+1), Title: "p", Type: "cicy", State: "idle", CacheHit: -1})
	}
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	writeList(w, slices.Values(panes))
	if w.Code != http.StatusOK || len(w.at) < 3 || w.at[0] == 0 || w.at[0] > w.Body.Len()/3 {
		t.Fatalf("status %d, flushed at %v of %d bytes: the list did not go out in parts", w.Code, w.at, w.Body.Len())
	}
	var got []api.PaneInfo
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 1000 || got[999].ID != "w-1000" {
		t.Fatalf("the streamed list: %d panes, %v", len(got), err)
	}
	w = &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	writeList(w, slices.Values([]api.PaneInfo(nil)))
	if strings.TrimSpace(w.Body.String()) != "[]" {
		t.Fatalf("no panes: %q", w.Body.String())
	}
}

// TestListStreamsAsDescribed: the first panes of the list go out before
// the later ones are described (Supervisor.Panes describes each as the
// list takes it), so the first row of 100,000 waits for no other.
func TestListStreamsAsDescribed(t *testing.T) {
	t.Parallel()
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	var sentBefore int // bytes flushed before pane 800 was described
	writeList(w, func(yield func(api.PaneInfo) bool) {
		for i := range 1000 {
			if i == 800 && len(w.at) > 0 {
				sentBefore = w.at[0]
			}
			if !yield(api.PaneInfo{ID: fmt.Sprintf("w-%d", i+1), Title: "p", Type: "cicy", State: "idle", CacheHit: -1}) {
				return
			}
		}
	})
	if sentBefore == 0 {
		t.Fatalf("nothing went out before pane 800 was described (flushed at %v)", w.at)
	}
}
