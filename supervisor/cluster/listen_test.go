package cluster

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestRefusalFloodLogged: a flood of requests without the cluster secret,
// with long paths, logs one line for its source (the path cut to 200
// bytes), not one per request; the next minute's first refusal says how
// many were not logged.
func TestRefusalFloodLogged(t *testing.T) {
	var out bytes.Buffer
	l := logrus.New()
	l.SetOutput(&out)
	h := RequireToken("a-cluster-secret-0123456789", http.NotFoundHandler(), logrus.NewEntry(l))
	path := "/api/" + strings.Repeat("x", 7000)
	for range 2000 {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = "192.0.2.7:4242"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d", rec.Code)
		}
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1 || out.Len() > 1000 || !strings.Contains(out.String(), "remote=192.0.2.7") {
		t.Fatalf("%d lines, %d bytes:\n%.600s", lines, out.Len(), out.String())
	}
}
