package supervisor

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
)

const testClusterToken = "a-cluster-secret-for-tests-0123"

// clusterServer starts a supervisor with a cluster API as listen says and
// returns the cluster API's address.
func clusterServer(t *testing.T, listen Listen) (*api.Client, string) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	c := startServerWith(t, Config{Listen: listen})
	h, err := c.Health(context.Background())
	if err != nil || h.Cluster == "" {
		t.Fatalf("health: %+v, %v; want the cluster API's address", h, err)
	}
	return c, h.Cluster
}

// TestClusterAPI: with the cluster secret the TCP API is the socket's
// (a pane created over the socket is listed there); without it, or with
// a wrong one, every request is refused.
func TestClusterAPI(t *testing.T) {
	c, addr := clusterServer(t, Listen{Addr: "127.0.0.1:0", Token: testClusterToken})
	ctx := context.Background()
	p := mustCreate(t, c, api.CreateRequest{Title: "sh", Type: "shell", Backend: "pty", Command: []string{"bash", "--norc", "--noprofile"}})
	remote := api.NewRemoteClient(addr, testClusterToken, nil)
	ps, err := remote.List(ctx)
	if err != nil || len(ps) != 1 || ps[0].ID != p.ID {
		t.Fatalf("ls over the cluster API: %+v, %v", ps, err)
	}
	for _, token := range []string{"", "wrong", testClusterToken + "x", testClusterToken[:len(testClusterToken)-1]} {
		_, err := api.NewRemoteClient(addr, token, nil).List(ctx)
		var ae *api.Error
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, "cluster secret") {
			t.Errorf("ls with the secret %q: %v; want refused", token, err)
		}
	}
	if err := remote.Ensure(ctx); err != nil {
		t.Fatalf("ensure on a running remote supervisor: %v", err)
	}
}

// TestClusterAPINeedsSecret: --listen without a long enough secret is
// refused before anything listens.
func TestClusterAPINeedsSecret(t *testing.T) {
	h := Home{Root: filepath.Join(t.TempDir(), "home")}
	_, stop := serveUntil(t, h, Config{Listen: Listen{Addr: "127.0.0.1:0", Token: "short"}})
	var ae *api.Error
	if err := stop(); !errors.As(err, &ae) || !strings.Contains(ae.Message, "cluster secret") {
		t.Fatalf("serve with a short secret: %v", err)
	}
}

// TestClusterAPITLS: with a certificate the cluster API speaks TLS; a
// client trusting that certificate gets through, one speaking plain HTTP
// does not.
func TestClusterAPITLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	_, addr := clusterServer(t, Listen{Addr: "127.0.0.1:0", Token: testClusterToken, CertFile: cert, KeyFile: key})
	ctx := context.Background()
	if _, err := api.NewRemoteClient(addr, testClusterToken, &tls.Config{RootCAs: pool}).List(ctx); err != nil {
		t.Fatalf("ls over TLS: %v", err)
	}
	if _, err := api.NewRemoteClient(addr, testClusterToken, nil).List(ctx); err == nil {
		t.Fatal("plain HTTP to the TLS cluster API was answered")
	}
	if _, err := api.NewRemoteClient(addr, testClusterToken, &tls.Config{}).List(ctx); err == nil {
		t.Fatal("a client that does not trust the certificate got through")
	}
}

// TestRemoteNodeDown: a node whose address does not answer is a clear
// error within the dial timeout, not a hang.
func TestRemoteNodeDown(t *testing.T) {
	// Port 1: below the range a listener on port 0 is given, so no
	// test server running alongside can have it (a port listened on and
	// closed here could be handed to one).
	addr := "127.0.0.1:1"
	_, err := api.NewRemoteClient(addr, testClusterToken, nil).List(context.Background())
	if !errors.Is(err, api.ErrNotRunning) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("ls on a node that is down: %v; want ErrNotRunning naming %s", err, addr)
	}
	// An address no route leads to (TEST-NET-1): an error, at the latest
	// when the dial gives up (5 s).
	done := make(chan error, 1)
	go func() {
		_, err := api.NewRemoteClient("192.0.2.1:9", testClusterToken, nil).List(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a request to an unreachable node succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a request to an unreachable node hung")
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their files and a pool that trusts it.
func selfSigned(t *testing.T) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cicy test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return cert, key, pool
}
