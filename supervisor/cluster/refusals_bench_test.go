package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// BenchmarkRefusalFlood: requests without the cluster secret, with 7 KB
// paths, as fast as 8 clients can send them for 10 s over real HTTP, to a
// cluster API whose log is a file. Reports the requests sent and how fast
// the log grew, per minute. Every refusal used to log its whole path:
// 18,694 requests in 10 s grew supervisor.log by 128 MiB.
func BenchmarkRefusalFlood(b *testing.B) {
	logPath := filepath.Join(b.TempDir(), "supervisor.log")
	f, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	l := logrus.New()
	l.SetOutput(f)
	srv := httptest.NewServer(RequireToken("a-cluster-secret-0123456789", http.NotFoundHandler(), logrus.NewEntry(l)))
	b.Cleanup(srv.Close)
	url := srv.URL + "/api/" + strings.Repeat("x", 7000)
	var sent atomic.Int64
	var rate float64
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						continue
					}
					resp.Body.Close()
					sent.Add(1)
				}
			}()
		}
		wg.Wait()
		cancel()
		st, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		rate = float64(st.Size()) / time.Since(start).Minutes()
	}
	b.ReportMetric(float64(sent.Load())/float64(b.N), "requests")
	b.ReportMetric(rate/1024, "log-KiB/min")
}
