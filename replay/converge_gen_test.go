package replay

import (
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestReadinessConditionsObservedGeneration: a CR whose status publishes
// observedGeneration only in its conditions (cert-manager's Certificate) has
// not observed its generation while the newest condition's lags — an operator
// cut off from the API server after a spec change must not count as converged.
func TestReadinessConditionsObservedGeneration(t *testing.T) {
	cr := model.ObjectKey{Group: "cert-manager.io", Version: "v1", Kind: "Certificate", Namespace: "n", Name: "a"}.String()
	withConds := func(gen int64, ogs ...int64) map[string]model.Object {
		var conds []any
		for _, og := range ogs {
			conds = append(conds, map[string]any{"type": "Ready", "status": "True", "observedGeneration": og})
		}
		return map[string]model.Object{cr: {"metadata": map[string]any{"generation": gen}, "status": map[string]any{"conditions": conds}}}
	}
	tests := []struct {
		name string
		objs map[string]model.Object
		want bool
	}{
		{"condition lags", withConds(39, 38), false},
		{"condition caught up", withConds(39, 39), true},
		{"newest condition counts", withConds(39, 37, 39), true},
		{"top-level wins", map[string]model.Object{cr: {"metadata": map[string]any{"generation": int64(5)}, "status": map[string]any{"observedGeneration": int64(5),
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "observedGeneration": int64(3)}}}}}, true},
		{"conditions without it", map[string]model.Object{cr: {"metadata": map[string]any{"generation": int64(5)}, "status": map[string]any{
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}}, true},
	}
	for _, tt := range tests {
		if _, gen := Readiness(tt.objs, cr, false); gen != tt.want {
			t.Errorf("%s: generation observed = %v, want %v", tt.name, gen, tt.want)
		}
	}
}

// TestReadinessRunningJob: a Job that still runs is work in progress, so the
// step is not Converged (a CloudNativePG differential re-run was judged while
// its initdb Job ran: its pod was Ready and the namespace quiet); a finished
// Job, or one whose pods are gone, is not.
func TestReadinessRunningJob(t *testing.T) {
	job := func(active int64, cond string) model.Object {
		st := map[string]any{"active": active}
		if cond != "" {
			st["conditions"] = []any{map[string]any{"type": cond, "status": "True"}}
		}
		return model.Object{"metadata": map[string]any{"name": "example-1-initdb"}, "status": st}
	}
	key := model.ObjectKey{Group: "batch", Version: "v1", Kind: "Job", Namespace: "n", Name: "example-1-initdb"}.String()
	for _, tc := range []struct {
		name string
		job  model.Object
		want bool
	}{
		{"running", job(1, ""), false},
		{"complete", job(0, "Complete"), true},
		{"failed", job(0, "Failed"), true},
		{"complete while its pod still shows", job(1, "Complete"), true},
	} {
		notReady, _ := Readiness(map[string]model.Object{key: tc.job}, "", false)
		if got := len(notReady) == 0; got != tc.want {
			t.Errorf("%s: ready %v, want %v (%v)", tc.name, got, tc.want, notReady)
		}
	}
}
