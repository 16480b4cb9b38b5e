package inputgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
)

// TestWrapCore checks the smallest object each core type is wrapped in: its kind, where the value
// sits, and what the wrapper completes around it.
func TestWrapCore(t *testing.T) {
	site := func(typ string, fields ...string) coreSite {
		s := coreSite{typ: typ, name: "x", fields: map[string]bool{}}
		for _, f := range fields {
			s.fields[f] = true
		}
		return s
	}
	tests := []struct {
		name  string
		site  coreSite
		value map[string]any
		kind  string
		at    string
		// want are values at JSON pointers of the wrapped object (nil: absent).
		want map[string]any
	}{
		{"container keeps what it sets", site(coreV1+"Container", "name", "image"), map[string]any{"name": "side"},
			"Pod", "spec.containers[0]", map[string]any{"/spec/containers/0/name": "side", "/spec/containers/0/image": nil}},
		{"container the CRD cannot name is the operator's", site(coreV1+"Container", "image", "args"), map[string]any{"args": []any{"-v"}},
			"Pod", "spec.containers[0]", map[string]any{"/spec/containers/0/name": coreContainer, "/spec/containers/0/image": coreImage}},
		{"init container by its list's name", coreSite{typ: coreV1 + "Container", name: "initContainers", list: "initContainers", fields: map[string]bool{"name": true, "image": true}},
			map[string]any{"name": "init", "image": "busybox"},
			"Pod", "spec.initContainers[0]", map[string]any{"/spec/initContainers/0/name": "init", "/spec/containers/0/image": coreImage}},
		{"volume mount declares its volume", site(coreV1 + "VolumeMount"), map[string]any{"name": "data", "mountPath": "/data"},
			"Pod", "spec.containers[0].volumeMounts[0]", map[string]any{"/spec/volumes/0/name": "data", "/spec/volumes/0/emptyDir": map[string]any{}}},
		{"resource claims are declared in the pod", site(coreV1 + "ResourceRequirements"), map[string]any{"claims": []any{map[string]any{"name": "gpu"}}},
			"Pod", "spec.containers[0].resources", map[string]any{"/spec/resourceClaims/0/name": "gpu"}},
		{"liveness probe by name", coreSite{typ: coreV1 + "Probe", name: "livenessProbe", fields: map[string]bool{"periodSeconds": true}}, map[string]any{"periodSeconds": int64(5)},
			"Pod", "spec.containers[0].livenessProbe", map[string]any{"/spec/containers/0/livenessProbe/tcpSocket/port": int64(8080)}},
		{"probe whose CRD has handlers keeps none", coreSite{typ: coreV1 + "Probe", name: "probe", fields: map[string]bool{"exec": true}}, map[string]any{"periodSeconds": int64(5)},
			"Pod", "spec.containers[0].readinessProbe", map[string]any{"/spec/containers/0/readinessProbe/tcpSocket": nil}},
		{"toleration", site(coreV1 + "Toleration"), map[string]any{"operator": "Exists"},
			"Pod", "spec.tolerations[0]", map[string]any{"/spec/tolerations/0/operator": "Exists", "/spec/containers/0/image": coreImage}},
		{"node selector requirement", site(coreV1 + "NodeSelectorRequirement"), map[string]any{"key": "k", "operator": "In"},
			"Pod", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]",
			map[string]any{"/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/key": "k"}},
		{"env source gets a variable name", site(coreV1 + "SecretKeySelector"), map[string]any{"name": "s", "key": "k"},
			"Pod", "spec.containers[0].env[0].valueFrom.secretKeyRef", map[string]any{"/spec/containers/0/env/0/name": "GAUNTLET_VALUE"}},
		{"key-to-path item gets a volume", site(coreV1 + "KeyToPath"), map[string]any{"key": "k", "path": "p"},
			"Pod", "spec.volumes[0].configMap.items[0]", map[string]any{"/spec/volumes/0/name": coreContainer, "/spec/volumes/0/configMap/name": coreContainer}},
		{"pod spec without containers", site(coreV1 + "PodSpec"), map[string]any{"hostNetwork": true},
			"Pod", "spec", map[string]any{"/spec/containers/0/name": coreContainer}},
		{"pod template in a Deployment", site(coreV1 + "PodTemplateSpec"), map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}},
			"Deployment", "spec.template", map[string]any{"/spec/selector/matchLabels/" + strings.ReplaceAll(coreLabel, "/", "~1"): "x",
				"/spec/template/metadata/labels/a": "b", "/spec/template/metadata/labels/" + strings.ReplaceAll(coreLabel, "/", "~1"): "x"}},
		{"statefulset spec: its selector labels the template, claim templates are volumes", site(appsV1 + "StatefulSetSpec"),
			map[string]any{"selector": map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"q"}}}},
				"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}},
				"template":             map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i", "volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/d"}}}}}}},
			"StatefulSet", "spec", map[string]any{"/spec/template/metadata/labels/app": "q", "/spec/template/spec/volumes": nil}},
		{"pvc template keeps labels, not its name", site(coreV1 + "PersistentVolumeClaim"),
			map[string]any{"metadata": map[string]any{"name": "data", "labels": map[string]any{"a": "b"}}, "spec": map[string]any{}},
			"PersistentVolumeClaim", "", map[string]any{"/metadata/name": coreName, "/metadata/labels/a": "b", "/apiVersion": "v1"}},
		{"pvc spec", site(coreV1 + "PersistentVolumeClaimSpec"), map[string]any{"accessModes": []any{"ReadWriteOnce"}},
			"PersistentVolumeClaim", "spec", map[string]any{"/spec/accessModes/0": "ReadWriteOnce"}},
		{"service spec gets a port", site(coreV1 + "ServiceSpec"), map[string]any{"type": "ClusterIP"},
			"Service", "spec", map[string]any{"/spec/ports/0/port": int64(8080)}},
		{"service spec keeps its ports", site(coreV1 + "ServiceSpec"), map[string]any{"ports": []any{map[string]any{"port": int64(0)}}},
			"Service", "spec", map[string]any{"/spec/ports/0/port": int64(0), "/spec/ports/1": nil}},
		{"service port", site(coreV1 + "ServicePort"), map[string]any{"port": int64(80), "targetPort": "20%"},
			"Service", "spec.ports[0]", map[string]any{"/spec/ports/0/targetPort": "20%"}},
		{"label selector in a PodDisruptionBudget", site(metaV1 + "LabelSelector"), map[string]any{"matchLabels": map[string]any{"a": "b"}},
			"PodDisruptionBudget", "spec.selector", map[string]any{"/spec/selector/matchLabels/a": "b", "/apiVersion": "policy/v1"}},
		{"rolling update of a StatefulSet", site(appsV1 + "RollingUpdateStatefulSetStrategy"), map[string]any{"partition": int64(1)},
			"StatefulSet", "spec.updateStrategy.rollingUpdate", map[string]any{"/spec/updateStrategy/type": "RollingUpdate", "/spec/template/spec/containers/0/image": coreImage}},
		{"object meta keeps labels and annotations only", site(metaV1 + "ObjectMeta"), map[string]any{"name": "BAD NAME", "labels": map[string]any{"a": "b"}},
			"Pod", "metadata", map[string]any{"/metadata/name": coreName, "/metadata/labels/a": "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := jsonv.CopyMap(tc.value)
			o, ok := wrapCore(tc.site, tc.value)
			if !ok {
				t.Fatal("not wrapped")
			}
			if !jsonv.Equal(before, tc.value) {
				t.Error("wrapCore modified its value")
			}
			if o.obj["kind"] != tc.kind || o.at != tc.at {
				t.Errorf("wrapped as %v at %q, want %s at %q", o.obj["kind"], o.at, tc.kind, tc.at)
			}
			if md, _ := o.obj["metadata"].(map[string]any); md["name"] != coreName {
				t.Errorf("metadata.name %v, want %s", md["name"], coreName)
			}
			for ptr, want := range tc.want {
				got, ok := jsonv.Get(o.obj, ptr)
				switch {
				case want == nil && ok:
					t.Errorf("%s = %v, want it absent", ptr, compactJSON(got))
				case want != nil && !jsonv.Equal(got, want):
					t.Errorf("%s = %v, want %v (object %s)", ptr, compactJSON(got), compactJSON(want), compactJSON(o.obj))
				}
			}
		})
	}
	// Every listed type wraps; a bare object reference means nothing on its own.
	for _, typ := range coreTypes() {
		if _, ok := wrapCore(coreSite{typ: typ}, map[string]any{}); !ok {
			t.Errorf("%s is not wrapped", typ)
		}
	}
	if _, ok := wrapCore(coreSite{typ: coreV1 + "ObjectReference"}, map[string]any{"name": "x"}); ok {
		t.Error("an ObjectReference was wrapped")
	}
}

// countingValidator refuses objects whose JSON contains refuse and counts the calls it answers.
type countingValidator struct {
	refuse string
	calls  atomic.Int64
	// fail makes the first calls fail (a server that cannot be asked).
	fail atomic.Int64
	gate chan struct{}
}

func (v *countingValidator) Validate(ctx context.Context, obj map[string]any) (string, error) {
	if v.gate != nil {
		<-v.gate
	}
	v.calls.Add(1)
	if v.fail.Add(-1) >= 0 {
		return "", errors.New("connection refused")
	}
	if strings.Contains(compactJSON(obj), v.refuse) {
		return "spec: Forbidden: " + v.refuse, nil
	}
	return "", nil
}

// TestCoreCache checks that verdicts are cached by the object's canonical JSON, that concurrent
// requests for one object share a call, and that failures to ask are not cached.
func TestCoreCache(t *testing.T) {
	ctx := context.Background()
	v := &countingValidator{refuse: "bad"}
	c := newCoreCache(v)
	a := map[string]any{"kind": "Pod", "spec": map[string]any{"x": "bad", "y": int64(1)}}
	b := map[string]any{"spec": map[string]any{"y": 1, "x": "bad"}, "kind": "Pod"} // same JSON
	for _, o := range []map[string]any{a, b, a} {
		r, err := c.validate(ctx, o)
		if err != nil || r != "spec: Forbidden: bad" {
			t.Fatalf("verdict %q, %v", r, err)
		}
	}
	if n := v.calls.Load(); n != 1 {
		t.Errorf("%d calls for one object, want 1", n)
	}
	if h := c.hits.Load(); h != 2 {
		t.Errorf("%d cache hits, want 2", h)
	}
	// Concurrent requests for a new object: one call.
	v.gate = make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			if r, err := c.validate(ctx, map[string]any{"kind": "Pod", "n": 2}); err != nil || r != "" {
				t.Errorf("verdict %q, %v", r, err)
			}
		})
	}
	close(v.gate)
	wg.Wait()
	if n := v.calls.Load(); n != 2 {
		t.Errorf("%d calls after 8 concurrent requests for one new object, want 2 in all", n)
	}
	// A failure is returned, not remembered.
	v.gate = nil
	v.fail.Store(1)
	o := map[string]any{"kind": "Pod", "n": 3}
	if _, err := c.validate(ctx, o); err == nil {
		t.Fatal("a failure to ask was not returned")
	}
	if r, err := c.validate(ctx, o); err != nil || r != "" {
		t.Fatalf("after a failure: %q, %v", r, err)
	}
	if n := v.calls.Load(); n != 4 {
		t.Errorf("%d calls, want 4 (the failed one asked again)", n)
	}
}

// TestRebase checks that the wrapper's field paths in the server's causes become the CRD's.
func TestRebase(t *testing.T) {
	for _, tc := range []struct{ cause, at, path, want string }{
		{"spec.containers[0].image: Required value", "spec.containers[0]", "spec.sidecars[2]", "spec.sidecars[2].image: Required value"},
		{"spec.template.spec.restartPolicy: Unsupported value", "spec", "spec.sts.spec", "spec.sts.spec.template.spec.restartPolicy: Unsupported value"},
		{`strict decoding error: unknown field "spec.selector.foo"`, "spec.selector", "spec.pdb.selector", `strict decoding error: unknown field "spec.pdb.selector.foo"`},
		{"spec.accessModes: Required value", "", "spec.claims[0]", "spec.claims[0].spec.accessModes: Required value"},
		{"metadata.name: Invalid value", "spec", "spec.x", "metadata.name: Invalid value"},
		{"spec.containersX: odd", "spec.containers", "spec.c", "spec.containersX: odd"},
	} {
		if got := rebase(tc.cause, tc.at, tc.path); got != tc.want {
			t.Errorf("rebase(%q, %q, %q) = %q, want %q", tc.cause, tc.at, tc.path, got, tc.want)
		}
	}
}

// ruleServer stands in for a few of the API server's rules on the objects wrapCore builds: a
// container needs an image; a toleration with operator Exists takes no value and an empty key needs
// Exists; a selector requirement with In or NotIn needs values, with Exists or DoesNotExist none.
// Generation keeps those itself (corefields.go); one rule it does not know stands for a cluster's
// admission policy: containers keep their image's arguments and the cluster's pull policy (no
// args, no imagePullPolicy).
type ruleServer struct{ calls atomic.Int64 }

func (s *ruleServer) Validate(_ context.Context, obj map[string]any) (string, error) {
	s.calls.Add(1)
	var causes []string
	list := func(ptr string) []map[string]any {
		v, _ := jsonv.Get(obj, ptr)
		l, _ := v.([]any)
		var out []map[string]any
		for _, e := range l {
			m, _ := e.(map[string]any)
			out = append(out, m)
		}
		return out
	}
	for i, c := range list("/spec/containers") {
		if img, _ := c["image"].(string); img == "" {
			causes = append(causes, fmt.Sprintf("spec.containers[%d].image: Required value", i))
		}
		if _, set := c["args"]; set {
			causes = append(causes, fmt.Sprintf("spec.containers[%d].args: Forbidden: denied by admission policy", i))
		}
		if _, set := c["imagePullPolicy"]; set {
			causes = append(causes, fmt.Sprintf("spec.containers[%d].imagePullPolicy: Forbidden: denied by admission policy", i))
		}
	}
	for i, tol := range list("/spec/tolerations") {
		op, _ := tol["operator"].(string)
		key, _ := tol["key"].(string)
		val, _ := tol["value"].(string)
		f := fmt.Sprintf("spec.tolerations[%d].operator", i)
		switch {
		case op != "" && op != "Exists" && op != "Equal":
			causes = append(causes, fmt.Sprintf(`%s: Unsupported value: %q: supported values: "Equal", "Exists"`, f, op))
		case op == "Exists" && val != "":
			causes = append(causes, fmt.Sprintf(`%s: Invalid value: %q: value must be empty when `+"`operator`"+` is 'Exists'`, f, op))
		case key == "" && op != "Exists":
			causes = append(causes, fmt.Sprintf(`%s: Invalid value: %q: operator must be Exists when `+"`key`"+` is empty`, f, op))
		}
	}
	for i, e := range list("/spec/selector/matchExpressions") {
		vals, _ := e["values"].([]any)
		f := fmt.Sprintf("spec.selector.matchExpressions[%d]", i)
		switch e["operator"] {
		case "In", "NotIn":
			if len(vals) == 0 {
				causes = append(causes, f+".values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
			}
		case "Exists", "DoesNotExist":
			if len(vals) > 0 {
				causes = append(causes, f+".values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
			}
		default:
			causes = append(causes, fmt.Sprintf(`%s.operator: Unsupported value: %q: supported values: "DoesNotExist", "Exists", "In", "NotIn"`, f, e["operator"]))
		}
	}
	sort.Strings(causes)
	return strings.Join(causes, "; "), nil
}

// TestCoreRelabel generates a plan for a CRD with sidecar containers, tolerations and a label
// selector against rules of the API server its schema does not carry: without the judgement some
// valid test cases break them; with it none does, refused values are repaired from the causes or
// the test case becomes a misoperation whose description gives the server's reason (the
// convention of in-object references), coverage is unchanged, and the plan stays deterministic.
func TestCoreRelabel(t *testing.T) {
	s, seed, examples := loadCoreCase(t, "core", map[string]string{
		"spec.sidecars[*]":    coreV1 + "Container",
		"spec.tolerations[*]": coreV1 + "Toleration",
		"spec.selector":       metaV1 + "LabelSelector",
	})
	ctx := context.Background()
	judge := newCoreCache(&ruleServer{})
	refused := func(plan *Plan) (n int, first string) {
		for _, tc := range plan.TestCases {
			if tc.Label != Valid {
				continue
			}
			r, err := coreRefusal(ctx, judge, s, plan.Base, plan.States(tc.ID))
			if err != nil {
				t.Fatal(err)
			}
			if r != nil {
				if n == 0 {
					first = tc.ID + ": " + r.String()
				}
				n++
			}
		}
		return n, first
	}
	plain, err := mustGenerator(t, s, seed, Options{Seed: 3, Examples: examples}).Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := refused(plain); n == 0 {
		t.Fatal("no valid test case breaks the rules without the judgement: the test proves nothing")
	}
	render := func(workers int) (*Plan, []byte) {
		plan, err := mustGenerator(t, s, seed, Options{Seed: 3, Examples: examples, CoreValidator: &ruleServer{}, Workers: workers}).Plan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := plan.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		return plan, buf.Bytes()
	}
	plan, one := render(1)
	if _, four := render(4); !bytes.Equal(one, four) {
		t.Error("same seed, different plans with 1 and 4 workers")
	}
	if n, first := refused(plan); n > 0 {
		t.Errorf("%d valid test cases still break the server's rules, first %s", n, first)
	}
	st := plan.Stats.Core
	if st == nil || st.Checked == 0 || st.Misoperation == 0 || st.Repaired == 0 {
		t.Fatalf("core stats %+v: want checks, repairs and misoperations", st)
	}
	var misops, repaired int
	for _, tc := range plan.TestCases {
		_, why, isMisop := strings.Cut(tc.Description, misoperationMarker)
		if isMisop && strings.Contains(why, "is refused by the API server: ") {
			misops++
			if tc.Label != Misoperation {
				t.Errorf("%s: a refusal in the description of a %s test case", tc.ID, tc.Label)
			}
		}
		if strings.Contains(tc.Description, "(as the API server requires: ") {
			repaired++
			if tc.Label != Valid {
				t.Errorf("%s: repaired but %s", tc.ID, tc.Label)
			}
		}
	}
	if misops != st.Misoperation || repaired == 0 {
		t.Errorf("%d misoperations with the server's reason (stats say %d), %d repaired descriptions", misops, st.Misoperation, repaired)
	}
	if plan.Stats.Coverage != plain.Stats.Coverage {
		t.Errorf("coverage %.3f with the judgement, %.3f without", plan.Stats.Coverage, plain.Stats.Coverage)
	}
	// Known outcomes of this seed: a change the server refuses is labelled, not undone; what it
	// refuses around a change is repaired. Generation itself keeps a toleration's value and a
	// requirement's values consistent with the operator it sets (corefields.go).
	for _, want := range []struct {
		id    string
		label Label
		desc  string
	}{
		{"spec.tolerations[*].operator#string/pool", Valid, "(as Kubernetes requires: removing /spec/tolerations/0/value)"},
		{"spec.sidecars[*].image#scalar/remove", Misoperation, misoperationMarker + "Kubernetes requires /spec/sidecars/0/image"},
		{"spec.selector.matchExpressions[*].operator#string/pool", Valid, "(as Kubernetes requires: setting /spec/selector/matchExpressions/0/values to "},
	} {
		tc := plan.TestCase(want.id)
		if tc == nil {
			t.Errorf("no test case %s", want.id)
			continue
		}
		if tc.Label != want.label || !strings.Contains(tc.Description, want.desc) {
			t.Errorf("%s: %s %q, want %s containing %q", want.id, tc.Label, tc.Description, want.label, want.desc)
		}
	}
}

// loadCoreCase loads a test case (loadCase), runs semantic inference on its schema and fails
// unless every path of roots is a core root of the type given.
func loadCoreCase(t *testing.T, name string, roots map[string]string) (*crd.Schema, map[string]any, []map[string]any) {
	t.Helper()
	s, seed, examples := loadCase(t, name)
	annotate(s)
	for path, want := range roots {
		if p := s.Lookup(path); p == nil || !isCoreRoot(p) || p.Semantic.Type != want {
			t.Fatalf("%s is not a core root of type %s", path, want)
		}
	}
	return s, seed, examples
}

func mustGenerator(t *testing.T, s *crd.Schema, seed map[string]any, opts Options) *Generator {
	t.Helper()
	g, err := NewGenerator(s, seed, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// probeServer stands in for the API server's rule on probes: a container's probe needs exactly one
// handler ("must specify a handler type", at the probe), and a container an image.
type probeServer struct{}

func (probeServer) Validate(_ context.Context, obj map[string]any) (string, error) {
	var causes []string
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := jsonv.Get(obj, "/spec/"+list)
		l, _ := cs.([]any)
		for i, e := range l {
			c, _ := e.(map[string]any)
			if img, _ := c["image"].(string); img == "" {
				causes = append(causes, fmt.Sprintf("spec.%s[%d].image: Required value", list, i))
			}
			for _, kind := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
				p, set := c[kind].(map[string]any)
				if set && !hasAny(p, probeHandlers) {
					causes = append(causes, fmt.Sprintf("spec.%s[%d].%s: Required value: must specify a handler type", list, i, kind))
				}
			}
		}
	}
	sort.Strings(causes)
	return strings.Join(causes, "; "), nil
}

// TestCoreOperatorCompletes checks that a required value the CRD's schema gives the user no field
// for is the operator's to complete, in generation's judgement and in the measurement alike
// (both judge through coreRefusal): a sidecar whose probe type carries only timings (the operator
// brings the handler, as Strimzi's tlsSidecar and ZooKeeper's probes do) is not refused for
// lacking a handler, while a probe whose schema declares a handler still is.
func TestCoreOperatorCompletes(t *testing.T) {
	s, seed, _ := loadCoreCase(t, "probes", map[string]string{"spec.sidecar": coreV1 + "Container", "spec.exporter": coreV1 + "Container"})
	ctx := context.Background()
	for _, path := range []string{"spec.sidecar.livenessProbe", "spec.exporter.readinessProbe"} {
		if p := s.Lookup(path); p == nil || p.Semantic == nil || p.Semantic.Root != p.Parent.Path.String() || oneOfGroup(p) == nil {
			t.Fatalf("%s is not a probe of its container", path)
		}
	}

	for _, tc := range []struct {
		at, cause string
		want      bool
	}{
		{"spec.sidecar", "spec.sidecar.livenessProbe: Required value: must specify a handler type", true},
		{"spec.exporter", "spec.exporter.readinessProbe: Required value: must specify a handler type", false},
		{"spec.sidecar", "spec.sidecar.name: Required value", true},
		{"spec.exporter", "spec.exporter.name: Required value", false},
		{"spec.sidecar", "spec.sidecar.livenessProbe.periodSeconds: Invalid value: 0: must be greater than 0", false},
		{"spec.sidecar", "spec.exporter.ports: Required value", false},
		{"spec.sidecar", "metadata.name: Required value", false},
		{"spec.sidecar", "spec.sidecarX.name: Required value", false},
	} {
		if got := operatorCompletes(s, tc.at, tc.cause); got != tc.want {
			t.Errorf("operatorCompletes(%q, %q) = %v, want %v", tc.at, tc.cause, got, tc.want)
		}
	}

	judge := newCoreCache(probeServer{})
	with := func(ptr string, v any) map[string]any {
		st := jsonv.CopyMap(seed)
		if err := jsonv.Set(st, ptr, v); err != nil {
			t.Fatal(err)
		}
		return st
	}
	timing := map[string]any{"periodSeconds": int64(5)}
	if r, err := coreRefusal(ctx, judge, s, seed, []map[string]any{with("/spec/sidecar/livenessProbe", timing)}); err != nil || r != nil {
		t.Errorf("a timing-only probe of the sidecar: refused %v, %v; want accepted (the operator brings the handler)", r, err)
	}
	r, err := coreRefusal(ctx, judge, s, seed, []map[string]any{with("/spec/exporter/readinessProbe", timing)})
	if err != nil || r == nil || !strings.Contains(r.String(), "spec.exporter.readinessProbe: Required value: must specify a handler type") {
		t.Errorf("a probe without handler whose schema declares exec: %v, %v; want refused for the handler", r, err)
	}

	// Generation keeps the sidecar's probe cases valid; the measurement accepts them.
	plan, err := mustGenerator(t, s, seed, Options{Seed: 1, CoreValidator: probeServer{}}).Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	probes := 0
	for _, tc := range plan.TestCases {
		if !strings.HasPrefix(tc.ID, "spec.sidecar.livenessProbe") && !strings.HasPrefix(tc.ID, "spec.sidecar.readinessProbe") {
			continue
		}
		if strings.Contains(tc.Description, "handler type") {
			t.Errorf("%s [%s]: %s", tc.ID, tc.Label, tc.Description)
		}
		if tc.Label != Valid {
			continue
		}
		probes++
		if r, err := coreRefusal(ctx, judge, s, plan.Base, plan.States(tc.ID)); err != nil || r != nil {
			t.Errorf("%s: refused %v, %v", tc.ID, r, err)
		}
	}
	if probes == 0 {
		t.Fatal("no valid test case sets the sidecar's probes: the test proves nothing")
	}
}
