package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cicy-ai/cicy-agent/supervisor/gateway/modelapi"
)

const maxRawLogged = 20000 // bytes of a non-JSON body kept in the record

// Server is a running fake LLM server. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT, without /v1.
	URL string

	srv   *http.Server
	h     *modelapi.Handler // answers from the directives
	watch *watcher          // the clients' outstanding work: [Server.Truth]

	mu   sync.Mutex // guards reqs and log
	reqs []Request
	log  io.Writer
}

// Request is one request the server received.
type Request struct {
	Method string
	// Path is the request target as sent, query included
	// (e.g. "/v1/messages?beta=true").
	Path   string
	Header http.Header
	// Body is the JSON body after undoing any gzip or deflate
	// Content-Encoding, or nil when there was no body. A body that is not
	// JSON is kept as {"_raw": "<text>"}; one that could not be decoded as
	// {"_error": "<why>", "_len": <bytes>}.
	Body json.RawMessage
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves until Close. If log
// is not nil, every request is written to it as one JSON line with the keys
// ts, method, path, headers and body; write errors are ignored.
func Start(addr string, log io.Writer) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakellm: listen on %s: %w", addr, err)
	}
	s := newServer(log)
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.handle),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = s.srv.Serve(ln) }() // returns http.ErrServerClosed on Close
	return s, nil
}

// newServer is a server not yet listening.
func newServer(log io.Writer) *Server {
	w := &watcher{}
	return &Server{log: log, watch: w, h: modelapi.NewHandler("fake-llm", directives{w})}
}

// Close stops the server and cuts any request still in progress.
func (s *Server) Close() error {
	if err := s.srv.Close(); err != nil {
		return fmt.Errorf("fakellm: close: %w", err)
	}
	return nil
}

// Requests returns a deep copy of every request received so far, in
// order. A request is recorded before it is answered, so once a client has
// its response the request is in the list.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		r.Header = r.Header.Clone()
		r.Body = slices.Clone(r.Body)
		out[i] = r
	}
	return out
}

// handle records a request and answers it.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, bodyErr := modelapi.ReadBody(w, r)
	s.record(r, body, bodyErr)
	s.h.ServeBody(w, r, body, bodyErr)
}

// record appends r to the request list and the log.
func (s *Server) record(r *http.Request, body []byte, bodyErr error) {
	rec := Request{
		Method: r.Method,
		Path:   r.URL.RequestURI(),
		Header: r.Header.Clone(),
		Body:   recordedBody(body, bodyErr),
	}
	line := logLine(rec)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, rec)
	if s.log != nil {
		_, _ = s.log.Write(line)
	}
}

// recordedBody is the JSON kept for a request body; see [Request.Body].
func recordedBody(body []byte, err error) json.RawMessage {
	var v any
	switch {
	case err != nil:
		v = map[string]any{"_error": err.Error(), "_len": len(body)}
	case len(body) == 0:
		return nil
	case json.Valid(body):
		var buf bytes.Buffer
		if json.Compact(&buf, body) == nil {
			return buf.Bytes()
		}
		v = map[string]any{"_raw": truncateBytes(body, maxRawLogged)}
	default:
		v = map[string]any{"_raw": truncateBytes(body, maxRawLogged)}
	}
	out, _ := json.Marshal(v) // maps of strings and ints always marshal
	return out
}

func truncateBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// logLine renders rec as one JSON line for the log writer.
func logLine(rec Request) []byte {
	headers := make(map[string]string, len(rec.Header))
	for k, v := range rec.Header {
		headers[k] = strings.Join(v, ", ")
	}
	entry := struct {
		TS      float64           `json:"ts"`
		Method  string            `json:"method"`
		Path    string            `json:"path"`
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
	}{
		TS:      float64(time.Now().UnixMilli()) / 1000,
		Method:  rec.Method,
		Path:    rec.Path,
		Headers: headers,
		Body:    rec.Body,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(entry); err != nil { // Encode ends the line
		return []byte(fmt.Sprintf("{\"error\":%q}\n", err.Error()))
	}
	return buf.Bytes()
}
