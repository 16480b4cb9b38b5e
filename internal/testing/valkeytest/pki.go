package valkeytest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/gauntlet-dev/gauntlet/internal/pki"
)

// PKI is a throwaway certificate authority for TLS tests (internal/pki's, as the
// embedded cluster's).
type PKI struct {
	// CAPEM is the CA certificate, PEM-encoded (what a Secret's ca.crt holds).
	CAPEM []byte

	ca *pki.CA
	n  atomic.Int64
}

// NewPKI creates a CA.
func NewPKI() (*PKI, error) {
	ca, err := pki.NewCA("gauntlet test CA")
	if err != nil {
		return nil, err
	}
	return &PKI{CAPEM: ca.CertPEM, ca: ca}, nil
}

// Cert is an issued certificate: PEMs, and the files they were written to.
type Cert struct {
	CertPEM, KeyPEM   []byte
	CertPath, KeyPath string
	CAPath            string
}

// Issue creates a server-and-client certificate for the given IP and DNS SANs and
// writes it, its key and the CA certificate into dir (as n.crt, n.key, n-ca.crt,
// n counting the certificates this PKI issued).
func (p *PKI) Issue(dir string, ips, dns []string) (*Cert, error) {
	req := pki.Request{CommonName: "valkey", DNSNames: dns, Server: true, Client: true}
	for _, ip := range ips {
		a := net.ParseIP(ip)
		if a == nil {
			return nil, fmt.Errorf("issue a certificate: %q is not an IP address", ip)
		}
		req.IPs = append(req.IPs, a)
	}
	pair, err := p.ca.Issue(req)
	if err != nil {
		return nil, err
	}
	name := strconv.FormatInt(p.n.Add(1), 10)
	c := &Cert{CertPEM: pair.CertPEM, KeyPEM: pair.KeyPEM, CAPath: filepath.Join(dir, name+"-ca.crt")}
	if c.CertPath, c.KeyPath, err = pair.Write(dir, name); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.CAPath, p.CAPEM, 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", c.CAPath, err)
	}
	return c, nil
}

// TLSArgs are the server arguments that serve TLS on port with c, accepting
// clients with or without a certificate (as the bundled operator configures it).
func (c *Cert) TLSArgs(port int) []string {
	return []string{
		"--tls-port", strconv.Itoa(port), "--tls-cert-file", c.CertPath, "--tls-key-file", c.KeyPath,
		"--tls-ca-cert-file", c.CAPath, "--tls-auth-clients", "optional",
	}
}
