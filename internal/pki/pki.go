// Package pki issues certificates and keys: one CA, serving certificates, client
// certificates and a signing key. The embedded cluster takes all of its PKI from
// here (etcd, API server, kubelets, admin, controller-manager, scheduler, nodes,
// the API server's etcd and kubelet clients, the service-account key), and tests
// that need TLS (Valkey servers, monitors, the bundled operator) issue their
// throwaway certificates the same way.
//
// The CA, PEM encoding and file writing are client-go's (k8s.io/client-go/util/cert
// and util/keyutil); client-go has no helper that signs a leaf with a given CA, so
// Issue does that. Keys are ECDSA P-256: fast to generate and accepted by every
// component.
package pki

import (
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
	"path/filepath"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// validity of every issued certificate: long enough for any campaign, short enough
// to be obviously test material (the CA is valid for client-go's ten years).
const validity = 365 * 24 * time.Hour

// skew is how far before now certificates become valid, so that a clock slightly
// behind does not reject them.
const skew = time.Hour

// CA is a certificate authority that signs certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM is Cert PEM-encoded (what a Secret's ca.crt holds).
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
	c, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name, NotBefore: time.Now().Add(-skew)}, key)
	if err != nil {
		return nil, fmt.Errorf("pki: self-sign CA %s: %w", name, err)
	}
	return &CA{Cert: c, Key: key, CertPEM: encodeCert(c.Raw)}, nil
}

// Issue signs a new certificate for req.
func (ca *CA) Issue(req Request) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("pki: generate key for %s: %w", req.CommonName, err)
	}
	sn, err := serial()
	if err != nil {
		return Pair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organizations},
		NotBefore:    now.Add(-skew),
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
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return Pair{}, fmt.Errorf("pki: encode key of %s: %w", req.CommonName, err)
	}
	return Pair{CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
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

// Write stores the pair as dir/name.crt (mode 0644) and dir/name.key (0600),
// creating dir, and returns their paths.
func (p Pair) Write(dir, name string) (certPath, keyPath string, err error) {
	certPath = filepath.Join(dir, name+".crt")
	keyPath = filepath.Join(dir, name+".key")
	if err := cert.WriteCert(certPath, p.CertPEM); err != nil {
		return "", "", fmt.Errorf("pki: write %s: %w", certPath, err)
	}
	if err := keyutil.WriteKey(keyPath, p.KeyPEM); err != nil {
		return "", "", fmt.Errorf("pki: write %s: %w", keyPath, err)
	}
	return certPath, keyPath, nil
}

// Write stores the CA as dir/ca.crt and dir/ca.key and returns the certificate's path.
func (ca *CA) Write(dir string) (string, error) {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(ca.Key)
	if err != nil {
		return "", fmt.Errorf("pki: encode CA key: %w", err)
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
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", "", fmt.Errorf("pki: encode service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("pki: marshal service-account public key: %w", err)
	}
	privPath, pubPath = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := keyutil.WriteKey(privPath, keyPEM); err != nil {
		return "", "", fmt.Errorf("pki: write %s: %w", privPath, err)
	}
	if err := cert.WriteCert(pubPath, pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: pub})); err != nil {
		return "", "", fmt.Errorf("pki: write %s: %w", pubPath, err)
	}
	return privPath, pubPath, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der})
}

// serial is a random 126-bit serial number (RFC 5280 allows up to 20 octets).
func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n, nil
}
