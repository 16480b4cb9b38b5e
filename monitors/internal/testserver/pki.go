package testserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// PKI is a throwaway certificate authority for TLS tests.
type PKI struct {
	// CAPEM is the CA certificate, PEM-encoded (what a Secret's ca.crt holds).
	CAPEM []byte

	cert *x509.Certificate
	key  *ecdsa.PrivateKey

	mu     sync.Mutex
	serial int64
}

// NewPKI creates a CA valid for an hour.
func NewPKI() (*PKI, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gauntlet test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	return &PKI{CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert: cert, key: key, serial: 1}, nil
}

// Cert is an issued certificate: PEMs, and the files they were written to.
type Cert struct {
	CertPEM, KeyPEM   []byte
	CertPath, KeyPath string
	CAPath            string
}

// Issue creates a server-and-client certificate for the given IP and DNS SANs and
// writes it, its key and the CA certificate into dir.
func (p *PKI) Issue(dir string, ips, dns []string) (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	p.mu.Lock()
	p.serial++
	serial := p.serial
	p.mu.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "valkey"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     dns,
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	c := &Cert{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}
	name := strconv.FormatInt(serial, 10)
	c.CertPath, c.KeyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	c.CAPath = filepath.Join(dir, name+"-ca.crt")
	for path, data := range map[string][]byte{c.CertPath: c.CertPEM, c.KeyPath: c.KeyPEM, c.CAPath: p.CAPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
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
