package valkey_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeytest"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

func newPKI(t *testing.T) *valkeytest.PKI {
	t.Helper()
	p, err := valkeytest.NewPKI()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// issue writes a server/client certificate for the given IPs and DNS names.
func issue(t *testing.T, p *valkeytest.PKI, ips, dns []string) *valkeytest.Cert {
	t.Helper()
	c, err := p.Issue(t.TempDir(), ips, dns)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startTLS(t *testing.T, c *valkeytest.Cert, extra ...string) *valkeytest.Server {
	t.Helper()
	if _, err := valkeytest.Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	args := append([]string{"--tls-cert-file", c.CertPath, "--tls-key-file", c.KeyPath, "--tls-ca-cert-file", c.CAPath,
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
	ipCert := issue(t, p, []string{"127.0.0.1"}, nil)
	dnsCert := issue(t, p, nil, []string{"c-1.c-headless.ns.svc"})
	byIP := startTLS(t, ipCert)
	byDNS := startTLS(t, dnsCert, "--replica-announce-ip", "127.0.0.1")
	pl := pool(t)
	ctx := context.Background()
	tlsm := &valkey.TLS{CA: p.CAPEM, Cert: ipCert.CertPEM, Key: ipCert.KeyPEM}

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
	if _, err := pl.Do(ctx, valkey.Endpoint{Addr: byIP.Addr, TLS: &valkey.TLS{CA: other.CAPEM}}, "PING"); err == nil {
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
