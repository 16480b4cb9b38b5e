package testkit

import (
	"context"
	"encoding/json"
	"errors"
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
	k8stesting "k8s.io/client-go/testing"

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

func TestConverged(t *testing.T) {
	q, s := 5*time.Second, 30*time.Second
	tests := []struct {
		quiet    time.Duration
		notReady []string
		genOK    bool
		want     convergence
	}{
		{10 * time.Second, nil, true, stateConverged},
		{time.Second, nil, true, stateWaiting},
		{time.Hour, nil, false, stateWaiting},
		{10 * time.Second, []string{"pod vk-0: not ready"}, true, stateWaiting},
		{31 * time.Second, []string{"pod vk-0: not ready"}, true, stateSettled},
	}
	for _, tc := range tests {
		if got := converged(tc.quiet, q, s, tc.notReady, tc.genOK); got != tc.want {
			t.Errorf("converged(%v, %v, %v) = %v, want %v", tc.quiet, tc.notReady, tc.genOK, got, tc.want)
		}
	}
}

func TestUnreplayableAndBudget(t *testing.T) {
	steps := []Object{{"metadata": map[string]any{"name": "vk"}}, {"metadata": map[string]any{"name": "vk"}}}
	r := Reproducer{Steps: steps, ConvergeTimeout: time.Minute, ReplayDir: "results/alarms/3", Faults: map[int][]Fault{
		1: {{Kind: PodKill, Pods: []string{"vk-0", "vk-1"}}},
	}}
	if msg := unreplayable(r); msg != "" {
		t.Errorf("pod kills only: %q", msg)
	}
	// 2 steps + 2, then 2 pods + 3 for the kill.
	if got := replayBudget(r); got != 9*time.Minute {
		t.Errorf("replayBudget = %v, want 9m", got)
	}
	r.Faults[0] = []Fault{{Kind: "partition", Pods: []string{"vk-1"}}, {Kind: "operator-crash", Before: true}}
	want := "this reproducer needs the faults partition and operator-crash, which the test kit cannot inject (it replays pod kills only): replay it with `gauntlet reproduce results/alarms/3`"
	if msg := unreplayable(r); msg != want {
		t.Errorf("unreplayable = %q\nwant %q", msg, want)
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
}

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	stsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	cmGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	vkGVR   = schema.GroupVersionResource{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Resource: "valkeyclusters"}
)

// fakeReplayer is a replayer on a fake dynamic client with a REST mapper for
// pods, StatefulSets, ConfigMaps and ValkeyClusters.
func fakeReplayer(t *testing.T, objs ...runtime.Object) (*replayer, *fake.FakeDynamicClient) {
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
	rp := &replayer{
		client: client, mapper: mapper, namespace: "ns",
		crd:      reports.CRDRef{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster"},
		converge: 2 * time.Second, quiet: 30 * time.Millisecond, settle: 200 * time.Millisecond,
		logf: t.Logf, applied: map[string]bool{}, poll: 10 * time.Millisecond,
		watched: []resource{{podsGVR, "Pod"}, {stsGVR, "StatefulSet"}, {cmGVR, "ConfigMap"}, {vkGVR, "ValkeyCluster"}},
	}
	return rp, client
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

// TestKillBookkeeping follows a pod-kill: the pod is deleted once it exists,
// its controller's ready pods are counted, and it counts as replaced only once
// a new pod (another UID) under its name is Running and Ready — or, when it
// does not come back under its name, once the controller has its replicas.
func TestKillBookkeeping(t *testing.T) {
	ctx := context.Background()
	const owner = types.UID("sts-uid")
	rp, client := fakeReplayer(t, statefulSet(owner, 2),
		pod("vk-0", "old-0", "Running", true, 0, owner), pod("vk-1", "u1", "Running", true, 0, owner))
	var deleted []string
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
		return false, nil, nil
	})
	killed, err := rp.killPods(ctx, 1, []string{"vk-0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0].uid != "old-0" || killed[0].owner == nil || killed[0].owner.UID != owner || killed[0].readyBefore != 2 {
		t.Fatalf("kill record %+v", killed)
	}
	if strings.Join(deleted, ",") != "vk-0" {
		t.Fatalf("deleted %v, want vk-0", deleted)
	}
	// Gone, not recreated: the StatefulSet has 1 of 2 pods ready.
	if why := rp.replaced(ctx, killed[0]); why != "is not recreated: its controller StatefulSet vk has 1 of 2 pods Running and Ready" {
		t.Errorf("replaced after the delete: %q", why)
	}
	pods := client.Resource(podsGVR).Namespace("ns")
	steps := []struct {
		pod  *unstructured.Unstructured
		want string
	}{
		{pod("vk-0", "old-0", "Running", true, 0, owner), "is still terminating"},
		{pod("vk-0", "new-0", "Pending", false, 0, owner), "was recreated but is not Running and Ready (phase Pending)"},
		{pod("vk-0", "new-0", "Running", true, 0, owner), ""},
	}
	for _, s := range steps {
		_ = pods.Delete(ctx, "vk-0", metav1.DeleteOptions{})
		if _, err := pods.Create(ctx, s.pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if why := rp.replaced(ctx, killed[0]); why != s.want {
			t.Errorf("pod uid %s phase %v: replaced = %q, want %q", s.pod.GetUID(), s.pod.Object["status"].(map[string]any)["phase"], why, s.want)
		}
	}
	if err := rp.waitReplaced(ctx, 1, killed); err != nil {
		t.Errorf("waitReplaced: %v", err)
	}
	// A pod that never shows up: the replay says the fault does not match.
	rp.converge = 100 * time.Millisecond
	if _, err := rp.killPods(ctx, 2, []string{"vk-9"}); err == nil || !strings.Contains(err.Error(), "pod vk-9, which the recorded run's pod-kill fault hit, is not running") {
		t.Errorf("killPods of a missing pod: %v", err)
	}
	// A controller scaled away wants no pods: the kill counts as replaced once the pod is gone.
	_ = pods.Delete(ctx, "vk-1", metav1.DeleteOptions{})
	if n, err := rp.wantedReplicas(ctx, killed[0].owner); err != nil || n != 2 {
		t.Errorf("wantedReplicas = %d, %v; want 2", n, err)
	}
	if err := client.Resource(stsGVR).Namespace("ns").Delete(ctx, "vk", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := rp.wantedReplicas(ctx, killed[0].owner); err != nil || n != 0 {
		t.Errorf("wantedReplicas of a deleted controller = %d, %v; want 0", n, err)
	}
}

// TestReplayJudges replays a two-step reproducer on a fake API server whose
// "operator" (a reactor on apply) writes the ConfigMap from the CR, with or
// without the seeded bug (an operator default overruling the user's
// maxmemory-policy), and judges it with the alarm's field assertion.
func TestReplayJudges(t *testing.T) {
	r := Reproducer{
		Name: "fake", CRD: CRDRef{Group: "valkey.gauntlet.dev", Version: "v1alpha1", Kind: "ValkeyCluster"}, Namespace: "ns",
		Steps: []Object{
			MustObject(`{"metadata": {"name": "vk"}, "spec": {"config": {"maxmemory-policy": "allkeys-lru"}}}`),
			MustObject(`{"metadata": {"name": "vk"}, "spec": {"config": {"maxmemory-policy": "noeviction"}}}`),
		},
		Oracle: "consistency", Signature: "consistency-1", Summary: "spec.config is not applied",
		// As the consistency oracle writes it: the CR's property, then where the value should show.
		Evidence: []Evidence{
			{Object: "valkey.gauntlet.dev/v1alpha1/ValkeyCluster/gauntlet-w0/vk", Path: `spec.config["maxmemory-policy"]`, Expected: "noeviction"},
			{Object: "/v1/ConfigMap/gauntlet-w0/vk-config", Path: `data["valkey.conf"]`, Expected: "noeviction", Actual: "allkeys-lru", Detail: "this field sets maxmemory-policy"},
			{Object: "apps/v1/StatefulSet/gauntlet-w0/vk", Path: "metadata.annotations.policy", Expected: "noeviction", Detail: "closest field by name"},
		},
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := r.Assertion()
	if err != nil {
		t.Fatal(err)
	}
	for _, buggy := range []bool{false, true} {
		t.Run(fmt.Sprintf("buggy=%v", buggy), func(t *testing.T) {
			ctx := context.Background()
			rp, client := fakeReplayer(t)
			gen := int64(0)
			client.PrependReactor("patch", "valkeyclusters", func(a k8stesting.Action) (bool, runtime.Object, error) {
				pa := a.(k8stesting.PatchAction)
				if pa.GetPatchType() != types.ApplyPatchType {
					return false, nil, nil
				}
				var cr map[string]any
				if err := json.Unmarshal(pa.GetPatch(), &cr); err != nil {
					return true, nil, err
				}
				gen++
				u := &unstructured.Unstructured{Object: cr}
				u.SetGeneration(gen)
				policy, _, _ := unstructured.NestedString(cr, "spec", "config", "maxmemory-policy")
				if buggy {
					policy = "allkeys-lru"
				}
				cm := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "vk-config", "namespace": "ns"},
					"data":     map[string]any{"valkey.conf": "maxmemory-policy " + policy + "\n"},
				}}
				cms := client.Tracker()
				if err := cms.Delete(cmGVR, "ns", "vk-config"); err != nil && !strings.Contains(err.Error(), "not found") {
					return true, nil, err
				}
				if err := cms.Create(cmGVR, cm, "ns"); err != nil {
					return true, nil, err
				}
				return true, u, nil
			})
			if _, err := rp.ensureNamespace(ctx); err != nil {
				t.Fatal(err)
			}
			for i, s := range r.Steps {
				if _, err := rp.step(ctx, i, s, false, nil); err != nil {
					t.Fatal(err)
				}
			}
			violations, err := rp.check(ctx, a)
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

// TestWaitConvergedTimeout: a CR whose status lags its generation never converges.
func TestWaitConvergedTimeout(t *testing.T) {
	rp, _ := fakeReplayer(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "valkey.gauntlet.dev/v1alpha1", "kind": "ValkeyCluster",
		"metadata": map[string]any{"name": "vk", "namespace": "ns", "generation": int64(2)},
		"status":   map[string]any{"observedGeneration": int64(1)},
	}})
	rp.converge = 100 * time.Millisecond
	err := rp.waitConverged(context.Background(), 3, "vk", 2)
	if err == nil || !strings.Contains(err.Error(), "step 3: ValkeyCluster vk did not converge within 100ms (observedGeneration 1, want 2") {
		t.Fatalf("waitConverged = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rp.converge = time.Hour
	if err := rp.waitConverged(ctx, 3, "vk", 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("waitConverged with a cancelled context = %v", err)
	}
}

// TestCheckFieldTargets: objects the recorded run saw in its own namespace
// are read in the replay's; a value counts once one of its fields reflects
// it; a missing object is a violation, not an error.
func TestCheckFieldTargets(t *testing.T) {
	rp, _ := fakeReplayer(t, statefulSet("u", 3), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "vk-config", "namespace": "ns"},
		"data":     map[string]any{"a": "b"},
	}})
	r := Reproducer{
		CRD: rp.crd, Namespace: "ns", Steps: []Object{{"metadata": map[string]any{"name": "vk"}}}, Oracle: "consistency",
		Evidence: []model.Evidence{
			{Object: "valkey.gauntlet.dev/v1alpha1/ValkeyCluster/gauntlet-w0/vk", Path: "spec.replicas", Expected: 3},
			{Object: "/v1/ConfigMap/gauntlet-w0/vk-config", Path: "data.replicas", Expected: 3},
			{Object: "apps/v1/StatefulSet/gauntlet-w0/vk", Path: "spec.replicas", Expected: 3},
			{Object: "/v1/ConfigMap/gauntlet-w0/vk-config", Path: "data.a", Expected: "b"},
			{Object: "/v1/ConfigMap/gauntlet-w0/other", Path: "data.a", Expected: "x"},
		},
	}
	a, err := r.Assertion()
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
