package logscrub

import (
	"bufio"
	"fmt"
	"net"
	"net/http"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// Formatter wraps a log formatter so that no line it writes carries a
// secret scrub knows (the supervisor's: New), whatever
// the line quotes (an upstream error that echoes the key, a field, a
// wrapped error).
func Formatter(f logrus.Formatter, scrub *provider.Scrubber) logrus.Formatter {
	return scrubFormatter{inner: f, scrub: scrub}
}

type scrubFormatter struct {
	inner logrus.Formatter
	scrub *provider.Scrubber
}

func (f scrubFormatter) Format(e *logrus.Entry) ([]byte, error) {
	b, err := f.inner.Format(e)
	return f.scrub.Bytes(b), err
}

// Answers passes every API answer through the scrubber: a task's
// result, a send's answer, a screen, an event of a stream — whatever a
// pane's program printed, no secret of the supervisor's leaves in it. An
// answer is written in whole pieces (one JSON value, one event line), so a
// secret never straddles two writes. An attach is a raw terminal, hijacked
// before any write: it is not changed.
func Answers(next http.Handler, scrub *provider.Scrubber) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&scrubWriter{ResponseWriter: w, scrub: scrub}, r)
	})
}

type scrubWriter struct {
	http.ResponseWriter
	scrub *provider.Scrubber
}

func (w *scrubWriter) Write(b []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(w.scrub.Bytes(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w *scrubWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *scrubWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("the connection cannot be taken over")
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *scrubWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// New is the supervisor's one scrubber: it removes the credentials getenv
// reads (provider keys, the database password, the password in an
// upstream URL, the cluster secret), the panes' gateway tokens, and the
// secrets given (the cluster secret read from a file). The log, the task
// ledger, every API answer and a cicy pane's history files pass through
// it.
func New(getenv func(string) string, secrets ...string) *provider.Scrubber {
	return provider.NewScrubber(getenv, provider.Pattern{Prefix: gateway.TokenPrefix, Re: gateway.TokenPattern}).With(secrets...)
}
