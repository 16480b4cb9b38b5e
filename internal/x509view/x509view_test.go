package x509view

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// keys are generated once per test binary (RSA generation is slow on busy cores).
var (
	keysOnce sync.Once
	keys     map[string]crypto.Signer
)

func key(t testing.TB, name string) crypto.Signer {
	t.Helper()
	keysOnce.Do(func() {
		keys = map[string]crypto.Signer{}
		mustRSA := func(bits int) *rsa.PrivateKey {
			k, err := rsa.GenerateKey(rand.Reader, bits)
			if err != nil {
				panic(err)
			}
			return k
		}
		mustEC := func(c elliptic.Curve) *ecdsa.PrivateKey {
			k, err := ecdsa.GenerateKey(c, rand.Reader)
			if err != nil {
				panic(err)
			}
			return k
		}
		_, ed, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		_, ed2, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		keys["rsa2048"], keys["rsa3072"] = mustRSA(2048), mustRSA(3072)
		keys["p256"], keys["p256b"], keys["p384"], keys["p521"] = mustEC(elliptic.P256()), mustEC(elliptic.P256()), mustEC(elliptic.P384()), mustEC(elliptic.P521())
		keys["ed25519"], keys["ed25519b"] = ed, ed2
	})
	k, ok := keys[name]
	if !ok {
		t.Fatalf("no test key %s", name)
	}
	return k
}

// certPEM signs tmpl's certificate for pub's key with parent (self-signed
// when parent is nil) and returns it in PEM.
func certPEM(t testing.TB, tmpl *x509.Certificate, k crypto.Signer, parent *x509.Certificate, parentKey crypto.Signer) ([]byte, *x509.Certificate) {
	t.Helper()
	if parent == nil {
		parent, parentKey = tmpl, k
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, k.Public(), parentKey)
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), c
}

// keyPEM encodes k as PKCS1 ("RSA PRIVATE KEY", or SEC 1 "EC PRIVATE KEY") or PKCS8.
func keyPEM(t testing.TB, k crypto.Signer, pkcs8 bool) []byte {
	t.Helper()
	if pkcs8 {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	switch x := k.(type) {
	case *rsa.PrivateKey:
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(x)})
	case *ecdsa.PrivateKey:
		der, err := x509.MarshalECPrivateKey(x)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	t.Fatalf("no PKCS1 form for %T", k)
	return nil
}

var notBefore = time.Date(2026, 11, 27, 9, 30, 12, 0, time.UTC)

// caTemplate is a CA as cert-manager's self-signed Issuer makes one.
func caTemplate(serial int64, at time.Time) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "gauntlet-test-ca"},
		NotBefore:             at,
		NotAfter:              at.Add(2160 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
	}
}

// leafTemplate is a serving certificate with SANs of every kind and a full subject.
func leafTemplate(serial int64, at time.Time) *x509.Certificate {
	u1, _ := url.Parse("spiffe://cluster.local/ns/test/sa/example")
	u2, _ := url.Parse("https://example.gauntlet.test/a")
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject: pkix.Name{
			CommonName: "example.gauntlet.test", Organization: []string{"Gauntlet", "Example Org"},
			OrganizationalUnit: []string{"QA"}, Country: []string{"FR"}, Locality: []string{"Paris"},
			Province: []string{"IDF"}, StreetAddress: []string{"1 rue de la Paix"}, PostalCode: []string{"75002"},
			SerialNumber: "subject-42",
		},
		NotBefore:             at,
		NotAfter:              at.Add(2160 * time.Hour),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:              []string{"www.example.gauntlet.test", "example.gauntlet.test"},
		IPAddresses:           []net.IP{net.ParseIP("10.0.0.7"), net.ParseIP("fd00::1")},
		URIs:                  []*url.URL{u1, u2},
		EmailAddresses:        []string{"ops@gauntlet.test"},
	}
}

// TestDecode decodes certificates and keys of each algorithm and encoding,
// CA and leaf, with SANs of every kind, usages and durations, and checks the
// whole view.
func TestDecode(t *testing.T) {
	caPEM, ca := certPEM(t, caTemplate(1, notBefore), key(t, "p384"), nil, nil)
	leafPEM, _ := certPEM(t, leafTemplate(2, notBefore), key(t, "rsa2048"), ca, key(t, "p384"))
	edTmpl := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "ed"}, NotBefore: notBefore,
		NotAfter: notBefore.Add(90 * time.Minute), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageEmailProtection, x509.ExtKeyUsageCodeSigning}}
	edPEM, _ := certPEM(t, edTmpl, key(t, "ed25519"), ca, key(t, "p384"))
	p521Tmpl := &x509.Certificate{SerialNumber: big.NewInt(4), Subject: pkix.Name{CommonName: "p521"}, NotBefore: notBefore, NotAfter: notBefore.Add(time.Hour)}
	p521PEM, _ := certPEM(t, p521Tmpl, key(t, "p521"), nil, nil)
	ncTmpl := caTemplate(5, notBefore)
	ncTmpl.PermittedDNSDomainsCritical = true
	ncTmpl.PermittedDNSDomains = []string{"gauntlet.test"}
	_, ipr, _ := net.ParseCIDR("10.0.0.0/8")
	ncTmpl.ExcludedIPRanges = []*net.IPNet{ipr}
	ncTmpl.ExcludedEmailAddresses = []string{"evil.test"}
	ncPEM, _ := certPEM(t, ncTmpl, key(t, "p256"), nil, nil)

	leafView := map[string]any{
		"subject": map[string]any{
			"commonName": "example.gauntlet.test", "organizations": []any{"Gauntlet", "Example Org"},
			"organizationalUnits": []any{"QA"}, "countries": []any{"FR"}, "localities": []any{"Paris"},
			"provinces": []any{"IDF"}, "streetAddresses": []any{"1 rue de la Paix"}, "postalCodes": []any{"75002"},
			"serialNumber": "subject-42",
		},
		"issuer":         map[string]any{"commonName": "gauntlet-test-ca"},
		"dnsNames":       []any{"example.gauntlet.test", "www.example.gauntlet.test"},
		"ipAddresses":    []any{"10.0.0.7", "fd00::1"},
		"uris":           []any{"https://example.gauntlet.test/a", "spiffe://cluster.local/ns/test/sa/example"},
		"emailAddresses": []any{"ops@gauntlet.test"},
		"isCA":           false,
		"publicKey":      map[string]any{"algorithm": "RSA", "size": int64(2048)},
		"usages":         []any{"client auth", "digital signature", "key encipherment", "server auth", "signing"},
		"duration":       "2160h0m0s",
	}
	caView := map[string]any{
		"subject":   map[string]any{"commonName": "gauntlet-test-ca"},
		"issuer":    map[string]any{"commonName": "gauntlet-test-ca"},
		"isCA":      true,
		"publicKey": map[string]any{"algorithm": "ECDSA", "size": int64(384)},
		"usages":    []any{"cert sign", "digital signature", "key encipherment", "signing"},
		"duration":  "2160h0m0s",
	}
	tests := []struct {
		name    string
		data    []byte
		want    map[string]any
		wantErr error // with a nil want
	}{
		{"RSA leaf signed by an ECDSA CA", leafPEM, leafView, nil},
		{"ECDSA P-384 CA", caPEM, caView, nil},
		{"a chain, leaf first: the leaf", append(append([]byte{}, leafPEM...), caPEM...), leafView, nil},
		{"Ed25519 leaf with extended usages and a short duration", edPEM, map[string]any{
			"subject": map[string]any{"commonName": "ed"}, "issuer": map[string]any{"commonName": "gauntlet-test-ca"},
			"isCA": false, "publicKey": map[string]any{"algorithm": "Ed25519"},
			"usages":   []any{"code signing", "digital signature", "email protection", "s/mime", "signing"},
			"duration": "1h30m0s",
		}, nil},
		{"ECDSA P-521 without usages or basic constraints", p521PEM, map[string]any{
			"subject": map[string]any{"commonName": "p521"}, "issuer": map[string]any{"commonName": "p521"},
			"isCA": false, "publicKey": map[string]any{"algorithm": "ECDSA", "size": int64(521)}, "duration": "1h0m0s",
		}, nil},
		{"name constraints", ncPEM, map[string]any{
			"subject": map[string]any{"commonName": "gauntlet-test-ca"}, "issuer": map[string]any{"commonName": "gauntlet-test-ca"},
			"isCA": true, "publicKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
			"usages": []any{"cert sign", "digital signature", "key encipherment", "signing"}, "duration": "2160h0m0s",
			"nameConstraints": map[string]any{"critical": true,
				"permitted": map[string]any{"dnsDomains": []any{"gauntlet.test"}},
				"excluded":  map[string]any{"ipRanges": []any{"10.0.0.0/8"}, "emailAddresses": []any{"evil.test"}}},
		}, nil},
		{"RSA key, PKCS1", keyPEM(t, key(t, "rsa3072"), false), map[string]any{"privateKey": map[string]any{"algorithm": "RSA", "size": int64(3072), "encoding": "PKCS1"}}, nil},
		{"RSA key, PKCS8", keyPEM(t, key(t, "rsa2048"), true), map[string]any{"privateKey": map[string]any{"algorithm": "RSA", "size": int64(2048), "encoding": "PKCS8"}}, nil},
		{"ECDSA key, SEC 1 (cert-manager's PKCS1)", keyPEM(t, key(t, "p256"), false), map[string]any{"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "encoding": "PKCS1"}}, nil},
		{"ECDSA key, PKCS8", keyPEM(t, key(t, "p521"), true), map[string]any{"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(521), "encoding": "PKCS8"}}, nil},
		{"Ed25519 key, PKCS8", keyPEM(t, key(t, "ed25519"), true), map[string]any{"privateKey": map[string]any{"algorithm": "Ed25519", "encoding": "PKCS8"}}, nil},
		{"encrypted key", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}}),
			map[string]any{"privateKey": map[string]any{"encoding": "PKCS8", "encrypted": true}}, nil},
		{"key and certificate in one value (tls-combined.pem)", append(keyPEM(t, key(t, "p384"), false), caPEM...),
			withKey(caView, map[string]any{"algorithm": "ECDSA", "size": int64(384), "encoding": "PKCS1"}), nil},
		{"leading text before the PEM", append([]byte("Bag Attributes\n  friendlyName: x\n"), caPEM...), caView, nil},
		{"garbage", []byte("not a certificate"), nil, ErrNoPEM},
		{"empty", nil, nil, ErrNoPEM},
		{"PEM of another type", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1}}), nil, ErrNoPEM},
		{"a certificate block that does not parse", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), nil, nil},
		{"a key block that does not parse", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("junk")}), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.data)
			if tt.want == nil {
				if err == nil || got != nil {
					t.Fatalf("Decode = %v, %v; want no view and an error", got, err)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("view differs\n got %s\nwant %s", js(got), js(tt.want))
			}
		})
	}
}

func withKey(v map[string]any, k map[string]any) map[string]any {
	out := copyView(v)
	out["privateKey"] = k
	return out
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// issuance is one issuance of the same request: what a Secret holds after it.
func issuance(t testing.TB, serial int64, at time.Time, leafKey, caKey string) map[string]any {
	caPEM, ca := certPEM(t, caTemplate(serial*10, at.Add(-time.Hour)), key(t, caKey), nil, nil)
	leafPEM, _ := certPEM(t, leafTemplate(serial, at), key(t, leafKey), ca, key(t, caKey))
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "example-tls"}, "type": "kubernetes.io/tls",
		"data": map[string]any{"tls.crt": b64(append(leafPEM, caPEM...)), "tls.key": b64(keyPEM(t, key(t, leafKey), strings.HasPrefix(leafKey, "ed"))), "ca.crt": b64(caPEM)},
	}
}

// TestViewStableAcrossIssuance: two issuances of the same request (new keys,
// serial numbers and validity instants, the CA re-issued too) have equal
// views, while a changed request does not.
func TestViewStableAcrossIssuance(t *testing.T) {
	var d Decoder
	a := issuance(t, 100, notBefore, "p256", "p384")
	b := issuance(t, 200, notBefore.Add(37*time.Hour+13*time.Second), "p256b", "p384")
	if js(a["data"]) == js(b["data"]) {
		t.Fatal("the two issuances hold the same data")
	}
	if !d.AddView("Secret", a) || !d.AddView("Secret", b) {
		t.Fatal("no view")
	}
	if !reflect.DeepEqual(a[Field], b[Field]) {
		t.Errorf("views of two issuances differ:\n%s\n%s", js(a[Field]), js(b[Field]))
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if _, ok := a[Field].(map[string]any)[k]; !ok {
			t.Errorf("no view of %s", k)
		}
	}
	c := issuance(t, 300, notBefore, "ed25519b", "p384") // another key algorithm
	d.AddView("Secret", c)
	if reflect.DeepEqual(a[Field], c[Field]) {
		t.Error("views of an ECDSA and an Ed25519 issuance are equal")
	}
}

// TestAddView covers objects: Secrets (base64), ConfigMaps (text and
// binaryData), garbage beside a certificate, other kinds, and a stale view.
func TestAddView(t *testing.T) {
	caPEM, _ := certPEM(t, caTemplate(1, notBefore), key(t, "p256"), nil, nil)
	tests := []struct {
		name string
		kind string
		obj  map[string]any
		keys []string // data keys with a view; nil: no view
	}{
		{"secret", "Secret", map[string]any{"data": map[string]any{"ca.crt": b64(caPEM), "password": b64([]byte("hunter2"))}}, []string{"ca.crt"}},
		{"secret with garbage in tls.crt", "Secret", map[string]any{"data": map[string]any{"tls.crt": b64([]byte("garbage")), "ca.crt": b64(caPEM)}}, []string{"ca.crt"}},
		{"secret with only garbage", "Secret", map[string]any{"data": map[string]any{"tls.crt": b64([]byte("-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----\n")), "tls.key": "%%%not base64"}}, nil},
		{"secret with PEM text that is not base64", "Secret", map[string]any{"data": map[string]any{"ca.crt": string(caPEM)}}, nil},
		{"configmap bundle", "ConfigMap", map[string]any{"data": map[string]any{"ca.crt": string(caPEM) + string(caPEM), "conf": "x=1"}}, []string{"ca.crt"}},
		{"configmap binaryData", "ConfigMap", map[string]any{"binaryData": map[string]any{"ca.der.pem": b64(caPEM)}}, []string{"ca.der.pem"}},
		{"another kind", "Pod", map[string]any{"data": map[string]any{"ca.crt": b64(caPEM)}}, nil},
		{"no data", "Secret", map[string]any{"type": "Opaque"}, nil},
		{"a stale view is removed", "Secret", map[string]any{Field: map[string]any{"x": 1}, "data": map[string]any{}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			got := d.AddView(tt.kind, tt.obj)
			view, has := tt.obj[Field].(map[string]any)
			if got != has || got != (tt.keys != nil) {
				t.Fatalf("AddView = %v, view %v; want a view: %v", got, has, tt.keys != nil)
			}
			if len(view) != len(tt.keys) {
				t.Errorf("view of %d keys, want %v: %s", len(view), tt.keys, js(view))
			}
			for _, k := range tt.keys {
				if _, ok := view[k]; !ok {
					t.Errorf("no view of %s", k)
				}
			}
		})
	}
}

// TestDecoderMemoCopies: the views a Decoder hands out are copies: changing
// one (the state oracles normalize strings in place) leaves the next intact.
func TestDecoderMemoCopies(t *testing.T) {
	caPEM, _ := certPEM(t, caTemplate(1, notBefore), key(t, "p256"), nil, nil)
	var d Decoder
	o1 := map[string]any{"data": map[string]any{"ca.crt": b64(caPEM)}}
	o2 := map[string]any{"data": map[string]any{"ca.crt": b64(caPEM)}}
	d.AddView("Secret", o1)
	v1 := o1[Field].(map[string]any)["ca.crt"].(map[string]any)
	v1["subject"].(map[string]any)["commonName"] = "changed"
	v1["usages"].([]any)[0] = "changed"
	d.AddView("Secret", o2)
	v2 := o2[Field].(map[string]any)["ca.crt"].(map[string]any)
	if cn := v2["subject"].(map[string]any)["commonName"]; cn != "gauntlet-test-ca" {
		t.Errorf("the memo was changed through a view: commonName %v", cn)
	}
	if u := v2["usages"].([]any)[0]; u != "cert sign" {
		t.Errorf("the memo was changed through a view: usages[0] %v", u)
	}
}

// TestMaybePEM: the cheap pre-test finds "-----BEGIN" in base64 at every
// alignment, and rejects other data.
func TestMaybePEM(t *testing.T) {
	for _, prefix := range []string{"", "x", "xy", "xyz", "Bag Attributes\n"} {
		s := b64([]byte(prefix + "-----BEGIN CERTIFICATE-----\n"))
		if !maybePEM(s, true) {
			t.Errorf("base64 of %q-----BEGIN not recognised: %s", prefix, s)
		}
	}
	if maybePEM(b64([]byte("just a password")), true) || maybePEM("plain text", false) {
		t.Error("data without PEM passes the pre-test")
	}
	if !maybePEM("junk\n-----BEGIN CERTIFICATE-----", false) {
		t.Error("PEM text not recognised")
	}
	if !strings.Contains(b64([]byte("-----BEGIN")), "LS0tLS1CRUdJT") {
		t.Error("bad pattern")
	}
}
