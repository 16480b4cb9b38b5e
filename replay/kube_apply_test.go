package replay

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/localenv"
)

func TestRemovalPatch(t *testing.T) {
	fields := func(manager string, op metav1.ManagedFieldsOperationType, fs string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fs)}}
	}
	live := map[string]any{"spec": map[string]any{
		"auth":    map[string]any{"passwordSecret": map[string]any{"name": "pw", "key": "password"}},
		"tls":     map[string]any{"enabled": false, "issuer": "x"},
		"replica": int64(3),
	}}
	mine := fields(FieldManager, metav1.ManagedFieldsOperationApply,
		`{"f:spec":{"f:auth":{"f:passwordSecret":{"f:name":{},"f:key":{}}},"f:tls":{"f:issuer":{}},"f:replicas":{}}}`)
	tests := []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		paths   [][]string
		want    map[string]any
	}{
		{"owned fields of an emptied object are nulled", []metav1.ManagedFieldsEntry{mine}, [][]string{{"spec", "auth"}},
			map[string]any{"spec": map[string]any{"auth": map[string]any{"passwordSecret": nil}}}},
		{"fields the harness does not own are left (defaults, other managers)", []metav1.ManagedFieldsEntry{mine}, [][]string{{"spec", "tls"}},
			map[string]any{"spec": map[string]any{"tls": map[string]any{"issuer": nil}}}},
		{"fields another manager owns too are left", []metav1.ManagedFieldsEntry{mine,
			fields("kubectl", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:auth":{"f:passwordSecret":{}}}}`)},
			[][]string{{"spec", "auth"}}, nil},
		{"an object already empty needs nothing", []metav1.ManagedFieldsEntry{mine}, [][]string{{"spec", "exporter"}}, nil},
		{"no apply of the harness yet", nil, [][]string{{"spec", "auth"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := removalPatch(live, tt.managed, tt.paths); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("removalPatch = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEmptyObjectPaths(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{}},
		"spec": map[string]any{"auth": map[string]any{}, "tls": map[string]any{"a": map[string]any{}}, "l": []any{map[string]any{}},
			"n": int64(1)},
	}
	got := map[string]bool{}
	for _, p := range emptyObjectPaths(obj, nil) {
		b, _ := json.Marshal(p)
		got[string(b)] = true
	}
	want := map[string]bool{`["spec","auth"]`: true, `["spec","tls","a"]`: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("emptyObjectPaths = %v, want %v", got, want)
	}
}

// TestE2EApplyEmptyObject: a desired state that empties an object the previous
// one set a field in (the rollback from `auth: {passwordSecret: ...}` to
// `auth: {}`) is accepted by the API server and stored as {}. Server-side apply
// alone leaves the object null, which the CRD refuses ("spec.auth: Invalid
// value: "null": spec.auth in body must be of type object"); the exploratory
// campaign then fell back to re-creating the custom resource.
func TestE2EApplyEmptyObject(t *testing.T) {
	root := localenv.Repo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := local.Provider{Options: local.Options{StateRoot: t.TempDir(), Nodes: 1, Log: log}}.Create(ctx, "apply-empty")
	if err != nil {
		testenv.Unavailable(t, "the embedded cluster is not available: %v", err)
	}
	defer func() {
		if err := c.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	k, err := NewKube(c.RESTConfig(), c.Name(), log)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "operator", "config", "crd", "bases", "valkey.gauntlet.dev_valkeyclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	if err := k.Apply(ctx, crd, ""); err != nil {
		t.Fatal(err)
	}
	const ns = "apply-empty"
	if err := k.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cr := func(auth map[string]any) map[string]any {
		return map[string]any{"apiVersion": "valkey.gauntlet.dev/v1alpha1", "kind": "ValkeyCluster",
			"metadata": map[string]any{"name": "cache"}, "spec": map[string]any{"replicas": int64(1), "auth": auth}}
	}
	// The CRD is served a moment after it is created.
	if err := Retry(ctx, time.Minute, func() error { return k.Apply(ctx, cr(map[string]any{}), ns) }); err != nil {
		t.Fatal(err)
	}
	steps := []map[string]any{
		{"passwordSecret": map[string]any{"name": "pw", "key": "password"}},
		{},
		{"passwordSecret": map[string]any{"name": "pw2", "key": "password"}},
		{},
	}
	for i, auth := range steps {
		if err := k.Apply(ctx, cr(auth), ns); err != nil {
			t.Fatalf("step %d, auth %v: %v", i, auth, err)
		}
		live, err := k.Lookup(ctx, "valkey.gauntlet.dev/v1alpha1", "ValkeyCluster", ns, "cache")
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := live["spec"].(map[string]any)
		if got, ok := spec["auth"].(map[string]any); !ok || !reflect.DeepEqual(got, auth) {
			t.Fatalf("step %d: spec.auth is %#v, want %#v", i, spec["auth"], auth)
		}
	}
}

// Snapshots and quiet windows follow the operator's objects, not the fault tool's.
func TestWatchedResources(t *testing.T) {
	lw := []string{"list", "watch", "get"}
	for _, c := range []struct {
		gv   schema.GroupVersion
		r    metav1.APIResource
		want bool
	}{
		{schema.GroupVersion{Version: "v1"}, metav1.APIResource{Name: "pods", Verbs: lw}, true},
		{schema.GroupVersion{Group: "apps", Version: "v1"}, metav1.APIResource{Name: "statefulsets", Verbs: lw}, true},
		{schema.GroupVersion{Group: "chaos-mesh.org", Version: "v1alpha1"}, metav1.APIResource{Name: "podnetworkchaos", Verbs: lw}, false},
		{schema.GroupVersion{Group: "chaos-mesh.org", Version: "v1alpha1"}, metav1.APIResource{Name: "networkchaos", Verbs: lw}, false},
		{schema.GroupVersion{Version: "v1"}, metav1.APIResource{Name: "events", Verbs: lw}, false},
		{schema.GroupVersion{Version: "v1"}, metav1.APIResource{Name: "pods/log", Verbs: lw}, false},
		{schema.GroupVersion{Version: "v1"}, metav1.APIResource{Name: "bindings", Verbs: []string{"create"}}, false},
	} {
		if got := watched(c.gv, c.r); got != c.want {
			t.Errorf("watched(%s, %s) = %v, want %v", c.gv, c.r.Name, got, c.want)
		}
	}
}
