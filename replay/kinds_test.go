package replay

import (
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestFaultKindsAreModels: the replay's kinds are model's vocabulary, in its order.
func TestFaultKindsAreModels(t *testing.T) {
	mk := model.FaultKinds()
	if len(FaultKinds) != len(mk) {
		t.Fatalf("replay kinds %v, model kinds %v", FaultKinds, mk)
	}
	for i, k := range FaultKinds {
		if k != string(mk[i]) {
			t.Errorf("kind %d: %s, model says %s", i, k, mk[i])
		}
		if _, ok := BackendKind(k); !ok {
			t.Errorf("%s has no injector kind", k)
		}
	}
}
