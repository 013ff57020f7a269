package logscrub

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// testScrubber knows two provider keys and a cluster secret read from a
// file.
func testScrubber() *provider.Scrubber {
	return New(func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-log-leak-1", "OPENAI_API_KEY": "sk-log-leak-2"}[k]
	}, "cluster-secret-from-a-file-leak-3")
}

// TestScrubLog: no log line shows a provider credential or a pane's
// gateway token, in its message, a field or an error.
func TestScrubLog(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	l := logrus.New()
	l.SetOutput(&out)
	l.SetFormatter(Formatter(&logrus.TextFormatter{DisableColors: true}, testScrubber()))
	l.WithError(errors.New("invalid x-api-key sk-ant-log-leak-1")).WithField("body", "sk-log-leak-2").
		WithField("token", "cluster-secret-from-a-file-leak-3").WithField("pane_key", gateway.TokenPrefix+strings.Repeat("ab", 24)).
		Error("upstream said sk-ant-log-leak-1")
	if s := out.String(); strings.Contains(s, "leak") || strings.Contains(s, "abab") || strings.Count(s, "[redacted]") != 5 {
		t.Fatalf("log line: %s", s)
	}
}

// TestScrubAnswers: an answer leaves without the secrets its handler
// wrote, streamed (flushed) or not, and the handler is told its whole
// write went.
func TestScrubAnswers(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Answers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := []byte("the model said sk-ant-log-leak-1\n")
		if n, err := w.Write(line); n != len(line) || err != nil {
			t.Errorf("write: %d, %v; want %d", n, err, len(line))
		}
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, "and cluster-secret-from-a-file-leak-3\n")
	}), testScrubber()))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if want := "the model said [redacted]\nand [redacted]\n"; string(body) != want {
		t.Fatalf("answer %q, want %q", body, want)
	}
}
