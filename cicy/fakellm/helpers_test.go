package fakellm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// startServer starts a server that the test closes when it ends.
func startServer(t *testing.T, log io.Writer) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", log)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

var testClient = &http.Client{Timeout: 10 * time.Second}

// send makes a request with a raw body and returns the response, whose body
// the test closes when it ends.
func send(t *testing.T, method, url string, body []byte, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// postJSON POSTs v as JSON.
func postJSON(t *testing.T, url string, v any) *http.Response {
	t.Helper()
	return send(t, http.MethodPost, url, mustJSON(t, v), nil)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

// decodeBody reads a JSON response body into v.
func decodeBody(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string // empty for data-only events
	data string
}

// readSSE parses an event stream strictly: only event: and data: fields,
// each event ended by a blank line, nothing left over.
func readSSE(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	var (
		events []sseEvent
		cur    sseEvent
		data   []string
		open   bool
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if !open {
				t.Fatalf("empty event in stream")
			}
			cur.data = strings.Join(data, "\n")
			events = append(events, cur)
			cur, data, open = sseEvent{}, nil, false
		case strings.HasPrefix(line, "event: "):
			cur.name, open = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			data, open = append(data, strings.TrimPrefix(line, "data: ")), true
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read stream: %v", err)
	}
	if open {
		t.Fatalf("stream ended inside an event")
	}
	return events
}

// names lists the event names with runs of the same name collapsed, so a
// variable number of deltas compares equal.
func names(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		if len(out) == 0 || out[len(out)-1] != e.name {
			out = append(out, e.name)
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the server's and the test's
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
