package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

// TestGateHoldsUntilReady: while shut, the gate answers health at once
// (starting, how far the restore is) and holds any other request; once
// ready it passes the held request and every later one on.
func TestGateHoldsUntilReady(t *testing.T) {
	t.Parallel()
	g := NewGate(api.Health{Version: "v1", Home: "/h"})
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	g.Restoring(64000, 100000)
	code, body := call(t, http.MethodGet, srv.URL+"/api/health", "")
	var h api.Health
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != http.StatusOK {
		t.Fatalf("health while starting = %d %s", code, body)
	}
	if !h.Starting || h.Restoring != "restoring 64,000 of 100,000 panes" || h.Version != "v1" || h.PID == 0 {
		t.Fatalf("health while starting: %+v", h)
	}
	held := make(chan string, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/api/panes")
		if err != nil {
			held <- err.Error()
			return
		}
		resp.Body.Close()
		held <- resp.Header.Get("X-Next")
	}()
	select {
	case got := <-held:
		t.Fatalf("a request was answered before the supervisor was ready: %q", got)
	case <-time.After(200 * time.Millisecond): // held, as it should be
	}
	g.Ready(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Next", r.URL.Path)
	}))
	select {
	case got := <-held:
		if got != "/api/panes" {
			t.Fatalf("the held request: %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held request was not passed on once ready")
	}
	resp, err := http.Get(srv.URL + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Next") != "/api/health" {
		t.Fatal("health after ready is not the supervisor's")
	}
}

// TestGateFails: a supervisor that could not start answers every request
// with why.
func TestGateFails(t *testing.T) {
	t.Parallel()
	g := NewGate(api.Health{})
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	g.Fail(errors.New("the database is lost"))
	code, body := call(t, http.MethodGet, srv.URL+"/api/panes", "")
	if code != (&api.Error{Kind: api.KindFailed}).Status() || !strings.Contains(body, "the supervisor could not start: the database is lost") {
		t.Fatalf("after a failed start = %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != (&api.Error{Kind: api.KindFailed}).Status() {
		t.Fatalf("health after a failed start = %d", resp.StatusCode)
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 64000: "64,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
