package inputgen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestE2ECoreValidation starts the dry-run validator (etcd and kube-apiserver from the pinned
// control plane) and checks that values the API server refuses are refused with its reason and
// values it accepts are accepted, once wrapped as generation wraps them; then that a plan for a
// shared CRD generated with the validator has every valid test case accepted by the server.
func TestE2ECoreValidation(t *testing.T) {
	testenv.SkipShort(t)
	srv := startAPICheck(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cache := newCoreCache(srv)
	site := func(typ string, fields ...string) coreSite {
		s := coreSite{typ: typ, name: "x", fields: map[string]bool{}}
		for _, f := range fields {
			s.fields[f] = true
		}
		return s
	}
	container := site(coreV1+"Container", "name", "image", "volumeMounts", "securityContext", "ports")
	for _, tc := range []struct {
		name  string
		site  coreSite
		value map[string]any
		want  string // a substring of the server's reason; "" means accepted
	}{
		{"selector: Exists with values", site(metaV1 + "LabelSelector"),
			map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Exists", "values": []any{"x"}}}},
			"spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"},
		{"selector: In without values", site(metaV1 + "LabelSelector"),
			map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "In"}}},
			"spec.selector.matchExpressions[0].values: Required value"},
		{"service port: a percentage as target port", site(coreV1 + "ServicePort"),
			map[string]any{"port": int64(80), "targetPort": "20%"}, "spec.ports[0].targetPort: Invalid value"},
		{"container without an image", container, map[string]any{"name": "side"}, "spec.containers[0].image: Required value"},
		{"container port 0", site(coreV1 + "ContainerPort"), map[string]any{"containerPort": int64(0)}, "spec.containers[0].ports[0].containerPort: Required value"},
		{"claim without access modes or storage", site(coreV1 + "PersistentVolumeClaimSpec"), map[string]any{"storageClassName": "standard"},
			"spec.accessModes: Required value"},
		// The issue lists cpu requests on a claim as a defect; v1.35's API server accepts them.
		{"claim requesting cpu besides storage (accepted)", site(coreV1 + "PersistentVolumeClaimSpec"),
			map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi", "cpu": "1"}}}, ""},
		{"bidirectional mount, not privileged", container,
			map[string]any{"name": "side", "image": "busybox", "volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/data", "mountPropagation": "Bidirectional"}}},
			"Bidirectional mount propagation is available only to privileged containers"},
		{"ephemeral container in a pod template", site(coreV1 + "PodTemplateSpec"),
			map[string]any{"spec": map[string]any{"ephemeralContainers": []any{map[string]any{"name": "e", "image": "busybox"}}}},
			"spec.template.spec.ephemeralContainers: Forbidden"},
		{"toleration: Exists with a value", site(coreV1 + "Toleration"),
			map[string]any{"key": "k", "operator": "Exists", "value": "v"}, "value must be empty when `operator` is 'Exists'"},
		{"good selector", site(metaV1 + "LabelSelector"),
			map[string]any{"matchLabels": map[string]any{"app": "x"}, "matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"db"}}}}, ""},
		{"good container", container, map[string]any{"name": "side", "image": "busybox:1.36", "ports": []any{map[string]any{"containerPort": int64(9121)}},
			"volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/data"}}}, ""},
		{"good claim", site(coreV1 + "PersistentVolumeClaimSpec"),
			map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}, ""},
		{"good affinity", site(coreV1 + "Affinity"), map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "topology.kubernetes.io/zone", "operator": "In", "values": []any{"a"}}}}}}}}, ""},
		{"good probe timing (the operator brings the check)", coreSite{typ: coreV1 + "Probe", name: "livenessProbe", fields: map[string]bool{"periodSeconds": true, "failureThreshold": true}},
			map[string]any{"periodSeconds": int64(10), "failureThreshold": int64(3)}, ""},
		{"good service spec", site(coreV1 + "ServiceSpec"), map[string]any{"type": "ClusterIP", "sessionAffinity": "None"}, ""},
		{"good pod template", site(coreV1 + "PodTemplateSpec"), map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
			"spec": map[string]any{"tolerations": []any{map[string]any{"operator": "Exists"}}}}, ""},
	} {
		o, ok := wrapCore(tc.site, tc.value)
		if !ok {
			t.Fatalf("%s: not wrapped", tc.name)
		}
		reason, err := cache.validate(ctx, o.obj)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		switch {
		case tc.want == "" && reason != "":
			t.Errorf("%s: refused: %s (object %s)", tc.name, reason, compactJSON(o.obj))
		case tc.want != "" && !strings.Contains(reason, tc.want):
			t.Errorf("%s: reason %q, want it to contain %q", tc.name, reason, tc.want)
		}
	}

	// A plan for a shared CRD, generated with the validator: every valid case accepted.
	var rc realCase
	for _, c := range realCases(t) {
		if c.name == "cockroachdb/CrdbCluster" {
			rc = c
		}
	}
	if rc.schema == nil {
		t.Fatal("cockroachdb/CrdbCluster not found in ../shared/crds")
	}
	g, err := NewGenerator(rc.schema, rc.seed, Options{Seed: 1, Examples: rc.examples, CoreValidator: srv})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	plan, err := g.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	a, err := coreAcceptance(ctx, rc.schema, plan, newCoreCache(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d valid test cases, %d accepted; %d misoperations; core checks %+v; generated in %v",
		rc.name, a.valid, a.accepted, plan.Stats.Misoperation, *plan.Stats.Core, took.Round(time.Millisecond))
	if a.accepted != a.valid {
		t.Errorf("%d of %d valid test cases refused, e.g. %v", a.valid-a.accepted, a.valid, a.refusals)
	}
	// The server's refusals are proven by the table above; drawing now keeps
	// Kubernetes' rules itself (corefields.go), so this plan may need no repair.
	// That the generator consulted the server is what is checked here.
	if plan.Stats.Core.Checked == 0 {
		t.Errorf("core stats %+v: the generator never consulted the API server", *plan.Stats.Core)
	}
	if plan.Stats.Coverage < 0.97 {
		t.Errorf("coverage %.1f%%", 100*plan.Stats.Coverage)
	}
}
