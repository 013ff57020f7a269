package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// BenchmarkBigBodies: 12 (and 24) requests at once, each with a 63 MB body (a
// conversation of one huge message), through the gateway with its default
// bound on the body bytes in flight, to an upstream that reads and drops
// them. The clients stream their bodies (nothing of them is held by the
// benchmark), so the process's peak RSS (VmHWM, reset before the run) is
// the gateway's. Before the bound the supervisor reached 1.52 GB.
func BenchmarkBigBodies(b *testing.B) {
	for _, n := range []int{12, 24} {
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) { benchBigBodies(b, n) })
	}
}

func benchBigBodies(b *testing.B, n int) {
	const size = 63 << 20
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"m","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	b.Cleanup(up.Close)
	rg := startRigCfg(b, nil, Upstreams{Anthropic: up.URL}, nil, nil)
	var peak float64
	for b.Loop() {
		runtime.GC()
		resetPeakRSS(b)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				postBig(b, rg.gw.URL()+"/v1/messages", size)
			}()
		}
		wg.Wait()
		peak = max(peak, peakRSSMiB(b))
	}
	b.ReportMetric(peak, "peak-rss-MiB")
	b.ReportMetric(float64(n*size>>20), "bodies-MiB")
}

// postBig sends a valid Messages request of about size bytes, made as it
// is read.
func postBig(b *testing.B, url string, size int) {
	head := `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":"`
	tail := `"}]}`
	filler := io.LimitReader(repeatX{}, int64(size-len(head)-len(tail)))
	body := io.MultiReader(strings.NewReader(head), filler, strings.NewReader(tail))
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		b.Error(err)
		return
	}
	req.ContentLength = int64(size)
	req.Header.Set("x-api-key", paneToken)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.Errorf("status %d: %.300s", resp.StatusCode, out)
	}
}

// repeatX is an endless "xxxx…".
type repeatX struct{}

func (repeatX) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// resetPeakRSS sets the process's VmHWM back to its RSS now.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS here: %v", err)
	}
}

// peakRSSMiB is the process's VmHWM.
func peakRSSMiB(b *testing.B) float64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
