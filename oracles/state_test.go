package oracles

import (
	"slices"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// calibrated are the masks calibration learns for the bundled operator: which
// pod is elected primary varies from run to run.
var calibrated = []string{
	`Pod/cache-*/metadata.labels["valkey.gauntlet.dev/role"]`,
	"ValkeyCluster/cache/status.conditions[*].message",
	"ValkeyCluster/cache/status.primary",
}

func TestLearnMasks(t *testing.T) {
	s0, ref := loadSnapshot(t, "s0"), loadSnapshot(t, "s0-ref")
	cases := []struct {
		name string
		runs []*model.Snapshot
		want []string
	}{
		{"no runs", nil, nil},
		{"one run", []*model.Snapshot{s0}, nil},
		{"same run twice", []*model.Snapshot{s0, loadSnapshot(t, "s0")}, []string{}},
		{"two runs", []*model.Snapshot{s0, ref}, calibrated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := LearnMasks(c.runs...)
			if c.want == nil && got != nil || !slices.Equal(got, c.want) {
				t.Fatalf("LearnMasks = %q, want %q", got, c.want)
			}
			if err := ValidateMasks(got); err != nil {
				t.Errorf("learned masks do not parse: %v", err)
			}
		})
	}
	t.Run("stems collapse across objects", func(t *testing.T) {
		a, b := loadSnapshot(t, "s0"), loadSnapshot(t, "s0")
		set(t, b, "Pod/cache-1", `metadata.labels["x"]`, "1")
		set(t, b, "Pod/valkey-operator-5d8f7c9b4f-x7k2p", `metadata.labels["x"]`, "1")
		got := LearnMasks(a, b)
		want := []string{`Pod/*/metadata.labels.x`}
		if !slices.Equal(got, want) {
			t.Errorf("LearnMasks = %q, want %q", got, want)
		}
	})
	t.Run("object in one run only", func(t *testing.T) {
		a, b := loadSnapshot(t, "s0"), loadSnapshot(t, "s0")
		remove(t, b, "PodDisruptionBudget/cache")
		if got, want := LearnMasks(a, b), []string{"PodDisruptionBudget/cache"}; !slices.Equal(got, want) {
			t.Errorf("LearnMasks = %q, want %q", got, want)
		}
	})
}

func TestDifferential(t *testing.T) {
	cases := []struct {
		name     string
		kind     model.StepKind
		masks    []string
		state    func(t *testing.T, s *model.Snapshot)
		refState func(t *testing.T, s *model.Snapshot)
		want     expectation
	}{
		{
			name:  "same-state-on-fresh-namespace",
			masks: calibrated,
			state: func(t *testing.T, s *model.Snapshot) {},
		},
		{
			name:  "timestamps-differ",
			masks: calibrated,
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "ValkeyCluster/cache", "status.lastFailoverTime", "2025-03-01T10:01:20Z")
				set(t, s, "ValkeyCluster/cache", "status.lastFailoverReason", "initial election")
			},
			refState: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "ValkeyCluster/cache", "status.lastFailoverTime", "2025-03-01T11:01:20.25Z")
				set(t, s, "ValkeyCluster/cache", "status.lastFailoverReason", "initial election")
			},
		},
		{
			name:  "history-left-retained-claims",
			masks: calibrated,
			state: func(t *testing.T, s *model.Snapshot) {
				c := copyAs(t, s, "PersistentVolumeClaim/data-cache-2", "data-cache-3")
				setIn(t, c, "metadata.uid", "22222222-bbbb-4ccc-8ddd-000000000003")
			},
		},
		{
			name:  "uncalibrated-run-variance",
			state: func(t *testing.T, s *model.Snapshot) {},
			want:  expectation{n: 2, contains: []string{"Pod cache-0 differs", "ValkeyCluster cache differs from the reference state"}},
		},
		{
			name:  "stale-config-line",
			masks: calibrated,
			state: func(t *testing.T, s *model.Snapshot) {
				// D(i-1) set maxmemory-policy; D(i) removed it; the operator kept it.
				editConf(t, s, "maxmemory 100mb\n", "maxmemory 100mb\nmaxmemory-policy allkeys-lru\n")
				setApplied(t, s, `{"config":{"maxmemory":"100mb","maxmemory-policy":"allkeys-lru"},"effective":{"maxmemory":"104857600","maxmemory-policy":"allkeys-lru"},"defaults":{"maxmemory":"0","maxmemory-policy":"noeviction"}}`)
			},
			want: expectation{n: 1, contains: []string{`ConfigMap cache-config differs from the reference state`, `data["applied.json"] is`, "and 1 more field(s)"}},
		},
		{
			name:  "missing-pdb",
			masks: calibrated,
			state: func(t *testing.T, s *model.Snapshot) { remove(t, s, "PodDisruptionBudget/cache") },
			want:  expectation{n: 1, contains: []string{"PodDisruptionBudget cache is missing from the state reached"}},
		},
		{
			name:  "extra-service",
			masks: calibrated,
			state: func(t *testing.T, s *model.Snapshot) {
				svc := copyAs(t, s, "Service/cache", "cache-metrics")
				setIn(t, svc, "spec.ports[0].port", 9121.0)
			},
			want: expectation{n: 1, contains: []string{"Service cache-metrics exists in the state reached but not in the reference"}},
		},
		{
			name:  "operator-pod-template-changed",
			masks: calibrated,
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "Pod/valkey-operator-5d8f7c9b4f-x7k2p", "spec.containers[0].args", []any{"--leader-elect", "--zap-log-level=debug"})
			},
			want: expectation{n: 1, contains: []string{"Pod valkey-operator-5d8f7c9b4f-x7k2p differs", "spec.containers[0].args[1] is"}},
		},
		{
			name:  "rollback-steps-skipped",
			kind:  model.StepRollback,
			state: func(t *testing.T, s *model.Snapshot) { remove(t, s, "PodDisruptionBudget/cache") },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			curr, ref := loadSnapshot(t, "s0"), loadSnapshot(t, "s0-ref")
			c.state(t, curr)
			if c.refState != nil {
				c.refState(t, ref)
			}
			kind := c.kind
			if kind == "" {
				kind = model.StepDifferential
			}
			fs := run(NewDifferential(Config{}), &model.Transition{Step: step(kind), Curr: curr, Reference: ref, Masks: c.masks})
			c.want.check(t, fs)
			checkGolden(t, "differential", c.name, fs)
		})
	}
}

// misoperation is the alarm state S(i) of a step that declared 1000 replicas.
func misoperation(t testing.TB, s *model.Snapshot) {
	t.Helper()
	set(t, s, "ValkeyCluster/cache", "spec.replicas", 1000.0)
	set(t, s, "ValkeyCluster/cache", "metadata.generation", 2.0)
	set(t, s, "ValkeyCluster/cache", "status.phase", "Updating")
	set(t, s, "StatefulSet/cache", "spec.replicas", 1000.0)
	set(t, s, "StatefulSet/cache", "metadata.generation", 2.0)
	p := copyAs(t, s, "Pod/cache-2", "cache-3")
	setIn(t, p, "metadata.uid", "11111111-aaaa-4bbb-8ccc-000000000003")
	setIn(t, p, "status", map[string]any{"phase": "Pending", "conditions": []any{map[string]any{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}}})
}

func TestRecovery(t *testing.T) {
	cases := []struct {
		name  string
		kind  model.StepKind
		state func(t *testing.T, s *model.Snapshot)
		want  expectation
	}{
		{
			name: "rolled-back",
			state: func(t *testing.T, s *model.Snapshot) {
				// Back to 3 replicas: new generation, new resource versions and times.
				set(t, s, "ValkeyCluster/cache", "metadata.generation", 3.0)
				set(t, s, "ValkeyCluster/cache", "status.observedGeneration", 3.0)
				set(t, s, "ValkeyCluster/cache", "metadata.resourceVersion", "2410")
				set(t, s, "ValkeyCluster/cache", "status.conditions[0].lastTransitionTime", "2025-03-01T10:06:40Z")
				set(t, s, "StatefulSet/cache", "metadata.generation", 3.0)
				set(t, s, "StatefulSet/cache", "status.observedGeneration", 3.0)
			},
		},
		{
			name: "stuck-after-rollback",
			state: func(t *testing.T, s *model.Snapshot) {
				misoperation(t, s)
				set(t, s, "ValkeyCluster/cache", "spec.replicas", 3.0) // D(i-1) re-declared
				set(t, s, "ValkeyCluster/cache", "metadata.generation", 3.0)
			},
			want: expectation{n: 3, contains: []string{
				"failed to roll back: StatefulSet cache differs from the state before the failed step: spec.replicas is 1000, expected 3",
				"failed to roll back: Pod cache-3 exists in the state reached but not in the state before the failed step",
				"failed to roll back: ValkeyCluster cache differs",
			}},
		},
		{
			name:  "not-a-rollback",
			kind:  model.StepApply,
			state: func(t *testing.T, s *model.Snapshot) { misoperation(t, s) },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := loadSnapshot(t, "s0") // S(i-1)
			alarm := loadSnapshot(t, "s0")  // S(i)
			misoperation(t, alarm)
			curr := loadSnapshot(t, "s0")
			c.state(t, curr)
			kind := c.kind
			if kind == "" {
				kind = model.StepRollback
			}
			fs := run(NewRecovery(Config{}), &model.Transition{Step: step(kind, "spec.replicas"), Prev: alarm, Curr: curr, Reference: before})
			c.want.check(t, fs)
			checkGolden(t, "recovery", c.name, fs)
		})
	}
}

// flipPrimary makes pod p the primary in s.
func flipPrimary(t testing.TB, s *model.Snapshot, p string) {
	t.Helper()
	for _, pod := range []string{"cache-0", "cache-1", "cache-2"} {
		role := "replica"
		if pod == p {
			role = "primary"
		}
		set(t, s, "Pod/"+pod, `metadata.labels["valkey.gauntlet.dev/role"]`, role)
	}
	set(t, s, "ValkeyCluster/cache", "status.primary", p)
}

func TestStability(t *testing.T) {
	lease := func(t *testing.T, s *model.Snapshot, renew string) {
		s.Objects["coordination.k8s.io/v1/Lease/gauntlet-w0/valkey-operator-leader"] = model.Object{
			"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
			"metadata": map[string]any{"name": "valkey-operator-leader", "namespace": "gauntlet-w0", "resourceVersion": renew},
			"spec":     map[string]any{"holderIdentity": "valkey-operator-5d8f7c9b4f-x7k2p", "renewTime": "2025-03-01T10:02:" + renew + ".000000Z", "leaseDurationSeconds": 15.0},
		}
	}
	cases := []struct {
		name    string
		samples []func(t *testing.T, s *model.Snapshot)
		want    expectation
	}{
		{
			name: "stable",
			samples: []func(t *testing.T, s *model.Snapshot){
				func(t *testing.T, s *model.Snapshot) {
					lease(t, s, "12")
					set(t, s, "StatefulSet/cache", "metadata.resourceVersion", "1901")
				},
				func(t *testing.T, s *model.Snapshot) {
					lease(t, s, "14")
					set(t, s, "Pod/cache-1", "status.conditions[2].lastTransitionTime", "2025-03-01T10:02:13Z")
				},
				func(t *testing.T, s *model.Snapshot) { lease(t, s, "16") },
			},
		},
		{
			name: "primary-oscillates",
			samples: []func(t *testing.T, s *model.Snapshot){
				func(t *testing.T, s *model.Snapshot) { flipPrimary(t, s, "cache-1") },
				func(t *testing.T, s *model.Snapshot) { flipPrimary(t, s, "cache-0") },
				func(t *testing.T, s *model.Snapshot) { flipPrimary(t, s, "cache-1") },
			},
			want: expectation{n: 2, contains: []string{
				"ValkeyCluster cache did not stay stable after convergence: status.primary oscillated, changing 3 times in 3 samples",
				`Pod cache-0 did not stay stable after convergence: metadata.labels["valkey.gauntlet.dev/role"] oscillated, changing 3 times in 3 samples (and 1 more like it)`,
			}},
		},
		{
			name: "template-drifts",
			samples: []func(t *testing.T, s *model.Snapshot){
				func(t *testing.T, s *model.Snapshot) {
					set(t, s, "StatefulSet/cache", `spec.template.metadata.annotations["valkey.gauntlet.dev/restart-config-hash"]`, "a1")
				},
				func(t *testing.T, s *model.Snapshot) {
					set(t, s, "StatefulSet/cache", `spec.template.metadata.annotations["valkey.gauntlet.dev/restart-config-hash"]`, "a2")
				},
			},
			want: expectation{n: 1, contains: []string{"restart-config-hash\"] drifted, changing 2 times in 2 samples"}},
		},
		{
			name: "service-recreated",
			samples: []func(t *testing.T, s *model.Snapshot){
				func(t *testing.T, s *model.Snapshot) {
					set(t, s, "Service/cache", "metadata.uid", "a3e1c1b0-73f4-4f0e-b1a7-33c1e5d2f0ff")
					set(t, s, "Service/cache", "spec.clusterIP", "10.96.0.77")
				},
			},
			want: expectation{n: 1, contains: []string{"Service cache did not stay stable after convergence: it was deleted and re-created"}},
		},
		{
			name: "object-disappears",
			samples: []func(t *testing.T, s *model.Snapshot){
				func(t *testing.T, s *model.Snapshot) {},
				func(t *testing.T, s *model.Snapshot) { remove(t, s, "PodDisruptionBudget/cache") },
			},
			want: expectation{n: 1, contains: []string{"PodDisruptionBudget cache did not stay stable after convergence: the object drifted"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			curr := loadSnapshot(t, "s0")
			var samples []*model.Snapshot
			for _, edit := range c.samples {
				s := loadSnapshot(t, "s0")
				if len(samples) > 0 {
					s = cloneSnapshot(t, samples[len(samples)-1])
				}
				edit(t, s)
				samples = append(samples, s)
			}
			fs := run(NewStability(Config{}), &model.Transition{Step: step(model.StepApply), Curr: curr, Stability: samples})
			c.want.check(t, fs)
			checkGolden(t, "stability", c.name, fs)
		})
	}
}

func cloneSnapshot(t testing.TB, s *model.Snapshot) *model.Snapshot {
	t.Helper()
	out := *s
	out.Objects = map[string]model.Object{}
	for k, o := range s.Objects {
		out.Objects[k] = jsonv.CopyMap(o)
	}
	return &out
}

func TestIdentity(t *testing.T) {
	cases := []struct {
		name, stem, match string
		labels            map[string]any
		generateName      string
		generated         bool
	}{
		{name: "cache-0", generateName: "cache-", stem: "cache-*", match: "cache-0"},
		{name: "data-cache-12", stem: "data-cache-*", match: "data-cache-12"},
		{name: "cache", stem: "cache", match: "cache"},
		{name: "web-5d8f7c9b4f", labels: map[string]any{"pod-template-hash": "5d8f7c9b4f"}, stem: "web-*", match: "web-5d8f7c9b4f", generated: true},
		{name: "web-5d8f7c9b4f-x7k2p", labels: map[string]any{"pod-template-hash": "5d8f7c9b4f"}, stem: "web-*", match: "web-5d8f7c9b4f-*", generated: true},
		{name: "cache-h8s4k", generateName: "cache-", stem: "cache-*", match: "cache-*", generated: true},
		{name: "backup-job-q2w4r", stem: "backup-job-*", match: "backup-job-*", generated: true},
		{name: "valkey-cache", stem: "valkey-cache", match: "valkey-cache"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md := map[string]any{"name": c.name}
			if c.labels != nil {
				md["labels"] = c.labels
			}
			if c.generateName != "" {
				md["generateName"] = c.generateName
			}
			stem, match, gen := identity(model.Object{"metadata": md}, c.name)
			if stem != c.stem || match != c.match || gen != c.generated {
				t.Errorf("identity = %q, %q, %v; want %q, %q, %v", stem, match, gen, c.stem, c.match, c.generated)
			}
		})
	}
}

func TestReplaceWord(t *testing.T) {
	cases := []struct{ in, want string }{
		{"cache-0.cache-headless.gauntlet-w0.svc.cluster.local", "cache-0.cache-headless.<namespace>.svc.cluster.local"},
		{"gauntlet-w0/cache", "<namespace>/cache"},
		{"gauntlet-w0-node-2", "gauntlet-w0-node-2"},
		{"xgauntlet-w0", "xgauntlet-w0"},
		{"gauntlet-w0", "<namespace>"},
	}
	for _, c := range cases {
		if got := replaceWord(c.in, "gauntlet-w0", nsPlaceholder); got != c.want {
			t.Errorf("replaceWord(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := replaceWord("a", "", "x"); got != "a" {
		t.Errorf("empty word: %q", got)
	}
}

// TestRecoverySerialNames: an operator that numbers its own pods and claims
// with a serial it never reuses (CloudNativePG: instances example-1, -2, -3
// are example-1, -4, -5 after a scale-down to 1 and the rollback to 3) has
// recovered when its objects match under the new names, the other objects
// naming them included (seed 1: "Pod example-4 exists … Pod example-2 is
// missing"). A StatefulSet's ordinals stay identities, and a missing instance
// is still found.
func TestRecoverySerialNames(t *testing.T) {
	const crKey = "postgresql.cnpg.io/v1/Cluster/ns/example"
	owner := []any{map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "name": "example", "controller": true}}
	state := func(names ...string) *model.Snapshot {
		s := &model.Snapshot{CR: crKey, Objects: map[string]model.Object{}}
		var listed []any
		for _, n := range names {
			s.Objects["/v1/Pod/ns/"+n] = model.Object{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": n, "namespace": "ns", "ownerReferences": owner, "labels": map[string]any{"cnpg.io/instanceName": n}},
				"spec":     map[string]any{"hostname": n, "volumes": []any{map[string]any{"name": "pgdata", "persistentVolumeClaim": map[string]any{"claimName": n}}}}}
			s.Objects["/v1/PersistentVolumeClaim/ns/"+n] = model.Object{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
				"metadata": map[string]any{"name": n, "namespace": "ns", "ownerReferences": owner}, "spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}}
			listed = append(listed, n)
		}
		s.Objects[crKey] = model.Object{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": map[string]any{"name": "example", "namespace": "ns"},
			"spec": map[string]any{"instances": int64(len(names))}, "status": map[string]any{"instanceNames": listed,
				"instancesReportedState": map[string]any{names[0]: map[string]any{"isPrimary": true}}}}
		return s
	}
	rollback := func(curr, ref *model.Snapshot) []model.Finding {
		return run(NewRecovery(Config{}), &model.Transition{Step: step(model.StepRollback, "spec.instances"), Curr: curr, Reference: ref, Prev: curr})
	}
	if fs := rollback(state("example-1", "example-4", "example-5"), state("example-1", "example-2", "example-3")); len(fs) != 0 {
		t.Errorf("new serials for the same instances: %v", fs)
	}
	if fs := rollback(state("example-1", "example-4"), state("example-1", "example-2", "example-3")); len(fs) == 0 {
		t.Error("an instance missing after the rollback was not found")
	}
	sts := func(names ...string) *model.Snapshot {
		s := &model.Snapshot{CR: crKey, Objects: map[string]model.Object{}}
		for _, n := range names {
			s.Objects["/v1/Pod/ns/"+n] = model.Object{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": n, "namespace": "ns",
				"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "cache", "controller": true}}}, "spec": map[string]any{"hostname": n}}
		}
		return s
	}
	if fs := rollback(sts("cache-0", "cache-3"), sts("cache-0", "cache-1")); len(fs) == 0 {
		t.Error("a StatefulSet's ordinals were paired as serials")
	}
}

// TestRecoveryAdmittedPullSecrets: a pod re-created after its ServiceAccount
// gained an image pull secret holds it (admission copies it in at creation),
// an older pod does not; that is no failure to roll back (CloudNativePG seed
// 3). A pull secret the account does not list still counts.
func TestRecoveryAdmittedPullSecrets(t *testing.T) {
	state := func(podPull ...string) *model.Snapshot {
		var l []any
		for _, n := range podPull {
			l = append(l, map[string]any{"name": n})
		}
		spec := map[string]any{"serviceAccountName": "example", "hostname": "example-1"}
		if len(l) > 0 {
			spec["imagePullSecrets"] = l
		}
		return &model.Snapshot{Objects: map[string]model.Object{
			"/v1/ServiceAccount/ns/example": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "example", "namespace": "ns"},
				"imagePullSecrets": []any{map[string]any{"name": "gauntlet-wesmi"}}},
			"/v1/Pod/ns/example-1": {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "example-1", "namespace": "ns"}, "spec": spec},
		}}
	}
	rollback := func(curr, ref *model.Snapshot) []model.Finding {
		return run(NewRecovery(Config{}), &model.Transition{Step: step(model.StepRollback, "spec.seccompProfile"), Curr: curr, Reference: ref, Prev: curr})
	}
	if fs := rollback(state("gauntlet-wesmi"), state()); len(fs) != 0 {
		t.Errorf("a pull secret admission copied from the account: %v", fs)
	}
	if fs := rollback(state("gauntlet-wesmi", "other"), state()); len(fs) != 1 {
		t.Errorf("a pull secret the account does not list: %v", fs)
	}
}

// TestRecoveryRoleMoved: the third-party operator's night 2 and the bundled
// operator alike — the operator failed over before rolling the primary back,
// so after the rollback cache-1 is primary where cache-0 was. Which pod leads
// is history, not state: the role labels, the CR's status.primary, its
// conditions' messages and the client Service's endpoint all name another
// member of the same set, and that is a recovery. A role that vanished (no
// primary at all) is still a failure.
func TestRecoveryRoleMoved(t *testing.T) {
	const role = `metadata.labels["valkey.gauntlet.dev/role"]`
	moved := func(t *testing.T, s *model.Snapshot) {
		set(t, s, "Pod/cache-0", role, "replica")
		set(t, s, "Pod/cache-1", role, "primary")
		set(t, s, "ValkeyCluster/cache", "status.primary", "cache-1")
		set(t, s, "ValkeyCluster/cache", "status.conditions[0].message", "3 of 3 pods in sync with primary cache-1")
		set(t, s, "ValkeyCluster/cache", "status.conditions[1].message", "cache-1 reports role master")
		set(t, s, "EndpointSlice/cache-h8s4k", "endpoints[0].targetRef.name", "cache-1")
	}
	before := loadSnapshot(t, "s0")
	curr := loadSnapshot(t, "s0")
	moved(t, curr)
	if fs := run(NewRecovery(Config{}), &model.Transition{Step: step(model.StepRollback, "spec.replicas"), Prev: curr, Curr: curr, Reference: before}); len(fs) != 0 {
		t.Fatalf("a moved primary is a recovery, got %d findings: %v", len(fs), fs)
	}
	lost := loadSnapshot(t, "s0")
	moved(t, lost)
	set(t, lost, "Pod/cache-1", role, "replica")
	fs := run(NewRecovery(Config{}), &model.Transition{Step: step(model.StepRollback, "spec.replicas"), Prev: lost, Curr: lost, Reference: before})
	if len(fs) == 0 {
		t.Fatal("no primary left after the rollback must fail recovery")
	}
}
