package valkey_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/pki"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/valkeytest"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// testCA is a throwaway CA (internal/pki's) whose certificate is dir/ca.crt.
type testCA struct {
	ca  *pki.CA
	dir string
}

func newPKI(t *testing.T) *testCA {
	t.Helper()
	ca, err := pki.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	p := &testCA{ca: ca, dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(p.dir, "ca.crt"), ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue writes a server/client certificate for the given IPs and DNS names and
// returns the paths of the certificate and key, and their PEM.
func (p *testCA) issue(t *testing.T, name string, ips []net.IP, dns []string) (certFile, keyFile string, certPEM, keyPEM []byte) {
	t.Helper()
	pair, err := p.ca.Issue(pki.Request{CommonName: name, IPs: ips, DNSNames: dns, Server: true, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err = pair.Write(p.dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pair.CertPEM, pair.KeyPEM
}

func startTLS(t *testing.T, p *testCA, cert, key string, extra ...string) *valkeytest.Server {
	t.Helper()
	if _, err := valkeytest.Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	args := append([]string{"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", filepath.Join(p.dir, "ca.crt"),
		"--tls-auth-clients", "optional", "--tls-replication", "yes"}, extra...)
	s, err := valkeytest.Start(context.Background(), valkeytest.Options{Dir: t.TempDir(), TLS: true, Args: args})
	if err != nil {
		if strings.Contains(err.Error(), "TLS") {
			testenv.Unavailable(t, "the server has no TLS support: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
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
	tlsm := &valkey.TLS{CA: p.ca.CertPEM, Cert: certPEM, Key: keyPEM}

	if r, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr, TLS: tlsm}, "PING"); err != nil || r.Str != "PONG" {
		t.Fatalf("IP SAN: %v %v", r, err)
	}
	withName := *tlsm
	withName.ServerName = "c-1.c-headless.ns.svc"
	if r, err := pl.Do(ctx, valkey.Endpoint{Addr: byDNS.Addr, TLS: &withName}, "PING"); err != nil || r.Str != "PONG" {
		t.Fatalf("DNS SAN: %v %v", r, err)
	}
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byDNS.Addr, TLS: tlsm}, "PING"); err == nil {
		t.Fatal("a certificate naming neither the IP nor the server name was accepted")
	}
	other := newPKI(t)
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr, TLS: &valkey.TLS{CA: other.ca.CertPEM}}, "PING"); err == nil {
		t.Fatal("a certificate from another CA was accepted")
	}
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr}, "PING"); err == nil {
		t.Fatal("plain TCP to a TLS-only server succeeded")
	}

	// Replication over TLS.
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr, TLS: tlsm}, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byDNS.Addr, TLS: &withName}, valkey.CmdReplicaOf("127.0.0.1", byIP.Port)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "TLS replication", func() bool {
		r, err := pl.Do(ctx, valkey.Endpoint{Addr: byDNS.Addr, TLS: &withName}, "INFO")
		if err != nil {
			return false
		}
		in, _ := valkey.ParseInfo(r.String())
		return in.MasterLinkUp && in.Keys == 1
	})
}
