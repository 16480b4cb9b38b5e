// Package x509view decodes the X.509 certificates and private keys that
// Secrets and ConfigMaps hold in PEM (tls.crt, tls.key, ca.crt, CA bundles)
// into a read-only view the oracles can search like any other field.
//
// Operators such as cert-manager and CloudNativePG put their result inside
// certificates: a Certificate's spec.isCA, privateKey, usages, duration,
// subject and SANs, or CloudNativePG's spec.certificates.serverAltDNSNames,
// show nowhere else in the state. The campaign adds the view to every Secret
// and ConfigMap it snapshots (AddView), under the synthetic top-level field
// Field, keyed by data key:
//
//	gauntlet.dev/x509:
//	  tls.crt:
//	    subject: {commonName, organizations, organizationalUnits, countries, localities,
//	              provinces, streetAddresses, postalCodes, serialNumber}
//	    issuer: {commonName}
//	    dnsNames: [...]        ipAddresses: [...]   uris: [...]   emailAddresses: [...]
//	    isCA: true
//	    publicKey: {algorithm: ECDSA, size: 256}
//	    usages: ["cert sign", "digital signature", "server auth", ...]
//	    duration: 2160h0m0s
//	    nameConstraints: {critical, permitted: {dnsDomains, ipRanges, emailAddresses, uriDomains}, excluded: {...}}
//	  tls.key:
//	    privateKey: {algorithm: ECDSA, size: 256, encoding: PKCS1}
//
// The view holds only what is the same on every issuance of the same request:
// never serial numbers, validity instants, signatures or key material, which
// change each time (the differential, recovery and stability oracles compare
// views of different issuances). It is derived from the raw data when the
// snapshot is taken, so masks of the data (a target's Secret/*/data) do not
// hide it; masks name its fields like any other
// (Secret/*/["gauntlet.dev/x509"]["tls.crt"].duration).
//
// Spellings follow cert-manager's API: key algorithms RSA, ECDSA and Ed25519;
// sizes in bits (the RSA modulus, the ECDSA curve: 256, 384, 521; none for
// Ed25519, whose size cert-manager ignores); usages by cert-manager's KeyUsage
// names, key and extended usages in one sorted list, with both of
// cert-manager's names for a usage that has two ("digital signature" and
// "signing", "email protection" and "s/mime"); a key's encoding PKCS1 for the
// "RSA PRIVATE KEY" and "EC PRIVATE KEY" blocks (cert-manager's PKCS1 for an
// ECDSA key is SEC 1) and PKCS8 for "PRIVATE KEY" and "ENCRYPTED PRIVATE KEY"
// (an encrypted key shows only its encoding and encrypted: true); a duration
// as Go prints it ("2160h0m0s", which the consistency oracle equates with a
// CR's "2160h"). SAN lists are sorted (their order means nothing); subject
// lists keep the certificate's order.
//
// A value holding several certificates (a chain, leaf first, or a CA bundle)
// is viewed by its first certificate; one holding a certificate and a key
// (cert-manager's tls-combined.pem) shows both. Values that are not PEM, or
// whose PEM does not parse, get no view and no error: a snapshot never fails
// because of what a Secret holds. Only the standard library decodes.
package x509view

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Field is the synthetic top-level field of a Secret or ConfigMap that holds
// its view, keyed by data key. A Kubernetes API field name never holds a dot
// or a slash, so it cannot collide with one; in a field path it is written
// ["gauntlet.dev/x509"].
const Field = "gauntlet.dev/x509"

// MaxValueSize is the largest data value decoded (bytes, after base64); larger
// values get no view.
const MaxValueSize = 1 << 20

// ErrNoPEM is returned by Decode for a value holding no PEM certificate or
// private key.
var ErrNoPEM = errors.New("no PEM certificate or private key")

// Decoder adds views to objects, remembering the views of values it decoded
// (a campaign snapshots the same Secrets many times). The zero value is ready
// to use and safe for concurrent use.
type Decoder struct {
	mu   sync.Mutex
	memo map[[sha256.Size]byte]map[string]any // nil: no view
}

// maxMemo bounds the memory of decoded values; the memory is cleared when full.
const maxMemo = 4096

// AddView sets obj[Field] to the view of obj's data when obj, an object of the
// core API group of the given kind, is a Secret (data, base64) or a ConfigMap
// (data, and binaryData in base64) with at least one value holding a PEM
// certificate or private key; otherwise it removes any Field obj held. It
// reports whether obj has a view. Values that do not decode are left out of
// the view.
func (d *Decoder) AddView(kind string, obj map[string]any) bool {
	if obj == nil {
		return false
	}
	delete(obj, Field)
	view := d.View(kind, obj)
	if view == nil {
		return false
	}
	obj[Field] = view
	return true
}

// View returns the view of obj's data (nil when none), as AddView sets it.
func (d *Decoder) View(kind string, obj map[string]any) map[string]any {
	var base64Keys, textKeys map[string]any
	switch kind {
	case "Secret":
		base64Keys, _ = obj["data"].(map[string]any)
	case "ConfigMap":
		textKeys, _ = obj["data"].(map[string]any)
		base64Keys, _ = obj["binaryData"].(map[string]any)
	default:
		return nil
	}
	view := map[string]any{}
	for k, v := range textKeys {
		if s, ok := v.(string); ok {
			if dv := d.decode(s, false); dv != nil {
				view[k] = dv
			}
		}
	}
	for k, v := range base64Keys {
		if s, ok := v.(string); ok {
			if dv := d.decode(s, true); dv != nil {
				view[k] = dv
			}
		}
	}
	if len(view) == 0 {
		return nil
	}
	return view
}

// decode returns the view of one data value (a copy the caller may change),
// or nil.
func (d *Decoder) decode(s string, b64 bool) map[string]any {
	if len(s) > MaxValueSize*4/3+4 || !maybePEM(s, b64) {
		return nil
	}
	h := sha256.Sum256([]byte(s))
	if b64 {
		h[0] ^= 1 // the same string as base64 and as text are different values
	}
	d.mu.Lock()
	v, seen := d.memo[h]
	d.mu.Unlock()
	if !seen {
		raw := []byte(s)
		if b64 {
			var err error
			if raw, err = base64.StdEncoding.DecodeString(s); err != nil {
				raw = nil
			}
		}
		if raw != nil {
			v, _ = Decode(raw)
		}
		d.mu.Lock()
		if d.memo == nil || len(d.memo) >= maxMemo {
			d.memo = map[[sha256.Size]byte]map[string]any{}
		}
		d.memo[h] = v
		d.mu.Unlock()
	}
	if v == nil {
		return nil
	}
	return copyView(v)
}

// maybePEM is a cheap test that s may hold PEM ("-----BEGIN", or its base64
// at one of the three alignments), so that other data is not decoded.
func maybePEM(s string, b64 bool) bool {
	if !b64 {
		return strings.Contains(s, "-----BEGIN")
	}
	// "-----BEGIN" in base64 at offsets 0, 1 and 2 mod 3 contains one of these.
	return strings.Contains(s, "LS0tLS1CRUdJT") || strings.Contains(s, "LS0tQkVHSU") || strings.Contains(s, "LS0tLUJFR0lO")
}

// copyView deep-copies a view (maps, lists of strings, scalars).
func copyView(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, e := range v {
		switch x := e.(type) {
		case map[string]any:
			out[k] = copyView(x)
		case []any:
			out[k] = slices.Clone(x)
		default:
			out[k] = e
		}
	}
	return out
}

// Decode returns the view of one data value holding PEM: the first
// certificate's fields and, when it holds a private key, privateKey. The error
// says why there is no view (ErrNoPEM, or the PEM block that does not parse).
func Decode(data []byte) (map[string]any, error) {
	if len(data) > MaxValueSize {
		return nil, fmt.Errorf("value of %d bytes, more than %d: %w", len(data), MaxValueSize, ErrNoPEM)
	}
	var certBlock, keyBlock *pem.Block
	for rest := data; certBlock == nil || keyBlock == nil; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			if certBlock == nil {
				certBlock = b
			}
		case "RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
			if keyBlock == nil {
				keyBlock = b
			}
		}
	}
	if certBlock == nil && keyBlock == nil {
		return nil, ErrNoPEM
	}
	view := map[string]any{}
	if certBlock != nil {
		c, err := x509.ParseCertificate(certBlock.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse the first certificate: %w", err)
		}
		certView(c, view)
	}
	if keyBlock != nil {
		k, err := keyView(keyBlock)
		if err != nil {
			return nil, fmt.Errorf("parse the %s block: %w", keyBlock.Type, err)
		}
		view["privateKey"] = k
	}
	return view, nil
}

// certView puts the stable fields of c into view.
func certView(c *x509.Certificate, view map[string]any) {
	subject := map[string]any{}
	putString(subject, "commonName", c.Subject.CommonName)
	putList(subject, "organizations", c.Subject.Organization, false)
	putList(subject, "organizationalUnits", c.Subject.OrganizationalUnit, false)
	putList(subject, "countries", c.Subject.Country, false)
	putList(subject, "localities", c.Subject.Locality, false)
	putList(subject, "provinces", c.Subject.Province, false)
	putList(subject, "streetAddresses", c.Subject.StreetAddress, false)
	putList(subject, "postalCodes", c.Subject.PostalCode, false)
	putString(subject, "serialNumber", c.Subject.SerialNumber)
	if len(subject) > 0 {
		view["subject"] = subject
	}
	if c.Issuer.CommonName != "" {
		view["issuer"] = map[string]any{"commonName": c.Issuer.CommonName}
	}
	putList(view, "dnsNames", c.DNSNames, true)
	putList(view, "ipAddresses", ipStrings(c.IPAddresses), true)
	uris := make([]string, len(c.URIs))
	for i, u := range c.URIs {
		uris[i] = u.String()
	}
	putList(view, "uris", uris, true)
	putList(view, "emailAddresses", c.EmailAddresses, true)
	view["isCA"] = c.BasicConstraintsValid && c.IsCA
	if pk := publicKeyView(c.PublicKey); len(pk) > 0 {
		view["publicKey"] = pk
	}
	putList(view, "usages", usages(c), true)
	if c.NotAfter.After(c.NotBefore) {
		view["duration"] = c.NotAfter.Sub(c.NotBefore).String()
	}
	if nc := nameConstraints(c); nc != nil {
		view["nameConstraints"] = nc
	}
}

func putString(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// putList sets m[k] to l as a JSON list (sorted when sorted is set), unless l
// is empty.
func putList(m map[string]any, k string, l []string, sorted bool) {
	if len(l) == 0 {
		return
	}
	if sorted {
		l = slices.Clone(l)
		sort.Strings(l)
	}
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	m[k] = out
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

func ipNetStrings(nets []*net.IPNet) []string {
	out := make([]string, 0, len(nets))
	for _, n := range nets {
		if n != nil {
			out = append(out, n.String())
		}
	}
	return out
}

// publicKeyView is the algorithm and size of a certificate's public key.
func publicKeyView(k any) map[string]any {
	switch x := k.(type) {
	case *rsa.PublicKey:
		return map[string]any{"algorithm": "RSA", "size": int64(x.N.BitLen())}
	case *ecdsa.PublicKey:
		return map[string]any{"algorithm": "ECDSA", "size": int64(x.Curve.Params().BitSize)}
	case ed25519.PublicKey:
		return map[string]any{"algorithm": "Ed25519"}
	}
	return nil
}

// keyView is the algorithm, size and encoding of a private key block.
func keyView(b *pem.Block) (map[string]any, error) {
	var (
		key      any
		err      error
		encoding = "PKCS1"
	)
	switch b.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	case "ENCRYPTED PRIVATE KEY":
		return map[string]any{"encoding": "PKCS8", "encrypted": true}, nil
	default: // PRIVATE KEY
		encoding = "PKCS8"
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, err
	}
	view := map[string]any{"encoding": encoding}
	switch x := key.(type) {
	case *rsa.PrivateKey:
		view["algorithm"], view["size"] = "RSA", int64(x.N.BitLen())
	case *ecdsa.PrivateKey:
		view["algorithm"], view["size"] = "ECDSA", int64(x.Curve.Params().BitSize)
	case ed25519.PrivateKey:
		view["algorithm"] = "Ed25519"
	}
	return view, nil
}

// keyUsageNames are cert-manager's names of the key usage bits (both of its
// names for digital signature).
var keyUsageNames = []struct {
	bit   x509.KeyUsage
	names []string
}{
	{x509.KeyUsageDigitalSignature, []string{"digital signature", "signing"}},
	{x509.KeyUsageContentCommitment, []string{"content commitment"}},
	{x509.KeyUsageKeyEncipherment, []string{"key encipherment"}},
	{x509.KeyUsageDataEncipherment, []string{"data encipherment"}},
	{x509.KeyUsageKeyAgreement, []string{"key agreement"}},
	{x509.KeyUsageCertSign, []string{"cert sign"}},
	{x509.KeyUsageCRLSign, []string{"crl sign"}},
	{x509.KeyUsageEncipherOnly, []string{"encipher only"}},
	{x509.KeyUsageDecipherOnly, []string{"decipher only"}},
}

// extKeyUsageNames are cert-manager's names of the extended key usages (both
// of its names for email protection).
var extKeyUsageNames = map[x509.ExtKeyUsage][]string{
	x509.ExtKeyUsageAny:                            {"any"},
	x509.ExtKeyUsageServerAuth:                     {"server auth"},
	x509.ExtKeyUsageClientAuth:                     {"client auth"},
	x509.ExtKeyUsageCodeSigning:                    {"code signing"},
	x509.ExtKeyUsageEmailProtection:                {"email protection", "s/mime"},
	x509.ExtKeyUsageIPSECEndSystem:                 {"ipsec end system"},
	x509.ExtKeyUsageIPSECTunnel:                    {"ipsec tunnel"},
	x509.ExtKeyUsageIPSECUser:                      {"ipsec user"},
	x509.ExtKeyUsageTimeStamping:                   {"timestamping"},
	x509.ExtKeyUsageOCSPSigning:                    {"ocsp signing"},
	x509.ExtKeyUsageMicrosoftServerGatedCrypto:     {"microsoft sgc"},
	x509.ExtKeyUsageNetscapeServerGatedCrypto:      {"netscape sgc"},
	x509.ExtKeyUsageMicrosoftCommercialCodeSigning: {"microsoft commercial code signing"},
	x509.ExtKeyUsageMicrosoftKernelCodeSigning:     {"microsoft kernel code signing"},
}

// usages lists c's key usages and extended key usages by cert-manager's names
// (unnamed extended usages by OID), without duplicates.
func usages(c *x509.Certificate) []string {
	seen := map[string]bool{}
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	for _, u := range keyUsageNames {
		if c.KeyUsage&u.bit != 0 {
			add(u.names...)
		}
	}
	for _, u := range c.ExtKeyUsage {
		if names, ok := extKeyUsageNames[u]; ok {
			add(names...)
		} else {
			add(fmt.Sprintf("extended key usage %d", u))
		}
	}
	for _, oid := range c.UnknownExtKeyUsage {
		add(oid.String())
	}
	return out
}

// nameConstraints mirrors cert-manager's spec.nameConstraints, or nil when c
// has none.
func nameConstraints(c *x509.Certificate) map[string]any {
	sub := func(dns []string, ips []*net.IPNet, emails, uris []string) map[string]any {
		m := map[string]any{}
		putList(m, "dnsDomains", dns, true)
		putList(m, "ipRanges", ipNetStrings(ips), true)
		putList(m, "emailAddresses", emails, true)
		putList(m, "uriDomains", uris, true)
		return m
	}
	permitted := sub(c.PermittedDNSDomains, c.PermittedIPRanges, c.PermittedEmailAddresses, c.PermittedURIDomains)
	excluded := sub(c.ExcludedDNSDomains, c.ExcludedIPRanges, c.ExcludedEmailAddresses, c.ExcludedURIDomains)
	if len(permitted) == 0 && len(excluded) == 0 {
		return nil
	}
	nc := map[string]any{"critical": c.PermittedDNSDomainsCritical}
	if len(permitted) > 0 {
		nc["permitted"] = permitted
	}
	if len(excluded) > 0 {
		nc["excluded"] = excluded
	}
	return nc
}
