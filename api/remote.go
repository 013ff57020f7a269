package api

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// A supervisor's cluster API (serve --listen) is the same API on TCP,
// each request carrying the cluster secret as a bearer token.

// remoteDialTimeout bounds connecting to another node: one that does not
// answer is an error, never a hang.
const remoteDialTimeout = 5 * time.Second

// NewRemoteClient returns a client for the supervisor whose cluster API
// listens at addr (host:port), with the cluster secret token; tlsConf, if
// not nil, speaks TLS with it. It cannot start a supervisor (Ensure only
// checks that one answers).
func NewRemoteClient(addr, token string, tlsConf *tls.Config) *Client {
	rt, scheme := RemoteTransport(addr, token, tlsConf)
	return &Client{
		home:   remoteHome{addr: addr},
		scheme: scheme,
		http: &http.Client{
			Transport:     rt,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		StartTimeout: remoteDialTimeout,
	}
}

// RemoteTransport is how NewRemoteClient reaches addr: every request goes
// to addr whatever its URL's host, carrying the cluster secret; scheme is
// "https" with tlsConf, else "http".
func RemoteTransport(addr, token string, tlsConf *tls.Config) (rt http.RoundTripper, scheme string) {
	return RemoteTransportWithin(addr, token, tlsConf, 0)
}

// RemoteFirstByte bounds the wait for the answer's head of a call to
// another node that is neither a stream nor a long poll: a node whose
// process is stopped accepts connections and never answers.
const RemoteFirstByte = 10 * time.Second

// DeadlineHeader carries the time (RFC 3339, UTC, to the nanosecond) after
// which the caller of a request no longer waits for it to begin: a node
// that reads the request later drops it unanswered by any action (a send
// that sat in a stopped node's socket is not typed once the node
// continues). Its absolute time needs the machines' clocks in sync, as the
// nodes' leases do: a remaining time would start counting only when the
// late request is read.
const DeadlineHeader = "X-Cicy-Deadline"

// RemoteTransportWithin is RemoteTransport whose requests fail when the
// answer's head has not come within firstByte (0: no bound, for streams
// and long polls).
func RemoteTransportWithin(addr, token string, tlsConf *tls.Config, firstByte time.Duration) (rt http.RoundTripper, scheme string) {
	d := &net.Dialer{Timeout: remoteDialTimeout, KeepAlive: 15 * time.Second}
	base := &http.Transport{
		DialContext:           func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) },
		DisableCompression:    true,
		TLSHandshakeTimeout:   remoteDialTimeout,
		MaxIdleConnsPerHost:   16,
		ResponseHeaderTimeout: firstByte,
	}
	scheme = "http"
	if tlsConf != nil {
		scheme = "https"
		base.TLSClientConfig = tlsConf.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil && tlsConf.ServerName == "" {
			base.TLSClientConfig.ServerName = host
		}
	}
	return bearer{token: token, next: base}, scheme
}

// bearer adds the cluster secret to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// remoteHome is the Home of a supervisor on another node: its address
// names it in messages; there is nothing here to prepare or start.
type remoteHome struct{ addr string }

func (h remoteHome) Dir() string    { return h.addr }
func (h remoteHome) Socket() string { return "" }
func (h remoteHome) Log() string    { return "" }
func (h remoteHome) Prepare() error {
	return errors.New("a supervisor on another node is not started from here")
}
func (h remoteHome) Held() bool { return false }
