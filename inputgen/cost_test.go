package inputgen

import (
	"context"
	"strings"
	"testing"
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
