package valkey_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkeytest"
)

type pki struct {
	caPEM   []byte
	caCert  *x509.Certificate
	caKey   *ecdsa.PrivateKey
	dir     string
	counter int64
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), caCert: cert, caKey: key, dir: t.TempDir(), counter: 1}
	if err := os.WriteFile(filepath.Join(p.dir, "ca.crt"), p.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue writes a server/client certificate for the given IPs and DNS names and
// returns the paths of the certificate and key, and their PEM.
func (p *pki) issue(t *testing.T, name string, ips []net.IP, dns []string) (certFile, keyFile string, certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.counter++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.counter), Subject: pkix.Name{CommonName: name}, IPAddresses: ips, DNSNames: dns,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	certFile, keyFile = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, certPEM, keyPEM
}

func startTLS(t *testing.T, p *pki, cert, key string, extra ...string) *valkeytest.Server {
	t.Helper()
	if _, err := valkeytest.ServerBinary(); err != nil {
		testenv.Unavailable(t, "%v (`make deps` installs valkey-server)", err)
	}
	args := append([]string{"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", filepath.Join(p.dir, "ca.crt"),
		"--tls-auth-clients", "optional", "--tls-replication", "yes"}, extra...)
	s, err := valkeytest.StartTLS(context.Background(), t.TempDir(), args...)
	if err != nil {
		if strings.Contains(err.Error(), "TLS") {
			testenv.Unavailable(t, "the server has no TLS support: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

// TestTLS: the operator's TLS connections verify the chain against ca.crt and
// the name against the pod IP or the DNS name; replication runs over TLS with
// the settings the operator renders.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	ipCert, ipKey, certPEM, keyPEM := p.issue(t, "by-ip", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	dnsCert, dnsKey, _, _ := p.issue(t, "by-dns", nil, []string{"c-1.c-headless.ns.svc"})
	byIP := startTLS(t, p, ipCert, ipKey)
	byDNS := startTLS(t, p, dnsCert, dnsKey, "--replica-announce-ip", "127.0.0.1")
	pl := pool(t)
	ctx := context.Background()
	tlsm := &valkey.TLS{CA: p.caPEM, Cert: certPEM, Key: keyPEM}

	if r, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr(), TLS: tlsm}, "PING"); err != nil || r.Str != "PONG" {
		t.Fatalf("IP SAN: %v %v", r, err)
	}
	withName := *tlsm
	withName.ServerName = "c-1.c-headless.ns.svc"
	if r, err := pl.Do(ctx, valkey.Endpoint{Addr: byDNS.Addr(), TLS: &withName}, "PING"); err != nil || r.Str != "PONG" {
		t.Fatalf("DNS SAN: %v %v", r, err)
	}
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byDNS.Addr(), TLS: tlsm}, "PING"); err == nil {
		t.Fatal("a certificate naming neither the IP nor the server name was accepted")
	}
	other := newPKI(t)
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr(), TLS: &valkey.TLS{CA: other.caPEM}}, "PING"); err == nil {
		t.Fatal("a certificate from another CA was accepted")
	}
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr()}, "PING"); err == nil {
		t.Fatal("plain TCP to a TLS-only server succeeded")
	}

	// Replication over TLS.
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr(), TLS: tlsm}, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byDNS.Addr(), TLS: &withName}, valkey.CmdReplicaOf("127.0.0.1", byIP.Port)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "TLS replication", func() bool {
		r, err := pl.Do(ctx, valkey.Endpoint{Addr: byDNS.Addr(), TLS: &withName}, "INFO")
		if err != nil {
			return false
		}
		in, _ := valkey.ParseInfo(r.String())
		return in.MasterLinkUp && in.Keys == 1
	})
}
