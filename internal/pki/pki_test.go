package pki

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

func TestIssueVerifies(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		req   Request
		usage x509.ExtKeyUsage
		host  string
	}{
		{"server", Request{CommonName: "apiserver", DNSNames: []string{"kubernetes"}, IPs: []net.IP{net.ParseIP("10.0.0.1")}, Server: true}, x509.ExtKeyUsageServerAuth, "10.0.0.1"},
		{"client", Request{CommonName: "system:node:n1", Organizations: []string{"system:nodes"}, Client: true}, x509.ExtKeyUsageClientAuth, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ca.Issue(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			tc2, err := p.TLSCertificate()
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := x509.ParseCertificate(tc2.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			opts := x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{tc.usage}, DNSName: tc.host, CurrentTime: time.Now()}
			if _, err := leaf.Verify(opts); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if got := leaf.Subject.CommonName; got != tc.req.CommonName {
				t.Errorf("CN = %q, want %q", got, tc.req.CommonName)
			}
		})
	}
	// A certificate from another CA must not verify.
	other, _ := NewCA("other")
	p, _ := other.Issue(Request{CommonName: "x", Client: true})
	c, _ := p.TLSCertificate()
	leaf, _ := x509.ParseCertificate(c.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Fatal("certificate from a foreign CA verified")
	}
}
