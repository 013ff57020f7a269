package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/cicy/fakellm"
)

// The benchmarks run the same client against an upstream directly and
// through the gateway, side by side, all in one process:
//
//	go test -run '^$' -bench . -benchtime 2000x ./supervisor/gateway/
//
// FirstByte and Concurrent50 use fakellm as the upstream (a Claude Code
// shaped streaming request); PerEvent uses a ticker upstream that stamps
// each event with its send time, so the client sees each event's delay.

type nopRecorder struct{}

func (nopRecorder) Record(context.Context, Call) error { return nil }

// benchRig is an upstream URL and a gateway in front of it.
type benchRig struct {
	direct, gateway string // base URLs for the Anthropic route
	client          *http.Client
}

func newBenchRig(b *testing.B, upstream string) *benchRig {
	b.Helper()
	gw, err := New(Config{
		Upstreams:  Upstreams{Anthropic: upstream, OpenAI: upstream + "/v1"},
		Credential: func(string) string { return "sk-bench" },
		Panes:      panes{paneToken: paneID},
		Usage:      nopRecorder{},
	})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = gw.Serve() }()
	b.Cleanup(func() { _ = gw.Close() })
	tr := &http.Transport{MaxIdleConnsPerHost: 200, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchRig{direct: upstream, gateway: gw.URL(), client: &http.Client{Transport: tr}}
}

func startFake(b *testing.B) string {
	b.Helper()
	fake, err := fakellm.Start("127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fake.Close() })
	return fake.URL
}

// stream posts a Claude Code shaped streaming request to base and returns
// the time to the first body byte and to the end.
func (br *benchRig) stream(b *testing.B, base string, body []byte) (first, total time.Duration) {
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages?beta=true", bytes.NewReader(body))
	req.Header.Set("x-api-key", paneToken)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := br.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		b.Fatal(err)
	}
	first = time.Since(start)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	return first, time.Since(start)
}

func claudeBody(prompt string) []byte {
	data, _ := json.Marshal(claudeCode(prompt, true).body)
	return data
}

func pct(ds []time.Duration, p float64) float64 {
	slices.Sort(ds)
	return float64(ds[int(float64(len(ds)-1)*p)].Nanoseconds()) / 1e3
}

// report adds p50 and p99 in µs.
func report(b *testing.B, ds []time.Duration, what string) {
	b.ReportMetric(pct(ds, 0.5), what+"-p50-µs")
	b.ReportMetric(pct(ds, 0.99), what+"-p99-µs")
}

func BenchmarkFirstByte(b *testing.B) {
	br := newBenchRig(b, startFake(b))
	body := claudeBody("say hi")
	for _, side := range []struct{ name, base string }{{"direct", br.direct}, {"gateway", br.gateway}} {
		b.Run(side.name, func(b *testing.B) {
			br.stream(b, side.base, body) // warm the connections
			firsts := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				f, _ := br.stream(b, side.base, body)
				firsts = append(firsts, f)
			}
			report(b, firsts, "ttfb")
		})
	}
}

// ticker is an upstream that streams n events, each stamped with the
// time it was sent, every gap.
func startTicker(b *testing.B, n int, gap time.Duration) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range n {
			if i > 0 {
				time.Sleep(gap)
			}
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"t\":%d}\n\n", time.Now().UnixNano())
			if rc.Flush() != nil {
				return
			}
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

func BenchmarkPerEvent(b *testing.B) {
	const events = 50
	br := newBenchRig(b, startTicker(b, events, 200*time.Microsecond))
	body := claudeBody("say hi")
	for _, side := range []struct{ name, base string }{{"direct", br.direct}, {"gateway", br.gateway}} {
		b.Run(side.name, func(b *testing.B) {
			var delays []time.Duration
			for range b.N {
				delays = append(delays, br.eventDelays(b, side.base, body)...)
			}
			report(b, delays, "event")
		})
	}
}

// eventDelays streams from base and returns each event's delay from its
// send stamp to its arrival.
func (br *benchRig) eventDelays(b *testing.B, base string, body []byte) []time.Duration {
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("x-api-key", paneToken)
	resp, err := br.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out []time.Duration
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			return out
		}
		if i := bytes.Index(line, []byte(`"t":`)); i >= 0 {
			now := time.Now().UnixNano()
			sent, _ := strconv.ParseInt(string(bytes.TrimRight(line[i+4:], "}\n")), 10, 64)
			out = append(out, time.Duration(now-sent))
		}
	}
}

func BenchmarkConcurrent50(b *testing.B) {
	const streams = 50
	br := newBenchRig(b, startFake(b))
	body := claudeBody("say hi")
	for _, side := range []struct{ name, base string }{{"direct", br.direct}, {"gateway", br.gateway}} {
		b.Run(side.name, func(b *testing.B) {
			var mu sync.Mutex
			var firsts, totals []time.Duration
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				var wg sync.WaitGroup
				for range streams {
					wg.Go(func() {
						f, tot := br.stream(b, side.base, body)
						mu.Lock()
						firsts, totals = append(firsts, f), append(totals, tot)
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*streams), "cpu-µs/stream")
			report(b, firsts, "ttfb")
			report(b, totals, "stream")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOpenStreams holds 50 streams open (fakellm's [[delay]]) and
// reports the heap and goroutines they take, directly and through the
// gateway; the difference is the gateway's cost per open stream.
func BenchmarkOpenStreams(b *testing.B) {
	const streams = 50
	br := newBenchRig(b, startFake(b))
	body := claudeBody("[[delay=30]] hold")
	for _, side := range []struct{ name, base string }{{"direct", br.direct}, {"gateway", br.gateway}} {
		b.Run(side.name, func(b *testing.B) {
			var heap, gor float64
			_, base := heapNow()
			for range b.N {
				h0, g0 := heapNow()
				cancels := make([]func(), 0, streams)
				for range streams {
					cancels = append(cancels, br.hold(b, side.base, body))
				}
				h1, g1 := heapNow()
				heap, gor = float64(h1-h0)/streams, float64(g1-g0)/streams
				for _, c := range cancels {
					c()
				}
				// Let the cut streams wind down before the next baseline.
				deadline := time.Now().Add(5 * time.Second)
				for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
			}
			b.ReportMetric(heap/1024, "heap-KiB/stream")
			b.ReportMetric(gor, "goroutines/stream")
		})
	}
}

// hold opens a stream and returns once its first event is in.
func (br *benchRig) hold(b *testing.B, base string, body []byte) func() {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("x-api-key", paneToken)
	resp, err := br.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		b.Fatal(err)
	}
	return func() { cancel(); resp.Body.Close() }
}

func heapNow() (heap uint64, goroutines int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, runtime.NumGoroutine()
}
