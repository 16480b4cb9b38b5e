package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/fake"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

func TestLookup(t *testing.T) {
	obj := MustObject(`{
	  "spec": {"replicas": 3, "template": {"spec": {"containers": [
	    {"name": "exporter", "image": "x"},
	    {"name": "valkey", "image": "valkey/valkey:8.1", "env": [{"name": "A", "value": "1"}]}
	  ]}}},
	  "data": {"valkey.conf": "maxmemory 1mb", "a.b": "dotted"},
	  "status": {"observedGeneration": 2}
	}`)
	tests := []struct {
		path string
		want any
		ok   bool
	}{
		{"spec.replicas", json.Number("3"), true},
		{`data["valkey.conf"]`, "maxmemory 1mb", true},
		{`data['a.b']`, "dotted", true},
		{"spec.template.spec.containers[1].image", "valkey/valkey:8.1", true},
		{"spec.template.spec.containers[name=valkey].env[0].value", "1", true},
		{"/spec/template/spec/containers/0/name", "exporter", true},
		{"spec.template.spec.containers[name=sidecar].image", nil, false},
		{"spec.template.spec.containers[2]", nil, false},
		{"spec.replicas.value", nil, false},
		{"spec.missing", nil, false},
		{"data[0]", nil, false},
	}
	for _, tc := range tests {
		segs, err := reports.ParsePath(tc.path)
		if err != nil {
			t.Fatalf("ParsePath(%q): %v", tc.path, err)
		}
		got, ok := Lookup(map[string]any(obj), segs)
		if ok != tc.ok || (ok && fmt.Sprint(got) != fmt.Sprint(tc.want)) {
			t.Errorf("Lookup(%s) = %v, %v; want %v, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFormatPath(t *testing.T) {
	tests := []struct {
		in   []any
		want string
	}{
		{[]any{"spec", "replicas"}, "spec.replicas"},
		{[]any{"data", "valkey.conf"}, `data["valkey.conf"]`},
		{[]any{"spec", "containers", reports.PathSelector{Key: "name", Value: "valkey"}, "env", 0, "value"}, "spec.containers[name=valkey].env[0].value"},
		{[]any{"metadata", "labels", "app.kubernetes.io/name"}, `metadata.labels["app.kubernetes.io/name"]`},
	}
	for _, tc := range tests {
		if got := FormatPath(tc.in); got != tc.want {
			t.Errorf("FormatPath(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestReflects(t *testing.T) {
	cm := map[string]any{"data": map[string]any{"valkey.conf": "maxmemory 100mb\nmaxmemory-policy allkeys-lru\n"}}
	sts := map[string]any{"spec": map[string]any{"replicas": int64(3), "args": []any{"--port", "6379", "--maxmemory-policy=noeviction"}}}
	ref := func(path string) reports.FieldRef {
		segs, err := reports.ParsePath(path)
		if err != nil {
			t.Fatal(err)
		}
		return reports.FieldRef{Path: path, Segments: segs}
	}
	tests := []struct {
		obj   map[string]any
		f     reports.FieldRef
		vc    reports.ValueCheck
		ok    bool
		found string
	}{
		{cm, ref(`data["valkey.conf"]`), reports.ValueCheck{Key: "maxmemory-policy", Expected: json.RawMessage(`"allkeys-lru"`)}, true, ""},
		{cm, ref(`data["valkey.conf"]`), reports.ValueCheck{Key: "maxmemory-policy", Expected: json.RawMessage(`"noeviction"`)}, false, `sets maxmemory-policy to "allkeys-lru"`},
		{cm, ref(`data["valkey.conf"]`), reports.ValueCheck{Key: "maxmemory", Expected: json.RawMessage(`"100mb"`)}, true, ""},
		{cm, ref("data.missing"), reports.ValueCheck{Key: "x", Expected: json.RawMessage(`"x"`)}, false, "is absent"},
		{sts, ref("spec.replicas"), reports.ValueCheck{Key: "replicas", Expected: json.RawMessage(`3`)}, true, ""},
		{sts, ref("spec.replicas"), reports.ValueCheck{Key: "replicas", Expected: json.RawMessage(`"3"`)}, true, ""},
		{sts, ref("spec.replicas"), reports.ValueCheck{Key: "replicas", Expected: json.RawMessage(`5`)}, false, "holds 3"},
		{sts, ref("spec.args"), reports.ValueCheck{Key: "maxmemory-policy", Expected: json.RawMessage(`"noeviction"`)}, true, ""},
	}
	for _, tc := range tests {
		ok, found, err := reflects(tc.obj, tc.f, tc.vc)
		if err != nil || ok != tc.ok || found != tc.found {
			t.Errorf("reflects(%s, %s %s) = %v, %q, %v; want %v, %q", tc.f.Path, tc.vc.Key, tc.vc.Expected, ok, found, err, tc.ok, tc.found)
		}
	}
	if _, _, err := reflects(cm, ref(`data["valkey.conf"]`), reports.ValueCheck{Expected: json.RawMessage(`{bad`)}); err == nil {
		t.Error("a malformed expected value was accepted")
	}
	if got := shorten("ünï", 2); got != "ü…" {
		t.Errorf("shorten = %q", got)
	}
}

func pod(name, uid, phase string, ready bool, restarts int64, owner types.UID) *unstructured.Unstructured {
	status := "False"
	if ready {
		status = "True"
	}
	p := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": uid},
		"status": map[string]any{
			"phase":             phase,
			"conditions":        []any{map[string]any{"type": "Ready", "status": status}},
			"containerStatuses": []any{map[string]any{"name": "valkey", "restartCount": restarts}},
		},
	}}
	if owner != "" {
		ctrl := true
		p.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "vk", UID: owner, Controller: &ctrl}})
	}
	return p
}

func TestPodProblems(t *testing.T) {
	deleting := pod("vk-3", "u3", "Running", false, 0, "")
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	tests := []struct {
		pod  *unstructured.Unstructured
		want []string
	}{
		{pod("vk-0", "u0", "Running", true, 0, ""), nil},
		{pod("vk-1", "u1", "Pending", false, 0, ""), []string{"pod vk-1 is not ready (phase Pending), want Running and Ready"}},
		{pod("vk-2", "u2", "Running", true, 2, ""), []string{"pod vk-2 container valkey restarted 2 time(s), want none"}},
		{deleting, nil},
		{pod("job", "u4", "Succeeded", false, 0, ""), nil},
	}
	for _, tc := range tests {
		got := podProblems(tc.pod.Object)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("podProblems(%s) = %q, want %q", tc.pod.GetName(), got, tc.want)
		}
	}
}

// TestReplayBudget: a convergence timeout for the seed, each step and three
// more, and two more per fault.
func TestReplayBudget(t *testing.T) {
	d := Object{"metadata": map[string]any{"name": "vk"}}
	r := Reproducer{Seed: d, ConvergeTimeout: time.Minute, Steps: []Step{
		{Kind: model.StepApply, Desired: d},
		{Kind: model.StepFault, Desired: d, Fault: &FaultPlan{Kind: "partition", Role: "replica"}},
	}}
	if got := replayBudget(r); got != 7*time.Minute {
		t.Errorf("replayBudget = %v, want 7m", got)
	}
}

func TestMustJSON(t *testing.T) {
	if got := MustJSON("12345678901234567890"); got != json.Number("12345678901234567890") {
		t.Errorf("big integer = %#v, want its exact text", got)
	}
	obj := MustObject(`{"spec": {"replicas": 3}}`)
	if obj["spec"].(map[string]any)["replicas"] != json.Number("3") {
		t.Errorf("MustObject = %v", obj)
	}
	for _, bad := range []string{`{"a":`, `[1]`, `{} {}`} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MustObject(%q) did not panic", bad)
				}
			}()
			MustObject(bad)
		}()
	}
	plain, err := plainJSON(obj)
	if err != nil || plain["spec"].(map[string]any)["replicas"] != int64(3) {
		t.Errorf("plainJSON = %#v, %v; want int64 leaves", plain, err)
	}
	r, err := plainSteps(Reproducer{Seed: obj, Steps: []Step{{Desired: MustObject(`{"spec": {"ratio": 1.5}}`)}}})
	if err != nil || r.Seed["spec"].(map[string]any)["replicas"] != int64(3) || r.Steps[0].Desired["spec"].(map[string]any)["ratio"] != 1.5 {
		t.Errorf("plainSteps = %#v, %v", r, err)
	}
}

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	stsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	cmGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	vkGVR   = schema.GroupVersionResource{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Resource: "valkeyclusters"}
)

// fakeChecker is a checker on a fake dynamic client with a REST mapper for
// pods, StatefulSets, ConfigMaps and ValkeyClusters.
func fakeChecker(t *testing.T, objs ...runtime.Object) (*checker, *fake.FakeDynamicClient) {
	t.Helper()
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		podsGVR: "PodList", stsGVR: "StatefulSetList", cmGVR: "ConfigMapList", vkGVR: "ValkeyClusterList",
		{Version: "v1", Resource: "namespaces"}: "NamespaceList",
	}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster"}, meta.RESTScopeNamespace)
	c := &checker{
		client: client, mapper: mapper, namespace: "ns",
		crd:  CRDRef{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster"},
		poll: 10 * time.Millisecond,
	}
	return c, client
}

func statefulSet(uid types.UID, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "vk", "namespace": "ns", "uid": string(uid), "generation": int64(1)},
		"spec":     map[string]any{"replicas": replicas},
		"status": map[string]any{"observedGeneration": int64(1), "replicas": replicas, "readyReplicas": replicas,
			"updatedReplicas": replicas, "currentRevision": "r1", "updateRevision": "r1"},
	}}
}

// TestCheckJudges: the consistency assertion holds when the ConfigMap the
// alarm names reflects the desired value, and is one violation naming what
// each field holds when it does not.
func TestCheckJudges(t *testing.T) {
	r := Reproducer{
		Name: "fake", CRD: CRDRef{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster"}, Namespace: "ns",
		Seed:   MustObject(`{"metadata": {"name": "vk"}, "spec": {"config": {"maxmemory-policy": "allkeys-lru"}}}`),
		Steps:  []Step{{Kind: model.StepApply, Desired: MustObject(`{"metadata": {"name": "vk"}, "spec": {"config": {"maxmemory-policy": "noeviction"}}}`)}},
		Oracle: "consistency", Signature: "consistency-1", Summary: "spec.config is not applied",
		// As the consistency oracle writes it: the CR's property, then where the value should show.
		Evidence: []Evidence{
			{Object: "valkey.gauntlet.dev/v1alpha1/ValkeyCluster/gauntlet-w0/vk", Path: `spec.config["maxmemory-policy"]`, Expected: "noeviction"},
			{Object: "/v1/ConfigMap/gauntlet-w0/vk-config", Path: `data["valkey.conf"]`, Expected: "noeviction", Actual: "allkeys-lru", Detail: "this field sets maxmemory-policy"},
			{Object: "apps/v1/StatefulSet/gauntlet-w0/vk", Path: "metadata.annotations.policy", Expected: "noeviction", Detail: "closest field by name"},
		},
	}
	if err := reports.ValidateGoTest(r); err != nil {
		t.Fatal(err)
	}
	a, err := reports.AssertionOf(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, buggy := range []bool{false, true} {
		t.Run(fmt.Sprintf("buggy=%v", buggy), func(t *testing.T) {
			policy := "noeviction"
			if buggy {
				policy = "allkeys-lru"
			}
			c, _ := fakeChecker(t, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "vk-config", "namespace": "ns"},
				"data":     map[string]any{"valkey.conf": "maxmemory-policy " + policy + "\n"},
			}})
			violations, err := c.check(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if buggy {
				want = 1
			}
			if len(violations) != want {
				t.Fatalf("violations %q, want %d", violations, want)
			}
			if buggy && violations[0] != `spec.config["maxmemory-policy"] = "noeviction" is reflected by none of the fields the alarm names: ConfigMap vk-config data["valkey.conf"] sets maxmemory-policy to "allkeys-lru"; StatefulSet vk metadata.annotations.policy: StatefulSet vk does not exist` {
				t.Errorf("violation %q", violations[0])
			}
		})
	}
}

// TestCleanUpHelpers: the namespace and CR deletions wait until they are gone.
func TestCleanUpHelpers(t *testing.T) {
	c, _ := fakeChecker(t, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}}},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "valkey.gauntlet.dev/v1alpha1", "kind": "ValkeyCluster", "metadata": map[string]any{"name": "vk", "namespace": "ns"}}})
	ctx := context.Background()
	if ok, err := c.namespaceExists(ctx); !ok || err != nil {
		t.Fatalf("namespaceExists = %v, %v", ok, err)
	}
	if err := c.deleteCR(ctx, "vk", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.deleteNamespace(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.namespaceExists(ctx); ok || err != nil {
		t.Fatalf("namespaceExists after deletion = %v, %v", ok, err)
	}
}

// TestCheckFieldTargets: objects the recorded run saw in its own namespace
// are read in the replay's; a value counts once one of its fields reflects
// it; a missing object is a violation, not an error.
func TestCheckFieldTargets(t *testing.T) {
	rp, _ := fakeChecker(t, statefulSet("u", 3), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "vk-config", "namespace": "ns"},
		"data":     map[string]any{"a": "b"},
	}})
	r := Reproducer{
		CRD: rp.crd, Namespace: "ns", Seed: Object{"metadata": map[string]any{"name": "vk"}}, Oracle: "consistency",
		Evidence: []model.Evidence{
			{Object: "valkey.gauntlet.dev/v1alpha1/ValkeyCluster/gauntlet-w0/vk", Path: "spec.replicas", Expected: 3},
			{Object: "/v1/ConfigMap/gauntlet-w0/vk-config", Path: "data.replicas", Expected: 3},
			{Object: "apps/v1/StatefulSet/gauntlet-w0/vk", Path: "spec.replicas", Expected: 3},
			{Object: "/v1/ConfigMap/gauntlet-w0/vk-config", Path: "data.a", Expected: "b"},
			{Object: "/v1/ConfigMap/gauntlet-w0/other", Path: "data.a", Expected: "x"},
		},
	}
	a, err := reports.AssertionOf(r)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rp.check(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	want := `the desired value "x" is reflected by none of the fields the alarm names: ConfigMap other data.a: ConfigMap other does not exist`
	if len(v) != 1 || v[0] != want {
		t.Errorf("violations %q\nwant [%q]", v, want)
	}
}

func TestOptions(t *testing.T) {
	t.Setenv("KUBECONFIG", "/env/kubeconfig")
	t.Setenv("GAUNTLET_TARGET", "/env/target.yaml")
	t.Setenv("GAUNTLET_OPERATOR_BINARY", "/env/operator")
	t.Setenv("GAUNTLET_REPO", "/env/repo")
	t.Setenv("GAUNTLET_NAMESPACE", "env-ns")
	t.Setenv("GAUNTLET_E2E_LOG", "")
	o := newOptions(nil)
	if o.kubeconfig != "/env/kubeconfig" || o.target != "/env/target.yaml" || o.operatorBin != "/env/operator" || o.repo != "/env/repo" || o.namespace != "env-ns" || o.log == nil {
		t.Errorf("from the environment: %+v", o)
	}
	o = newOptions([]Option{WithKubeconfig(""), WithTarget("valkey"), WithOperatorBinary("/opt/op"), WithRepo("/src"), WithNamespace("ns"),
		WithStateRoot("/state"), WithImageMapping("/m.yaml"), WithNodes(1)})
	if o.kubeconfig != "" || o.target != "valkey" || o.operatorBin != "/opt/op" || o.repo != "/src" || o.namespace != "ns" ||
		o.stateRoot != "/state" || o.imageMapping != "/m.yaml" || o.nodes != 1 {
		t.Errorf("options over the environment: %+v", o)
	}
	for spec, want := range map[string]bool{"valkey": true, "builtin:valkey": true, "/x/valkey.yaml": false, "": false} {
		if isBuiltin(spec) != want {
			t.Errorf("isBuiltin(%q) = %v", spec, !want)
		}
	}
	if n := clusterName(); len(n) != 11 || !strings.HasPrefix(n, "gt-") {
		t.Errorf("clusterName() = %q", n)
	}
	// This package's own source folder is in the Gauntlet repository.
	if repo := findRepo(); repo == "" {
		t.Error("findRepo found no repository")
	}
}

// TestFired: a judged replay fails on the steps whose findings carry the
// alarm's signature, never on the seed's, and names their evidence.
func TestFired(t *testing.T) {
	sb := model.Finding{Oracle: "split-brain", Signature: "split-brain-label", Summary: "split brain: vk-0 and vk-1 were labelled primary at once",
		Evidence: []model.Evidence{{Object: "/v1/Pod/ns/vk-0", Path: "metadata.labels[\"role\"]", Actual: "primary"}}}
	out := &campaign.ReplayOutcome{Steps: []*campaign.StepRecord{
		{Step: model.Step{Kind: model.StepSeed}, Findings: []model.Finding{sb}},
		{Step: model.Step{Kind: model.StepFault}, Findings: []model.Finding{{Oracle: "health", Signature: "health-1"}, sb}},
	}}
	got := fired(out, "split-brain-label")
	want := "step 1 (fault): the split-brain oracle raised split-brain-label: split brain: vk-0 and vk-1 were labelled primary at once\n      /v1/Pod/ns/vk-0 metadata.labels[\"role\"] actual primary"
	if len(got) != 1 || got[0] != want {
		t.Errorf("fired = %q\nwant [%q]", got, want)
	}
	if got := fired(out, "durability-1"); len(got) != 0 {
		t.Errorf("another signature: %q", got)
	}
}
