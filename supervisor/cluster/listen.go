package cluster

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
	"github.com/cicy-ai/cicy-agent/supervisor/httpapi"
)

// The cluster API: with serve --listen, the supervisor also serves its API
// on TCP for the other nodes' supervisors and for people with the
// cluster's secret. Every request carries the secret as a bearer token,
// compared in constant time (as digests, so not even its length shows);
// TLS when a certificate is given. The unix socket stays as it is.

// MinClusterToken is the shortest cluster secret accepted.
const MinClusterToken = 16

// Listen is the cluster API's settings.
type Listen struct {
	// Addr is the TCP address (host:port); empty: no cluster API.
	Addr string
	// Token is the cluster secret every request must carry.
	Token string
	// CertFile and KeyFile, if set, make it TLS.
	CertFile, KeyFile string
}

// Open opens the cluster API's listener (TLS when a certificate is
// given), or nil when none is asked for.
func (l Listen) Open(log *logrus.Entry) (net.Listener, error) {
	if l.Addr == "" {
		return nil, nil
	}
	if len(l.Token) < MinClusterToken {
		return nil, api.Usagef("the cluster API (--listen %s) needs a cluster secret of at least %d characters (CICY_CLUSTER_TOKEN or --cluster-token-file)", l.Addr, MinClusterToken)
	}
	var conf *tls.Config
	if l.CertFile != "" || l.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(l.CertFile, l.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load the cluster API's certificate: %w", err)
		}
		conf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", l.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", l.Addr, err)
	}
	if conf != nil {
		ln = tls.NewListener(ln, conf)
	} else if host, _, _ := net.SplitHostPort(l.Addr); !isLoopback(host) {
		log.WithField("addr", l.Addr).Warn("The cluster API listens beyond this machine without TLS: its secret and traffic cross the network in clear (give --tls-cert and --tls-key)")
	}
	return ln, nil
}

// isLoopback reports whether host names this machine only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RequireToken lets through the requests that carry the cluster secret
// and refuses the others (401), logging where they came from.
func RequireToken(token string, next http.Handler, log *logrus.Entry) http.Handler {
	want := sha256.Sum256([]byte(token))
	refused := gateway.NewRefusals()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(given))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil {
				host = r.RemoteAddr
			}
			refused.Log(log, host, r.URL.Path, "Refused a cluster API request without the cluster secret")
			w.Header().Set("WWW-Authenticate", `Bearer realm="cicy-agent"`)
			httpapi.WriteJSON(w, http.StatusUnauthorized, &api.Error{Kind: api.KindUsage, Message: "the cluster secret is missing or wrong"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
