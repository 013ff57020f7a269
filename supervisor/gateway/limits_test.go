package gateway

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBodyTrickleTimesOut: a body sent a byte at a time with a valid
// token is cut off at the body timeout, with an answer saying so; the
// connection is not held for ever.
func TestBodyTrickleTimesOut(t *testing.T) {
	t.Parallel()
	rg := startRigCfg(t, startTap(t), Upstreams{}, nil, func(c *Config) { c.BodyTimeout = 500 * time.Millisecond })
	conn, err := net.Dial("tcp", rg.gw.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nanthropic-version: 2023-06-01\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", paneToken)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := conn.Write([]byte("{")); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b.String(), "did not arrive within 500ms") {
		t.Fatalf("answer %d %s", resp.StatusCode, b.String())
	}
}

// TestBodiesInFlightBounded: large bodies wait for room: with room for
// one, three at once reach the upstream one after the other.
func TestBodiesInFlightBounded(t *testing.T) {
	t.Parallel()
	tp := startTap(t)
	rg := startRigCfg(t, tp, Upstreams{Anthropic: tp.url}, nil, func(c *Config) { c.MaxBodiesInFlight = 1 << 20 })
	big := strings.Repeat("x", 600<<10)
	var wg sync.WaitGroup
	var peak atomic.Int32
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				if n := tp.open.Load(); n > peak.Load() {
					peak.Store(n)
				}
			}
		}
	}()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := claudeCode("[[delay=0.5]] "+big, false)
			resp, body := rg.post(t, s.path, s.header, s.body)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status %d: %.200s", resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	close(done)
	time.Sleep(10 * time.Millisecond)
	if peak.Load() != 1 {
		t.Fatalf("%d requests reached the upstream at once, want 1", peak.Load())
	}
}

// TestAbsoluteURLIgnored: a request line with an absolute URL, and its
// Host, do not choose where the gateway forwards: the configured
// upstream gets it.
func TestAbsoluteURLIgnored(t *testing.T) {
	t.Parallel()
	tp := startTap(t)
	rg := startRigTo(t, tp, Upstreams{Anthropic: tp.url}, nil)
	conn, err := net.Dial("tcp", rg.gw.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(conn, "POST http://evil.invalid/v1/messages HTTP/1.1\r\nHost: evil.invalid\r\nx-api-key: %s\r\nanthropic-version: 2023-06-01\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", paneToken, len(body), body)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(tp.fake.Requests()) != 1 {
		t.Fatalf("status %d; the configured upstream got %d requests", resp.StatusCode, len(tp.fake.Requests()))
	}
}
