package oracles

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
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/x509view"
	"github.com/gauntlet-dev/gauntlet/model"
)

// The tests of this file judge properties that take effect only inside an
// issued certificate or key (cert-manager's Certificate, CloudNativePG's
// server certificate) through the decoded view the campaign adds to Secrets
// (x509view.Field), with the Secrets' data masked as the targets mask it.

// certReq is what an issuance puts in a certificate and its key.
type certReq struct {
	cn       string
	dns      []string
	ips      []string
	uris     []string
	emails   []string
	orgs     []string
	isCA     bool
	key      string // rsa2048, rsa3072, p256, p384, ed25519
	pkcs8    bool
	duration time.Duration
	usages   []x509.ExtKeyUsage
}

var (
	x509KeysMu sync.Mutex
	x509Keys   = map[string]crypto.Signer{}
)

// x509Key returns a key of the given kind; issuance n of a request gets key
// n%2, so that two issuances have different keys.
func x509Key(t testing.TB, kind string, n int64) crypto.Signer {
	t.Helper()
	name := kind + "/" + string(rune('0'+n%2))
	x509KeysMu.Lock()
	defer x509KeysMu.Unlock()
	if k, ok := x509Keys[name]; ok {
		return k
	}
	var (
		k   crypto.Signer
		err error
	)
	switch kind {
	case "rsa2048":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "rsa3072":
		k, err = rsa.GenerateKey(rand.Reader, 3072)
	case "p256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "p384":
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ed25519":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("no key kind %s", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	x509Keys[name] = k
	return k
}

// issue returns the Secret an issuance of r writes (tls.crt, tls.key and
// ca.crt, signed by a CA issued with it), with its decoded view. serial
// numbers the issuance: keys, serial numbers and validity instants differ
// between issuances.
func issue(t testing.TB, ns, name string, r certReq, serial int64) model.Object {
	t.Helper()
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC).Add(time.Duration(serial) * 7 * time.Minute)
	caKey := x509Key(t, "p256", serial+1)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(serial*1000 + 1), Subject: pkix.Name{CommonName: "gauntlet-test-ca"},
		NotBefore: at.Add(-time.Hour), NotAfter: at.Add(8760 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	d := r.duration
	if d == 0 {
		d = 2160 * time.Hour
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: r.cn, Organization: r.orgs},
		NotBefore: at, NotAfter: at.Add(d), IsCA: r.isCA, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: r.usages,
		DNSNames: r.dns, EmailAddresses: r.emails}
	if r.isCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	for _, ip := range r.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	for _, u := range r.uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	k := x509Key(t, r.key, serial)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, k.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	var keyBlock *pem.Block
	switch x := k.(type) {
	case *rsa.PrivateKey:
		keyBlock = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(x)}
	case *ecdsa.PrivateKey:
		b, err := x509.MarshalECPrivateKey(x)
		if err != nil {
			t.Fatal(err)
		}
		keyBlock = &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
	}
	if r.pkcs8 || keyBlock == nil {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		keyBlock = &pem.Block{Type: "PRIVATE KEY", Bytes: b}
	}
	enc := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	s := model.Object{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "u-" + name + "-" + itoa(int(serial))},
		"data": map[string]any{
			"tls.crt": enc(append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), caPEM...)),
			"tls.key": enc(pem.EncodeToMemory(keyBlock)),
			"ca.crt":  enc(caPEM),
		},
	}
	var dec x509view.Decoder
	if !dec.AddView("Secret", s) {
		t.Fatal("the issued Secret has no view")
	}
	return s
}

// crState is a state holding the CR (group/version/Kind) with spec and the
// given Secrets.
func crState(ns, gvk string, spec map[string]any, secrets ...model.Object) *model.Snapshot {
	parts := strings.Split(gvk, "/")
	crKey := model.ObjectKey{Group: parts[0], Version: parts[1], Kind: parts[2], Namespace: ns, Name: "example"}.String()
	s := &model.Snapshot{Taken: t0, CR: crKey, Objects: map[string]model.Object{
		crKey: {"apiVersion": parts[0] + "/" + parts[1], "kind": parts[2],
			"metadata": map[string]any{"name": "example", "namespace": ns}, "spec": spec},
	}}
	for _, sec := range secrets {
		md := sec["metadata"].(map[string]any)
		s.Objects[model.ObjectKey{Version: "v1", Kind: "Secret", Namespace: ns, Name: md["name"].(string)}.String()] = sec
	}
	return s
}

const certGVK = "cert-manager.io/v1/Certificate"

// certSpec is a Certificate's spec for r (the properties the tests change).
func certSpec(r certReq, extra map[string]any) map[string]any {
	spec := map[string]any{"secretName": "example-tls", "commonName": r.cn, "issuerRef": map[string]any{"name": "ca"}}
	for k, v := range extra {
		spec[k] = v
	}
	return spec
}

func cnpgSANs(ns string, extra ...string) []string {
	var out []string
	for _, svc := range []string{"example-rw", "example-r", "example-ro"} {
		out = append(out, svc, svc+"."+ns, svc+"."+ns+".svc", svc+"."+ns+".svc.cluster.local")
	}
	return append(out, extra...)
}

// TestConsistencyX509 judges certificate properties through the view: each
// property reflected when the Secret was re-issued with it, and an alarm when
// the issuance ignored it (or, for CloudNativePG's serverAltDNSNames, when the
// name is not among the certificate's SANs).
func TestConsistencyX509(t *testing.T) {
	const ns = "t1"
	base := certReq{cn: "example.gauntlet.test", dns: []string{"example.gauntlet.test"}, key: "p256"}
	with := func(f func(r *certReq)) certReq {
		r := base
		f(&r)
		return r
	}
	baseSpec := map[string]any{"dnsNames": []any{"example.gauntlet.test"}, "duration": "2160h",
		"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)}}
	specWith := func(path string, v any) map[string]any {
		s := certSpec(base, baseSpec)
		s = jsonCopy(s)
		setIn(t, map[string]any{"spec": s}, "spec."+path, v)
		return s
	}
	certCase := func(name, prop string, v any, effect certReq, want int, contains ...string) x509Case {
		return x509Case{name: name, gvk: certGVK, changed: "spec." + prop,
			prevSpec: certSpec(base, baseSpec), desSpec: specWith(prop, v),
			prev: []model.Object{issue(t, ns, "example-tls", base, 1)},
			curr: []model.Object{issue(t, ns, "example-tls", effect, 2)},
			want: expectation{n: want, contains: contains}}
	}
	rsa := with(func(r *certReq) { r.key = "rsa2048" })
	cases := []x509Case{
		certCase("algorithm reflected", "privateKey.algorithm", "RSA", with(func(r *certReq) { r.key = "rsa2048" }), 0),
		certCase("algorithm ignored", "privateKey.algorithm", "RSA", base, 1, "spec.privateKey.algorithm changed to \"RSA\""),
		certCase("size reflected", "privateKey.size", int64(384), with(func(r *certReq) { r.key = "p384" }), 0),
		certCase("size ignored", "privateKey.size", int64(384), base, 1, "spec.privateKey.size changed to 384"),
		certCase("encoding reflected", "privateKey.encoding", "PKCS8", with(func(r *certReq) { r.pkcs8 = true }), 0),
		certCase("encoding ignored", "privateKey.encoding", "PKCS8", base, 1, "spec.privateKey.encoding"),
		certCase("duration reflected", "duration", "720h", with(func(r *certReq) { r.duration = 720 * time.Hour }), 0),
		certCase("duration ignored", "duration", "720h", base, 1, "spec.duration changed to \"720h\""),
		certCase("duration overruled", "duration", "720h", with(func(r *certReq) { r.duration = 721 * time.Hour }), 1, "spec.duration"),
		certCase("usages reflected", "usages", []any{"digital signature", "key encipherment", "client auth"},
			with(func(r *certReq) { r.usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} }), 0),
		certCase("usages ignored", "usages", []any{"digital signature", "key encipherment", "client auth"},
			with(func(r *certReq) { r.usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }), 1, "spec.usages"),
		certCase("isCA reflected", "isCA", true, with(func(r *certReq) { r.isCA = true }), 0),
		certCase("isCA ignored", "isCA", true, base, 1, "spec.isCA changed to true"),
		certCase("subject organizations reflected", "subject.organizations", []any{"Gauntlet"}, with(func(r *certReq) { r.orgs = []string{"Gauntlet"} }), 0),
		certCase("subject organizations ignored", "subject.organizations", []any{"Gauntlet"}, base, 1, "spec.subject.organizations"),
		certCase("ipAddresses reflected", "ipAddresses", []any{"10.1.2.3"}, with(func(r *certReq) { r.ips = []string{"10.1.2.3"} }), 0),
		certCase("ipAddresses ignored", "ipAddresses", []any{"10.1.2.3"}, base, 1, "spec.ipAddresses"),
		certCase("uris reflected", "uris", []any{"spiffe://gauntlet.test/a"}, with(func(r *certReq) { r.uris = []string{"spiffe://gauntlet.test/a"} }), 0),
		certCase("emailAddresses reflected", "emailAddresses", []any{"ops@gauntlet.test"}, with(func(r *certReq) { r.emails = []string{"ops@gauntlet.test"} }), 0),
		certCase("emailAddresses of another value", "emailAddresses", []any{"ops@gauntlet.test"}, with(func(r *certReq) { r.emails = []string{"dev@gauntlet.test"} }), 1, "spec.emailAddresses"),
		{
			name: "algorithm and size back from RSA", gvk: certGVK, changed: "spec.privateKey",
			prevSpec: specWith("privateKey", map[string]any{"algorithm": "RSA", "size": int64(2048)}),
			desSpec:  certSpec(base, baseSpec),
			prev:     []model.Object{issue(t, ns, "example-tls", rsa, 1)},
			curr:     []model.Object{issue(t, ns, "example-tls", base, 2)},
		},
	}
	// CloudNativePG: spec.certificates.serverAltDNSNames end up among the
	// SANs of the <cluster>-server Secret's certificate, beside the
	// operator's own service names.
	const cnpgGVK = "postgresql.cnpg.io/v1/Cluster"
	server := func(serial int64, extra ...string) model.Object {
		return issue(t, ns, "example-server", certReq{cn: "example-rw", dns: cnpgSANs(ns, extra...), key: "p256"}, serial)
	}
	alt := func(names ...string) map[string]any {
		l := make([]any, len(names))
		for i, n := range names {
			l[i] = n
		}
		spec := map[string]any{"instances": int64(1)}
		if len(names) > 0 {
			spec["certificates"] = map[string]any{"serverAltDNSNames": l}
		}
		return spec
	}
	cases = append(cases,
		x509Case{name: "serverAltDNSNames among the SANs", gvk: cnpgGVK, changed: "spec.certificates.serverAltDNSNames",
			prevSpec: alt(), desSpec: alt("db.gauntlet.test"),
			prev: []model.Object{server(1)}, curr: []model.Object{server(2, "db.gauntlet.test")}},
		x509Case{name: "serverAltDNSNames, two among the SANs", gvk: cnpgGVK, changed: "spec.certificates.serverAltDNSNames",
			prevSpec: alt("db.gauntlet.test"), desSpec: alt("db.gauntlet.test", "pg.gauntlet.test"),
			prev: []model.Object{server(1, "db.gauntlet.test")}, curr: []model.Object{server(2, "pg.gauntlet.test", "db.gauntlet.test")}},
		x509Case{name: "serverAltDNSNames not in the certificate", gvk: cnpgGVK, changed: "spec.certificates.serverAltDNSNames",
			prevSpec: alt(), desSpec: alt("db.gauntlet.test"),
			prev: []model.Object{server(1)}, curr: []model.Object{server(2)},
			want: expectation{n: 1, contains: []string{`spec.certificates.serverAltDNSNames changed to ["db.gauntlet.test"]`}}},
		x509Case{name: "serverAltDNSNames, another name in the certificate", gvk: cnpgGVK, changed: "spec.certificates.serverAltDNSNames",
			prevSpec: alt(), desSpec: alt("db.gauntlet.test"),
			prev: []model.Object{server(1)}, curr: []model.Object{server(2, "other.gauntlet.test")},
			want: expectation{n: 1, contains: []string{"spec.certificates.serverAltDNSNames"}}},
		x509Case{name: "serverAltDNSNames, one of two missing", gvk: cnpgGVK, changed: "spec.certificates.serverAltDNSNames",
			prevSpec: alt(), desSpec: alt("db.gauntlet.test", "pg.gauntlet.test"),
			prev: []model.Object{server(1)}, curr: []model.Object{server(2, "db.gauntlet.test")},
			want: expectation{n: 1, contains: []string{"spec.certificates.serverAltDNSNames"}}},
		x509Case{name: "serverAltDNSNames removed from the certificate", gvk: cnpgGVK, changed: "spec.certificates",
			prevSpec: alt("db.gauntlet.test"), desSpec: alt(),
			prev: []model.Object{server(1, "db.gauntlet.test")}, curr: []model.Object{server(2)}},
		x509Case{name: "serverAltDNSNames removed but still in the certificate", gvk: cnpgGVK, changed: "spec.certificates",
			prevSpec: alt("db.gauntlet.test"), desSpec: alt(),
			prev: []model.Object{server(1, "db.gauntlet.test")}, curr: []model.Object{server(2, "db.gauntlet.test")},
			want: expectation{n: 1, contains: []string{"was removed but the state still reflects"}}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev := crState(ns, tc.gvk, tc.prevSpec, tc.prev...)
			curr := crState(ns, tc.gvk, tc.desSpec, tc.curr...)
			tr := &model.Transition{Step: step(model.StepApply, tc.changed), PrevDesired: desiredOf(prev), Desired: desiredOf(curr), Prev: prev, Curr: curr}
			fs := run(NewConsistency(Config{Masks: []string{"Secret/*/data"}}), tr)
			for _, f := range fs {
				t.Log(f.Summary)
			}
			tc.want.check(t, fs)
		})
	}
}

type x509Case struct {
	name, gvk, changed string
	prevSpec, desSpec  map[string]any
	prev, curr         []model.Object
	want               expectation
}

func jsonCopy(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if mm, ok := v.(map[string]any); ok {
			v = jsonCopy(mm)
		}
		out[k] = v
	}
	return out
}

// TestStateOraclesX509Reissue: the differential, recovery and stability
// oracles compare the views of two issuances of the same request (other
// keys, serial numbers, validity instants, CA, and for the differential
// another namespace in the SANs) as equal, and report a view that differs.
func TestStateOraclesX509Reissue(t *testing.T) {
	req := certReq{cn: "example-rw", key: "p256", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	state := func(ns string, serial int64, r certReq) *model.Snapshot {
		r.dns = cnpgSANs(ns, "db.gauntlet.test")
		return crState(ns, "postgresql.cnpg.io/v1/Cluster", map[string]any{"instances": int64(1)},
			issue(t, ns, "example-server", r, serial))
	}
	longer := req
	longer.duration = 2161 * time.Hour
	rsaReq := req
	rsaReq.key = "rsa2048"
	cfg := Config{Masks: []string{"Secret/*/data", "Secret/*/metadata.uid"}}
	tests := []struct {
		name   string
		oracle Oracle
		kind   model.StepKind
		curr   *model.Snapshot
		other  *model.Snapshot // the reference, or the stability sample
		want   expectation
	}{
		{"differential, re-issued in another namespace", NewDifferential(cfg), model.StepApply, state("t1", 1, req), state("ref", 2, req), expectation{}},
		{"differential, another duration", NewDifferential(cfg), model.StepApply, state("t1", 1, req), state("ref", 2, longer), expectation{n: 1, contains: []string{"Secret"}}},
		{"recovery, re-issued", NewRecovery(cfg), model.StepRollback, state("t1", 3, req), state("t1", 4, req), expectation{}},
		{"recovery, another key algorithm", NewRecovery(cfg), model.StepRollback, state("t1", 3, rsaReq), state("t1", 4, req), expectation{n: 1, contains: []string{"failed to roll back"}}},
		{"stability, re-issued", NewStability(cfg), model.StepApply, state("t1", 5, req), state("t1", 6, req), expectation{}},
		{"stability, another key algorithm", NewStability(cfg), model.StepApply, state("t1", 5, req), state("t1", 6, rsaReq), expectation{n: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &model.Transition{Step: step(tt.kind), Desired: desiredOf(tt.curr), Curr: tt.curr}
			if tt.oracle.Name() == NameStability {
				tr.Stability = []*model.Snapshot{tt.other}
			} else {
				tr.Reference = tt.other
			}
			fs := run(tt.oracle, tr)
			tt.want.check(t, fs)
			for _, f := range fs {
				found := false
				for _, e := range f.Evidence {
					found = found || strings.Contains(e.Path, x509view.Field)
				}
				if !found {
					t.Errorf("no evidence names the view: %+v", f)
				}
			}
		})
	}
}

// TestReflectsListInLargerList: a CR list of scalars is reflected by a
// larger list holding each of its items (serverAltDNSNames among a
// certificate's SANs), and not when one item is missing.
func TestReflectsListInLargerList(t *testing.T) {
	sans := []any{"example-rw", "example-rw.t1", "example-rw.t1.svc", "db.gauntlet.test"}
	tests := []struct {
		d    []any
		want bool
	}{
		{[]any{"db.gauntlet.test"}, true},
		{[]any{"example-rw", "db.gauntlet.test"}, true},
		{[]any{"pg.gauntlet.test"}, false},
		{[]any{"db.gauntlet.test", "pg.gauntlet.test"}, false},
		{[]any{"db.gauntlet"}, false},
	}
	for _, tt := range tests {
		if got := Reflects(tt.d, "serverAltDNSNames", sans); got != tt.want {
			t.Errorf("Reflects(%v, SANs) = %v, want %v", tt.d, got, tt.want)
		}
	}
}

// TestDefaultMasksRootCAView: the namespace's root CA ConfigMap's view is
// masked with its data (the mask parses and removes it).
func TestDefaultMasksRootCAView(t *testing.T) {
	if err := ValidateMasks(DefaultMasks()); err != nil {
		t.Fatal(err)
	}
	cm := model.Object{"kind": "ConfigMap", "metadata": map[string]any{"name": "kube-root-ca.crt"},
		"data": map[string]any{"ca.crt": "x"}, x509view.Field: map[string]any{"ca.crt": map[string]any{"isCA": true}}}
	m := Mask(cm, DefaultMasks())
	if _, ok := m[x509view.Field]; ok {
		t.Errorf("kube-root-ca.crt keeps its view: %v", m)
	}
	other := Mask(model.Object{"kind": "ConfigMap", "metadata": map[string]any{"name": "bundle"}, x509view.Field: map[string]any{}}, DefaultMasks())
	if _, ok := other[x509view.Field]; !ok {
		t.Error("another ConfigMap lost its view")
	}
}
