package inputgen

import (
	"context"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
	"github.com/gauntlet-dev/gauntlet/inputgen/internal/testcrds"
)

// TestPodEstimatesSharded checks, on the shared real-world CRDs of sharded and replicated
// operators, that pod estimates multiply shard-like fields by replica-like ones and that a case
// asking for more pods than the test cluster holds is a misoperation saying so, whatever its
// generator labelled it.
func TestPodEstimatesSharded(t *testing.T) {
	want := map[string]struct {
		fields string
		seed   int
	}{
		// nodes (default 3) × (1 + replicas (default 0)).
		"hyperspike-valkey/Valkey": {"spec.nodes × (1 + spec.replicas)", 3},
		// shards × (1 + replicas), both from the seed.
		"valkey-io/ValkeyCluster": {"spec.shards × (1 + spec.replicas)", 0},
		// replicas alone (default 1).
		"sap-valkey/Valkey": {"spec.replicas", 0},
		// clusterSize alone.
		"ot-redis/RedisReplication": {"spec.clusterSize", 0},
	}
	found := 0
	for _, rc := range realCases(t) {
		w, ok := want[rc.name]
		if !ok {
			continue
		}
		found++
		g := mustGenerator(t, rc.schema, rc.seed, Options{Seed: 1, Examples: rc.examples, Workers: 1})
		plan, err := g.Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(plan.PodFields, "; "); !strings.Contains(got, w.fields) {
			t.Errorf("%s: pod fields %q, want %q among them", rc.name, got, w.fields)
		}
		if w.seed > 0 && plan.SeedPods != w.seed {
			t.Errorf("%s: %d pods for the seed, want %d", rc.name, plan.SeedPods, w.seed)
		}
		beyond := 0
		for _, tc := range plan.TestCases {
			if tc.Pods <= plan.PodCapacity {
				continue
			}
			beyond++
			if tc.Label != Misoperation {
				t.Errorf("%s: %s asks for %d pods (capacity %d) but is %s", rc.name, tc.ID, tc.Pods, plan.PodCapacity, tc.Label)
			}
		}
		if beyond == 0 || plan.Stats.BeyondCapacity != beyond {
			t.Errorf("%s: %d cases beyond capacity, stats say %d", rc.name, beyond, plan.Stats.BeyondCapacity)
		}
		if rc.name == "hyperspike-valkey/Valkey" {
			tc := plan.TestCase("spec.replicas#replicas/beyond-capacity")
			if tc == nil || tc.Pods != 3*(1000+1) {
				t.Errorf("hyperspike: spec.replicas beyond capacity: %+v, want 3003 pods (3 shards × 1001)", tc)
			}
		}
	}
	if found != len(want) {
		t.Fatalf("found %d of the %d operators in the shared CRDs", found, len(want))
	}
}

// TestPodEstimateSeedBeyondCapacity is cert-manager's Certificate: spec.privateKey.size (a key size
// of 2048, named like a replica count) made every case "beyond the test cluster's capacity (about
// 256 pods)" and a misoperation, although the seed itself runs. An estimate that puts the seed
// beyond capacity reads fields that do not count pods: it is dropped, with a seed warning.
func TestPodEstimateSeedBeyondCapacity(t *testing.T) {
	s := mustSchema(t, testcrds.CRD("Certificate", `
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              commonName: {type: string}
              secretName: {type: string}
              privateKey:
                type: object
                properties:
                  algorithm: {type: string, enum: [RSA, ECDSA]}
                  size: {type: integer}
`))
	seed := map[string]any{"apiVersion": "test.gauntlet.dev/v1", "kind": "Certificate", "metadata": map[string]any{"name": "c"},
		"spec": map[string]any{"commonName": "example.com", "secretName": "c-tls", "privateKey": map[string]any{"algorithm": "RSA", "size": int64(2048)}}}
	g := mustGenerator(t, s, seed, Options{Seed: 1, Workers: 1})
	plan, err := g.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, w := range plan.SeedWarnings {
		warned = warned || strings.Contains(w, "pod estimate dropped")
	}
	if !warned {
		t.Errorf("no seed warning says the pod estimate was dropped: %q", plan.SeedWarnings)
	}
	if plan.SeedPods != 0 || len(plan.PodFields) != 0 {
		t.Errorf("the plan still estimates pods from %q (seed: %d)", plan.PodFields, plan.SeedPods)
	}
	for _, tc := range plan.TestCases {
		if tc.Pods > 0 || strings.Contains(tc.Description, "capacity") {
			t.Errorf("%s: %d pods estimated, %s: %s", tc.ID, tc.Pods, tc.Label, tc.Description)
		}
	}
}

// mustSchema is the schema of the first CRD in crdYAML.
func mustSchema(t *testing.T, crdYAML string) *crd.Schema {
	t.Helper()
	crds, err := crd.Parse([]byte(crdYAML))
	if err != nil {
		t.Fatal(err)
	}
	s, err := crd.NewSchema(crds[0], "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
