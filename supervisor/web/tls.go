package web

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Listen is where the page is served.
type Listen struct {
	// Addr is host:port (default 127.0.0.1:0, any free port).
	Addr string
	// CertFile and KeyFile, if set, are the user's TLS certificate.
	CertFile, KeyFile string
	// TLS without a certificate of the user's serves with the one the
	// supervisor makes once and keeps in the home (self-signed).
	TLS bool
}

// ErrNeedsTLS refuses listening beyond loopback without TLS: the login
// link and the session cookie would cross the network in clear.
var ErrNeedsTLS = errors.New("serving the page beyond loopback needs TLS")

// Listener is the page's open listener.
type Listener struct {
	net.Listener
	// URL is the page's address, e.g. https://192.168.1.5:8443.
	URL string
	// Fingerprint is the SHA-256 of the TLS certificate ("" without TLS),
	// as browsers show it: AB:CD:….
	Fingerprint string
}

// Open listens as l asks, in the home's web folder for the certificate
// the supervisor makes.
func Open(home string, l Listen) (*Listener, error) {
	addr := l.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("the web address %q is not HOST:PORT: %w", addr, err)
	}
	if (l.CertFile == "") != (l.KeyFile == "") {
		return nil, errors.New("a TLS certificate and its key go together (--tls-cert and --tls-key)")
	}
	useTLS := l.TLS || l.CertFile != ""
	if !useTLS && !Loopback(host) {
		return nil, fmt.Errorf("%w: %s is reachable from other machines; add --tls (a certificate the supervisor makes and keeps) or --tls-cert/--tls-key, or listen on 127.0.0.1", ErrNeedsTLS, addr)
	}
	var cert tls.Certificate
	if useTLS {
		if l.CertFile != "" {
			cert, err = tls.LoadX509KeyPair(l.CertFile, l.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("load the web page's certificate: %w", err)
			}
		} else if cert, err = OwnCert(home); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve the web page on %s: %w", addr, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	out := &Listener{Listener: ln, URL: "http://" + net.JoinHostPort(linkHost(host), port)}
	if useTLS {
		out.Listener = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		out.URL = "https://" + net.JoinHostPort(linkHost(host), port)
		out.Fingerprint = Fingerprint(cert.Certificate[0])
	}
	return out, nil
}

// Loopback reports whether host is this machine alone.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// linkHost is the host a link names: the listened one, or for "any
// address" the machine's first address reachable from others (else its
// name).
func linkHost(host string) string {
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return host
	}
	for _, ip := range localIPs() {
		if !ip.IsLoopback() && ip.To4() != nil && !ip.IsLinkLocalUnicast() {
			return ip.String()
		}
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "127.0.0.1"
}

func localIPs() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n.IP)
		}
	}
	return out
}

// Fingerprint is the SHA-256 of a certificate (DER) in colon-separated
// upper-case hex.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

// ownCertLife is how long the certificate the supervisor makes is valid;
// a new one is made when it has less than a month left.
const ownCertLife = 825 * 24 * time.Hour

// OwnCertFiles are the certificate the supervisor makes and its key.
func OwnCertFiles(home string) (cert, key string) {
	return filepath.Join(Dir(home), "tls.crt"), filepath.Join(Dir(home), "tls.key")
}

// OwnCert is the supervisor's own certificate for the page, made once
// (ECDSA P-256, self-signed for the machine's names and addresses) and
// kept in the home, readable by its owner only.
func OwnCert(home string) (tls.Certificate, error) {
	certFile, keyFile := OwnCertFiles(home)
	if c, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		if leaf, err := x509.ParseCertificate(c.Certificate[0]); err == nil && time.Until(leaf.NotAfter) > 30*24*time.Hour {
			return c, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return tls.Certificate{}, fmt.Errorf("load the web page's certificate %s (remove it and its key to have a new one made): %w", certFile, err)
	}
	certPEM, keyPEM, err := makeCert()
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("make the web page's certificate: %w", err)
	}
	if err := writePrivate(keyFile, keyPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("keep the web page's certificate: %w", err)
	}
	if err := writePrivate(certFile, certPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("keep the web page's certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

func makeCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	name, _ := os.Hostname()
	dns := []string{"localhost"}
	if name != "" && name != "localhost" {
		dns = append(dns, name)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "cicy-agent web (" + name + ")", Organization: []string{"cicy-agent"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(ownCertLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dns,
		IPAddresses:  append([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, nonLoopback(localIPs())...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), nil
}

func nonLoopback(ips []net.IP) []net.IP {
	var out []net.IP
	for _, ip := range ips {
		if !ip.IsLoopback() {
			out = append(out, ip)
		}
	}
	return out
}
