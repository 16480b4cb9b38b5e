package replay

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/gauntlet-dev/gauntlet/internal/x509view"
	"github.com/gauntlet-dev/gauntlet/model"
)

// TestSnapshotX509View: the objects a snapshot records carry the decoded
// view of the certificates in core Secrets and ConfigMaps, beside their raw
// data (which masks may later remove); a kind of another group named Secret,
// a Secret without PEM and one with garbage in tls.crt get none, and the
// informer's cached objects are left untouched.
func TestSnapshotX509View(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example"},
		DNSNames: []string{"example.t1.svc"}, NotBefore: time.Unix(1e9, 0), NotAfter: time.Unix(1e9, 0).Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	b64 := base64.StdEncoding.EncodeToString
	obj := func(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
		o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": "t1",
			"managedFields": []any{map[string]any{"manager": "x"}}}}
		for k, v := range fields {
			o[k] = v
		}
		return &unstructured.Unstructured{Object: o}
	}
	secrets := watchedResource{gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, kind: "Secret"}
	configMaps := watchedResource{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap"}
	other := watchedResource{gvr: schema.GroupVersionResource{Group: "example.dev", Version: "v1", Resource: "secrets"}, kind: "Secret"}
	items := map[watchedResource][]*unstructured.Unstructured{
		secrets: {
			obj("v1", "Secret", "example-tls", map[string]any{"data": map[string]any{"tls.crt": b64(crt), "password": b64([]byte("x"))}}),
			obj("v1", "Secret", "garbage", map[string]any{"data": map[string]any{"tls.crt": b64([]byte("garbage"))}}),
			obj("v1", "Secret", "plain", map[string]any{"data": map[string]any{"password": b64([]byte("x"))}}),
		},
		configMaps: {obj("v1", "ConfigMap", "bundle", map[string]any{"data": map[string]any{"ca.crt": string(crt)}})},
		other:      {obj("example.dev/v1", "Secret", "custom", map[string]any{"data": map[string]any{"tls.crt": b64(crt)}})},
	}
	w := &Watch{ns: "t1", infs: map[watchedResource]cache.SharedIndexInformer{}}
	for r, objs := range items {
		inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
		for _, o := range objs {
			if err := inf.GetStore().Add(o); err != nil {
				t.Fatal(err)
			}
		}
		w.infs[r] = inf
	}
	for round := 0; round < 2; round++ { // the second from the decoder's memory
		objs := w.Objects()
		tests := []struct {
			key  model.ObjectKey
			view bool
		}{
			{model.ObjectKey{Version: "v1", Kind: "Secret", Namespace: "t1", Name: "example-tls"}, true},
			{model.ObjectKey{Version: "v1", Kind: "Secret", Namespace: "t1", Name: "garbage"}, false},
			{model.ObjectKey{Version: "v1", Kind: "Secret", Namespace: "t1", Name: "plain"}, false},
			{model.ObjectKey{Version: "v1", Kind: "ConfigMap", Namespace: "t1", Name: "bundle"}, true},
			{model.ObjectKey{Group: "example.dev", Version: "v1", Kind: "Secret", Namespace: "t1", Name: "custom"}, false},
		}
		for _, tt := range tests {
			o, ok := objs[tt.key.String()]
			if !ok {
				t.Fatalf("round %d: no %s in %v", round, tt.key, objs)
			}
			view, has := o[x509view.Field].(map[string]any)
			if has != tt.view {
				t.Errorf("round %d: %s has a view: %v, want %v", round, tt.key.Name, has, tt.view)
			}
			if _, ok := o["data"]; !ok {
				t.Errorf("round %d: %s lost its data", round, tt.key.Name)
			}
			if !has {
				continue
			}
			for _, c := range view {
				dns, _ := c.(map[string]any)["dnsNames"].([]any)
				if len(dns) != 1 || dns[0] != "example.t1.svc" {
					t.Errorf("round %d: %s: view %v", round, tt.key.Name, view)
				}
			}
		}
	}
	for _, objs := range items {
		for _, o := range objs {
			if _, has := o.Object[x509view.Field]; has {
				t.Errorf("the informer's cached %s was changed", o.GetName())
			}
		}
	}
}
