package oracles

import (
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// A value set in a block named after a Kubernetes kind the state has no
// object of (a PodDisruptionBudget's maxUnavailable at one replica, where the
// operator makes none) is not judged; with the object there and unchanged,
// it is a finding.
func TestConsistencyKindAbsent(t *testing.T) {
	for _, tt := range []struct {
		name    string
		keepPDB bool
		want    int
	}{{"no PodDisruptionBudget in either state", false, 0}, {"a PodDisruptionBudget that did not change", true, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			prev, curr := loadSnapshot(t, "s0"), loadSnapshot(t, "s0")
			found := false
			for _, s := range []*model.Snapshot{prev, curr} {
				for key := range s.Objects {
					if strings.Contains(key, "PodDisruptionBudget/") {
						found = true
						if !tt.keepPDB {
							delete(s.Objects, key)
						}
					}
				}
			}
			if !found {
				t.Fatal("the fixture has no PodDisruptionBudget")
			}
			prevD := desiredOf(prev)
			d := jsonv.CopyMap(prevD)
			setIn(t, d, "spec.podDisruptionBudget.maxUnavailable", 7.0)
			cr := curr.CRObject()
			cr["spec"] = jsonv.Copy(d["spec"])
			tr := &model.Transition{Step: step(model.StepApply, "spec.podDisruptionBudget.maxUnavailable"), PrevDesired: prevD, Desired: d, Prev: prev, Curr: curr}
			if fs := run(NewConsistency(Config{}), tr); len(fs) != tt.want {
				t.Fatalf("%d findings, want %d: %v", len(fs), tt.want, fs)
			}
		})
	}
}
