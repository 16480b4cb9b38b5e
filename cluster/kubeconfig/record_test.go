package kubeconfig

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestParsePath(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		want apiPath
	}{
		{"/api/v1/namespaces", true, apiPath{prefix: "/api/v1", resource: "namespaces"}},
		{"/api/v1/namespaces/g0-w0-1", true, apiPath{prefix: "/api/v1", resource: "namespaces", name: "g0-w0-1"}},
		{"/api/v1/namespaces/ns/secrets", true, apiPath{prefix: "/api/v1", namespace: "ns", resource: "secrets"}},
		{"/apis/apps/v1/namespaces/ns/deployments/op", true, apiPath{prefix: "/apis/apps/v1", namespace: "ns", resource: "deployments", name: "op"}},
		{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y", true, apiPath{prefix: "/apis/apiextensions.k8s.io/v1", resource: "customresourcedefinitions", name: "x.y"}},
		{"/api/v1/namespaces/ns/pods/p/exec", false, apiPath{}},
		{"/api/v1/namespaces/ns/pods/p/eviction", false, apiPath{}},
		{"/version", false, apiPath{}},
	} {
		got, ok := parsePath(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("parsePath(%s) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// fakeAPI is a tiny API server: namespaces are created by POST, objects by
// apply PATCH (201 the first time, 200 after), everything can be deleted, and a
// deleted namespace is gone at once. It answers POSTs in JSON only when asked
// for JSON (the recorder must ask) and records what it was asked.
type fakeAPI struct {
	mu      sync.Mutex
	objects map[string]bool
	ops     []string // DELETE and GET requests, in order
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	p := r.URL.Path
	switch r.Method {
	case http.MethodPost:
		var obj map[string]any
		_ = json.NewDecoder(r.Body).Decode(&obj)
		md, _ := obj["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if strings.HasSuffix(p, "/exec") || name == "" {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{}}`))
			return
		}
		dry := r.URL.Query().Get("dryRun") != ""
		if !dry && r.Header.Get("Accept") != "application/json" {
			http.Error(w, "this fake answers POSTs in JSON only when asked", http.StatusNotAcceptable)
			return
		}
		if !dry {
			f.objects[p+"/"+name] = true
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(obj)
	case http.MethodPatch:
		body := map[string]any{}
		_ = json.NewDecoder(r.Body).Decode(&body)
		status := http.StatusOK
		if !f.objects[p] {
			f.objects[p], status = true, http.StatusCreated
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	case http.MethodDelete, http.MethodGet:
		f.ops = append(f.ops, r.Method+" "+p)
		switch {
		case !f.objects[p]:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		case r.Method == http.MethodDelete:
			delete(f.objects, p)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
		default:
			_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"` + filepath.Base(p) + `"}}`))
		}
	}
}

// TestViewRecordsAndDeletesWhatItCreated: a namespace created by POST (through
// a client that prefers protobuf answers), a cluster-scoped and a namespaced object
// created by apply are recorded; an object applied that existed already, a
// dry run and a subresource POST are not; Delete removes the namespace, waits
// for it to be gone, then removes the older cluster-scoped object (the
// namespaced one goes with its namespace) and the view's record, and leaves the
// pre-existing object alone.
func TestViewRecordsAndDeletesWhatItCreated(t *testing.T) {
	api := &fakeAPI{objects: map[string]bool{"/apis/apps/v1/namespaces/kept/deployments/theirs": true}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	root := t.TempDir()
	v, err := newView(root, record{Name: "g1-0", Kubeconfig: "k", Server: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{name: "g1-0", base: &rest.Config{Host: srv.URL}, views: v}
	ctx := context.Background()
	cfg := c.RESTConfig()
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	apply := func(gvr schema.GroupVersionResource, ns, name string) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Thing", "metadata": map[string]any{"name": name}}}
		b, _ := obj.MarshalJSON()
		ri := dyn.Resource(gvr)
		var err error
		if ns != "" {
			_, err = ri.Namespace(ns).Patch(ctx, name, types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "gauntlet"})
		} else {
			_, err = ri.Patch(ctx, name, types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "gauntlet"})
		}
		if err != nil {
			t.Fatalf("apply %s %s/%s: %v", gvr.Resource, ns, name, err)
		}
	}
	crd := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apply(crd, "", "valkeyclusters.valkey.gauntlet.dev")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "g0-w0-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace through the view: %v", err)
	}
	apply(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "g0-w0-1", "valkey-password")
	apply(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "kept", "theirs")
	if err := cs.CoreV1().RESTClient().Post().AbsPath("/api/v1/namespaces/g0-w0-1/pods/p/exec").Body([]byte(`{}`)).Do(ctx).Error(); err != nil {
		t.Fatalf("subresource POST: %v", err)
	}

	got := v.created()
	want := []created{
		{Path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/valkeyclusters.valkey.gauntlet.dev"},
		{Path: "/api/v1/namespaces/g0-w0-1", IsNamespace: true},
		{Path: "/api/v1/namespaces/g0-w0-1/secrets/valkey-password", Namespace: "g0-w0-1"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("recorded %+v\nwant     %+v", got, want)
	}
	onDisk, err := readCreated(v.dir)
	if err != nil || !slices.Equal(onDisk, want) {
		t.Fatalf("created.jsonl holds %+v (%v); want %+v", onDisk, err, want)
	}
	if err := c.Delete(ctx); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantOps := []string{"DELETE /api/v1/namespaces/g0-w0-1", "GET /api/v1/namespaces/g0-w0-1",
		"DELETE /apis/apiextensions.k8s.io/v1/customresourcedefinitions/valkeyclusters.valkey.gauntlet.dev",
		"GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/valkeyclusters.valkey.gauntlet.dev"}
	if !slices.Equal(api.ops, wantOps) {
		t.Fatalf("requests %v\nwant     %v (newest first, the namespace's secret with it, the namespace gone before the older CRD goes, the CRD gone before Delete returns)", api.ops, wantOps)
	}
	if !api.objects["/apis/apps/v1/namespaces/kept/deployments/theirs"] {
		t.Fatal("Delete removed an object the view did not create")
	}
	if _, err := os.Stat(v.dir); !os.IsNotExist(err) {
		t.Fatalf("the view's record %s is still there after Delete (%v)", v.dir, err)
	}
}

// TestGCRemovesWhatAnAbandonedViewCreated: a view whose owner is gone (its
// owner record removed stands for a killed process) is purged by GC from its
// created.jsonl, through the kubeconfig it recorded; a torn last line is passed over.
func TestGCRemovesWhatAnAbandonedViewCreated(t *testing.T) {
	api := &fakeAPI{objects: map[string]bool{"/api/v1/namespaces/g0-w0-1": true}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	root := t.TempDir()
	k := filepath.Join(t.TempDir(), "kubeconfig")
	doc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + srv.URL + "}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	if err := os.WriteFile(k, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := newView(root, record{Name: "gdead-0", Kubeconfig: k, Server: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	v.add(created{Path: "/api/v1/namespaces/g0-w0-1", IsNamespace: true})
	if _, err := v.file.Write([]byte(`{"path":"/api/v1/namesp`)); err != nil {
		t.Fatal(err)
	}
	p := Provider{Options: Options{StateRoot: root}}
	if removed, err := p.GC(context.Background()); err != nil || len(removed) != 0 || len(api.ops) != 0 {
		t.Fatalf("GC of a view whose owner (this process) lives = %v, %v, requests %v; want nothing done", removed, err, api.ops)
	}
	if err := os.Remove(filepath.Join(v.dir, "owner.record")); err != nil {
		t.Fatal(err)
	}
	infos, err := p.List(context.Background())
	if err != nil || len(infos) != 1 || infos[0].Running || infos[0].Server != srv.URL {
		t.Fatalf("List = %+v, %v; want one abandoned view of %s", infos, err, srv.URL)
	}
	removed, err := p.GC(context.Background())
	if err != nil || !slices.Equal(removed, []string{"kubeconfig:gdead-0"}) {
		t.Fatalf("GC = %v, %v; want [kubeconfig:gdead-0]", removed, err)
	}
	if api.objects["/api/v1/namespaces/g0-w0-1"] {
		t.Fatal("GC left the abandoned view's namespace")
	}
	if _, err := os.Stat(v.dir); !os.IsNotExist(err) {
		t.Fatalf("GC left the view's record %s (%v)", v.dir, err)
	}
}
