package targets

import (
	"testing"

	"github.com/gauntlet-dev/gauntlet/oracles"
)

func TestValkeyMasksParse(t *testing.T) {
	tg := valkeyTarget(t)
	if err := oracles.ValidateMasks(append(append([]string{}, tg.IgnoreFields...), tg.DifferentialMasks...)); err != nil {
		t.Fatal(err)
	}
	if err := tg.OracleConfig.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValkeyMasksApply(t *testing.T) {
	tg := valkeyTarget(t)
	pod := func(role string) map[string]any {
		return map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "cache-0",
			"labels": map[string]any{"valkey.gauntlet.dev/role": role, "app": "x"}}}
	}
	if d := oracles.Diff(pod("primary"), pod("replica"), tg.IgnoreFields); len(d) != 0 {
		t.Errorf("the role label is history: %+v", d)
	}
	cr := func(msg string) map[string]any {
		return map[string]any{"kind": "ValkeyCluster", "metadata": map[string]any{"name": "cache"},
			"status": map[string]any{"primary": msg, "conditions": []any{map[string]any{"type": "Ready", "status": "True", "message": msg}}}}
	}
	if d := oracles.Diff(cr("cache-0"), cr("cache-1"), tg.IgnoreFields); len(d) != 0 {
		t.Errorf("the primary's name in the status is history: %+v", d)
	}
	other := cr("cache-0")
	other["status"].(map[string]any)["conditions"].([]any)[0].(map[string]any)["status"] = "False"
	if d := oracles.Diff(cr("cache-0"), other, tg.IgnoreFields); len(d) != 1 {
		t.Errorf("a condition's status must still count: %+v", d)
	}
}

// valkeyTarget is the built-in Valkey target of this checkout.
func valkeyTarget(t *testing.T) *Target {
	t.Helper()
	root, err := FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := Valkey(root)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
