// Package pki issues the certificates and keys an embedded cluster needs: one CA,
// serving certificates (etcd, API server, kubelets), client certificates (admin,
// controller-manager, scheduler, nodes, the API server's etcd and kubelet clients)
// and the service-account signing key. Keys are ECDSA P-256: fast to generate and
// accepted by every component.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// validity of every certificate: long enough for any campaign, short enough to be obviously test material.
const validity = 365 * 24 * time.Hour

// CA is a certificate authority that signs the cluster's certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM is Cert PEM-encoded.
	CertPEM []byte
}

// Pair is an issued certificate and its key, PEM-encoded.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// Request describes a certificate to issue.
type Request struct {
	// CommonName is the subject CN (the user name for client certificates).
	CommonName string
	// Organizations are the subject O values (the groups for client certificates).
	Organizations []string
	// DNSNames and IPs are subject alternative names for serving certificates.
	DNSNames []string
	IPs      []net.IP
	// Server and Client select the extended key usages.
	Server, Client bool
}

// NewCA creates a self-signed CA named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: self-sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse CA: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: encode("CERTIFICATE", der)}, nil
}

// Issue signs a new certificate for req.
func (ca *CA) Issue(req Request) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("pki: generate key for %s: %w", req.CommonName, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organizations},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
	}
	if req.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if req.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Pair{}, fmt.Errorf("pki: sign %s: %w", req.CommonName, err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: encode("CERTIFICATE", der), KeyPEM: keyPEM}, nil
}

// TLSCertificate parses the pair for use in a tls.Config.
func (p Pair) TLSCertificate() (tls.Certificate, error) {
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: parse pair: %w", err)
	}
	return c, nil
}

// Pool returns a certificate pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Write stores the pair as dir/name.crt and dir/name.key and returns their paths.
func (p Pair) Write(dir, name string) (certPath, keyPath string, err error) {
	certPath = filepath.Join(dir, name+".crt")
	keyPath = filepath.Join(dir, name+".key")
	if err := writeFile(certPath, p.CertPEM, 0o644); err != nil {
		return "", "", err
	}
	if err := writeFile(keyPath, p.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// Write stores the CA as dir/ca.crt and dir/ca.key and returns the certificate's path.
func (ca *CA) Write(dir string) (string, error) {
	keyPEM, err := EncodeKey(ca.Key)
	if err != nil {
		return "", err
	}
	c, _, err := Pair{CertPEM: ca.CertPEM, KeyPEM: keyPEM}.Write(dir, "ca")
	return c, err
}

// NewSigningKey creates a key pair for signing service-account tokens and writes
// dir/sa.key (private) and dir/sa.pub (public).
func NewSigningKey(dir string) (privPath, pubPath string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("pki: generate service-account key: %w", err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("pki: marshal service-account public key: %w", err)
	}
	privPath, pubPath = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeFile(privPath, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeFile(pubPath, encode("PUBLIC KEY", pub), 0o644); err != nil {
		return "", "", err
	}
	return privPath, pubPath, nil
}

// EncodeKey PEM-encodes a private key in PKCS#8.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: marshal key: %w", err)
	}
	return encode("PRIVATE KEY", der), nil
}

func encode(typ string, der []byte) []byte {
	var b bytes.Buffer
	_ = pem.Encode(&b, &pem.Block{Type: typ, Bytes: der})
	return b.Bytes()
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(fmt.Sprintf("pki: crypto/rand failed: %v", err))
	}
	return n
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	return nil
}
