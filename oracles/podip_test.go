package oracles

import (
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestDifferentialPodIPs: an operator's record of its pods' addresses
// (CloudNativePG's Cluster status.instancesReportedState.<pod>.ip) compares
// equal between runs whose pods got other addresses, when each names the same
// pod; naming another pod's address is still a difference.
func TestDifferentialPodIPs(t *testing.T) {
	addrs := func(cache0, cache1 string) func(t *testing.T, s *model.Snapshot) {
		return func(t *testing.T, s *model.Snapshot) {
			set(t, s, "Pod/cache-0", "status.podIP", cache0)
			set(t, s, "Pod/cache-0", "status.podIPs", []any{map[string]any{"ip": cache0}})
			set(t, s, "Pod/cache-1", "status.podIP", cache1)
			set(t, s, "Pod/cache-1", "status.podIPs", []any{map[string]any{"ip": cache1}})
		}
	}
	cases := []struct {
		name            string
		curr, ref       func(t *testing.T, s *model.Snapshot)
		currRec, refRec string
		want            expectation
	}{
		{"same pod, other address", addrs("10.201.6.3", "10.201.6.4"), addrs("10.201.7.4", "10.201.7.3"), "10.201.6.3", "10.201.7.4", expectation{}},
		{"same pod, in a host:port", addrs("10.201.6.3", "10.201.6.4"), addrs("10.201.7.4", "10.201.7.3"), "10.201.6.3:6379", "10.201.7.4:6379", expectation{}},
		{"another pod", addrs("10.201.6.3", "10.201.6.4"), addrs("10.201.7.4", "10.201.7.3"), "10.201.6.3", "10.201.7.3",
			expectation{n: 1, contains: []string{"ValkeyCluster cache differs from the reference state"}}},
		{"not a pod's address", addrs("10.201.6.3", "10.201.6.4"), addrs("10.201.7.4", "10.201.7.3"), "10.201.6.30", "10.201.7.40",
			expectation{n: 1, contains: []string{"ValkeyCluster cache differs from the reference state"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			curr, ref := loadSnapshot(t, "s0"), loadSnapshot(t, "s0-ref")
			c.curr(t, curr)
			c.ref(t, ref)
			set(t, curr, "ValkeyCluster/cache", "status.primaryAddress", c.currRec)
			set(t, ref, "ValkeyCluster/cache", "status.primaryAddress", c.refRec)
			fs := run(NewDifferential(Config{}), &model.Transition{Step: step(model.StepDifferential), Curr: curr, Reference: ref, Masks: calibrated})
			c.want.check(t, fs)
		})
	}
}
