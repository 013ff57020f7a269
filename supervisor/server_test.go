package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// rawRequest sends one request as written over a fresh connection to the
// supervisor's socket and returns the status and body of the answer.
func rawRequest(t *testing.T, c *api.Client, method, path, contentType, body string) (int, string) {
	t.Helper()
	conn, err := net.Dial("unix", c.Home().Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A safety net so a broken server fails the test instead of hanging it.
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: cicy\r\nConnection: close\r\n", method, path)
	if contentType != "" {
		fmt.Fprintf(conn, "Content-Type: %s\r\n", contentType)
	}
	fmt.Fprintf(conn, "Content-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// shellPane creates a PTY shell pane that waits for input.
func shellPane(t *testing.T, c *api.Client) string {
	t.Helper()
	p, err := c.Create(context.Background(), api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// TestAPIRefusesDotSegments: a path with a "." or ".." part (raw or
// escaped) or an empty part is a 400 with a sentence, never a redirect to
// the cleaned path — "DELETE …/memory/.." must not kill the pane.
func TestAPIRefusesDotSegments(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	id := shellPane(t, c)
	for _, path := range []string{
		"/api/panes/" + id + "/memory/..", "/api/panes/" + id + "/memory/%2e%2e", "/api/panes/" + id + "/memory/%2E%2E",
		"/api/panes/" + id + "/memory/.", "/api/panes/" + id + "/./memory", "/api/panes/" + id + "/memory/..%2f" + id,
		"/api/panes/" + id + "/memory/x/../..", "/api//panes/" + id,
	} {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			code, body := rawRequest(t, c, method, path, "", "")
			if code != http.StatusBadRequest || !strings.Contains(body, "is not a valid name here") {
				t.Errorf("%s %s = %d %s, want 400 and a sentence", method, path, code, body)
			}
		}
	}
	// Through the client, as `memory rm w-1 ..` and `memory show w-1 ..`.
	var ae *api.Error
	if err := c.MemoryRemove(ctx, id, ".."); !errors.As(err, &ae) || ae.Kind != api.KindUsage {
		t.Errorf("MemoryRemove(..) = %v, want a usage error", err)
	}
	if _, err := c.Memory(ctx, id, ".."); !errors.As(err, &ae) || ae.Kind != api.KindUsage {
		t.Errorf("Memory(..) = %v, want a usage error", err)
	}
	if _, err := c.Memory(ctx, id, "."); !errors.As(err, &ae) || ae.Kind != api.KindUsage {
		t.Errorf("Memory(.) = %v, want a usage error", err)
	}
	if _, err := c.Get(ctx, id); err != nil {
		t.Fatalf("the pane is gone: %v", err)
	}
}

// TestClientNeverFollowsRedirects: a DELETE answered with a redirect is
// an error, and nothing is sent to the other URL.
func TestClientNeverFollowsRedirects(t *testing.T) {
	dir, err := os.MkdirTemp("", "cicy-redir-") // short: a socket path is limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	h := Home{Root: dir}
	if err := os.MkdirAll(filepath.Dir(h.Socket()), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	hits := make(chan string, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.Method + " " + r.URL.EscapedPath()
		if r.URL.Path == "/api/panes/w-1/memory/x" {
			http.Redirect(w, r, "/api/panes/w-1", http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	err = api.NewClient(h).MemoryRemove(context.Background(), "w-1", "x")
	if err == nil || !strings.Contains(err.Error(), "not sent again") {
		t.Fatalf("MemoryRemove through a redirect = %v, want an error", err)
	}
	close(hits)
	var got []string
	for h := range hits {
		got = append(got, h)
	}
	if len(got) != 1 || got[0] != "DELETE /api/panes/w-1/memory/x" {
		t.Fatalf("requests = %q, want only the DELETE of the memory", got)
	}
}

// TestAPIRefusesTrailingBytes: one JSON value per body, nothing after it.
func TestAPIRefusesTrailingBytes(t *testing.T) {
	c := startServer(t)
	for _, body := range []string{`{"text":"a"} {"text":"b"}`, `{"text":"a"}x`, `{"text":"a"}}`} {
		code, msg := rawRequest(t, c, http.MethodPost, "/api/panes/w-9/send", "application/json", body)
		if code != http.StatusBadRequest || !strings.Contains(msg, "bad request body") {
			t.Errorf("body %s = %d %s, want 400", body, code, msg)
		}
	}
	// Trailing white space is fine: the body is read (no pane w-9).
	if code, msg := rawRequest(t, c, http.MethodPost, "/api/panes/w-9/send", "application/json", "{\"text\":\"a\"}\n \n"); code != http.StatusNotFound {
		t.Errorf("trailing newline = %d %s, want 404", code, msg)
	}
}

// TestAPIRefusesNUL: a NUL byte in send text, a key or a task is a usage
// error with a sentence, not a failure of tmux send-keys.
func TestAPIRefusesNUL(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	id := shellPane(t, c)
	var ae *api.Error
	for _, req := range []api.SendRequest{{Text: "echo a\x00b"}, {Keys: []string{"C-\x00"}}} {
		if _, err := c.Send(ctx, id, req); !errors.As(err, &ae) || ae.Kind != api.KindUsage || !strings.Contains(ae.Message, "NUL byte") {
			t.Errorf("Send(%+v) = %v, want a usage error naming the NUL byte", req, err)
		}
	}
	if _, err := c.Dispatch(ctx, api.DispatchRequest{To: id, Text: "do a\x00b"}); !errors.As(err, &ae) || ae.Kind != api.KindUsage || !strings.Contains(ae.Message, "NUL byte") {
		t.Errorf("Dispatch with a NUL = %v, want a usage error naming the NUL byte", err)
	}
	if ts, _ := c.Tasks(ctx, ""); len(ts) != 0 {
		t.Errorf("a task was created: %+v", ts)
	}
}

// TestAPISlowBodyIsCut: a client that sends the headers, then trickles
// the body, is answered 400 once the body timeout passes; streams and a
// long wait answering a body that did arrive are not cut by it.
func TestAPISlowBodyIsCut(t *testing.T) {
	t.Parallel()
	c := startServerWith(t, Config{BodyTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	id := shellPane(t, c)
	events, err := c.TeamEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()

	conn, err := net.Dial("unix", c.Home().Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // fail, not hang
	fmt.Fprintf(conn, "POST /api/panes/%s/send HTTP/1.1\r\nHost: cicy\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"text\":\"", id)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 50 ms, until the server hangs up
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "did not arrive within") {
		t.Fatalf("trickled body = %d %s, want 400 and a sentence", resp.StatusCode, b)
	}

	// A wait longer than the body timeout (the pane is quiet for the
	// settle time, 500 ms, before it answers) after a body that arrived.
	res, err := c.Send(ctx, id, api.SendRequest{Text: "echo waited-$((6*7))", Wait: true, Timeout: 20})
	if err != nil || !strings.Contains(res.Answer, "waited-42") {
		t.Fatalf("send --wait after the body timeout: %+v %v", res, err)
	}
	// The event stream opened before all this still carries news.
	p, err := c.Create(ctx, api.CreateRequest{Title: "late", Type: "shell", Backend: "pty", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := events.Next()
		if err != nil {
			t.Fatalf("the event stream ended: %v", err)
		}
		if ev.Pane != nil && ev.Pane.ID == p.ID {
			break
		}
	}
}

// TestPutGuidanceBodies: the guidance file is sent as {"content": …} or
// as the Markdown itself; a JSON object that is not the object form is
// refused rather than stored.
func TestPutGuidanceBodies(t *testing.T) {
	c := startServer(t)
	id := shellPane(t, c)
	path := "/api/memory/templates/agent/" + id
	read := func() string {
		var d api.GuidanceDoc
		code, body := rawRequest(t, c, http.MethodGet, path, "", "")
		if err := json.Unmarshal([]byte(body), &d); err != nil || code != http.StatusOK {
			t.Fatalf("GET = %d %s", code, body)
		}
		return d.Content
	}
	for _, tc := range []struct{ ctype, body, want string }{
		{"application/json", `{"content": "# Role\nA\n"}`, "# Role\nA\n"},
		{"", `{"content": "# Role\nB\n"}`, "# Role\nB\n"},
		{"text/markdown; charset=utf-8", "# Role\n\nYou are C.\n", "# Role\n\nYou are C.\n"},
		{"", "# Role\n\nYou are D.\n", "# Role\n\nYou are D.\n"},
		{"application/x-www-form-urlencoded", "[E](https://example.com) is the role\n", "[E](https://example.com) is the role\n"}, // curl --data
		{"text/plain", `{"content": "stored as it is"}`, `{"content": "stored as it is"}`},
		{"", "{{ not json }}\n", "{{ not json }}\n"},
	} {
		code, body := rawRequest(t, c, http.MethodPut, path, tc.ctype, tc.body)
		if code != http.StatusOK {
			t.Fatalf("PUT %q as %q = %d %s", tc.body, tc.ctype, code, body)
		}
		if got := read(); got != tc.want {
			t.Fatalf("PUT %q as %q stored %q", tc.body, tc.ctype, got)
		}
	}
	for _, tc := range []struct{ ctype, body string }{
		{"", `{"contents": "typo"}`},
		{"application/json", "# Role\n"},
		{"application/json", `["a"]`},
		{"application/json", `{"content": "a"} x`},
		{"", "\xff\xfe"},
	} {
		code, body := rawRequest(t, c, http.MethodPut, path, tc.ctype, tc.body)
		if code != http.StatusBadRequest {
			t.Errorf("PUT %q as %q = %d %s, want 400", tc.body, tc.ctype, code, body)
		}
	}
	if got := read(); got != "{{ not json }}\n" {
		t.Fatalf("a refused PUT changed the file: %q", got)
	}
}
