package fakellm

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// waitTruth polls s until ok(Truth) holds, or fails after a deadline.
func waitTruth(t *testing.T, s *Server, what string, ok func(Truth) bool) Truth {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr := s.Truth()
		if ok(tr) {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("truth never showed %s: %+v", what, tr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The truth follows a request in flight, a tool call until its result
// comes back, and a retry asked for until the client comes back.
func TestTruth(t *testing.T) {
	forEachAPI(t, func(t *testing.T, a api, stream bool) {
		s := startServer(t, nil)
		if tr := s.Truth(); tr.InFlight != 0 || len(tr.Calls) != 0 || tr.RetryAfter != 0 {
			t.Fatalf("a fresh server's truth = %+v", tr)
		}

		// A held turn is in flight until the client goes away.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			body := mustJSON(t, a.body(params{prompt: "[[delay=30]]", tools: true, stream: stream}))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+a.pathFor(stream), bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		waitTruth(t, s, "one request in flight", func(tr Truth) bool { return tr.InFlight == 1 })
		cancel()
		<-done
		waitTruth(t, s, "nothing in flight", func(tr Truth) bool { return tr.InFlight == 0 })

		// A tool call is outstanding until a request carries its result.
		ask(t, s, a, params{prompt: "[[shell=echo hi]]", tools: true, stream: stream})
		tr := waitTruth(t, s, "the answer ended", func(tr Truth) bool { return tr.InFlight == 0 })
		if len(tr.Calls) != 1 || tr.Calls[0].Name != a.shellTool || tr.Calls[0].ID == "" {
			t.Fatalf("after a shell call: %+v", tr)
		}
		ask(t, s, a, params{prompt: "[[shell=echo hi]]", tools: true, toolResult: "not that call", stream: stream})
		if again := s.Truth(); len(again.Calls) != 1 || again.Calls[0].ID != tr.Calls[0].ID {
			t.Fatalf("another call's result settled the first: %+v", again)
		}
		body := mustJSON(t, a.body(params{prompt: "x", tools: true, toolResult: "hi", stream: stream}))
		for _, fake := range []string{`"toolu_1"`, `"call_1"`} {
			body = bytes.ReplaceAll(body, []byte(fake), []byte(`"`+tr.Calls[0].ID+`"`))
		}
		resp := send(t, http.MethodPost, s.URL+a.pathFor(stream), body, map[string]string{"Content-Type": "application/json"})
		resp.Body.Close()
		if tr := s.Truth(); len(tr.Calls) != 0 {
			t.Fatalf("after the call's result: %+v", tr)
		}

		// An error that asks for a retry is pending until the next request.
		resp = postJSON(t, s.URL+a.pathFor(stream), a.body(params{prompt: "[[status=503]] [[retry=30]]", tools: true, stream: stream}))
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "30" {
			t.Fatalf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if tr := waitTruth(t, s, "the answer ended", func(tr Truth) bool { return tr.InFlight == 0 }); tr.RetryAfter < 20*time.Second {
			t.Fatalf("after a 503 with retry: %+v", tr)
		}
		ask(t, s, a, params{prompt: "again", tools: true, stream: stream})
		if tr := s.Truth(); tr.RetryAfter != 0 {
			t.Fatalf("the retry came, yet: %+v", tr)
		}
	})
}

// [[reply]] may spell a line break \n and a backslash \\.
func TestReplyEscapes(t *testing.T) {
	s := startServer(t, nil)
	forEachAPI(t, func(t *testing.T, a api, stream bool) {
		r := ask(t, s, a, params{prompt: `[[reply=Proceed?\n❯ 1. Yes\n  2. No \\n]]`, tools: true, stream: stream})
		wantText(t, a, r, "Proceed?\n❯ 1. Yes\n  2. No \\n")
	})
}
