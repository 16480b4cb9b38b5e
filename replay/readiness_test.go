package replay

import (
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

func TestDecide(t *testing.T) {
	o := ConvergeOptions{Quiet: 3 * time.Second, Settle: 30 * time.Second}.WithDefaults()
	tests := []struct {
		name     string
		quiet    time.Duration
		notReady []string
		genOK    bool
		want     Verdict
	}{
		{"still changing", time.Second, nil, true, KeepWaiting},
		{"quiet and ready", 3 * time.Second, nil, true, Converged},
		{"quiet, generation lags", time.Minute, nil, false, KeepWaiting},
		{"quiet, not ready", 5 * time.Second, []string{"pod"}, true, KeepWaiting},
		{"Settled not ready", 30 * time.Second, []string{"pod"}, true, Settled},
	}
	for _, tt := range tests {
		if got := Decide(o, tt.quiet, tt.notReady, tt.genOK); got != tt.want {
			t.Errorf("%s: decide = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReadiness(t *testing.T) {
	cr := model.ObjectKey{Group: "g", Version: "v1", Kind: "Foo", Namespace: "n", Name: "a"}.String()
	sts := model.ObjectKey{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: "n", Name: "a"}.String()
	pod := model.ObjectKey{Version: "v1", Kind: "Pod", Namespace: "n", Name: "a-0"}.String()
	readySTS := map[string]any{"metadata": map[string]any{"generation": int64(2)}, "spec": map[string]any{"replicas": int64(1)},
		"status": map[string]any{"observedGeneration": int64(2), "readyReplicas": int64(1), "updatedReplicas": int64(1), "replicas": int64(1), "currentRevision": "r", "updateRevision": "r"}}
	tests := []struct {
		name      string
		objs      map[string]model.Object
		wantReady bool
		wantGen   bool
	}{
		{"all ready", map[string]model.Object{sts: readySTS, cr: {"metadata": map[string]any{"generation": int64(3)}, "status": map[string]any{"observedGeneration": int64(3)}},
			pod: {"status": map[string]any{"phase": "Running", "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}}, true, true},
		{"generation lags", map[string]model.Object{cr: {"metadata": map[string]any{"generation": int64(3)}, "status": map[string]any{"observedGeneration": int64(2)}}}, true, false},
		{"no observedGeneration published", map[string]model.Object{cr: {"metadata": map[string]any{"generation": int64(3)}}}, true, true},
		{"pod pending", map[string]model.Object{pod: {"status": map[string]any{"phase": "Pending"}}}, false, true},
		{"rolling", map[string]model.Object{sts: {"metadata": map[string]any{"generation": int64(2)}, "spec": map[string]any{"replicas": int64(1)},
			"status": map[string]any{"observedGeneration": int64(2), "readyReplicas": int64(1), "updatedReplicas": int64(1), "replicas": int64(1), "currentRevision": "a", "updateRevision": "b"}}}, false, true},
		// The operator crashed before it saw the pods come back: its CR still
		// says Degraded although every workload is ready.
		{"CR says not ready", map[string]model.Object{sts: readySTS, cr: {"metadata": map[string]any{"generation": int64(3)}, "status": map[string]any{"observedGeneration": int64(3),
			"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Degraded"}}}}}, false, true},
		{"CR says ready", map[string]model.Object{sts: readySTS, cr: {"metadata": map[string]any{"generation": int64(3)}, "status": map[string]any{"observedGeneration": int64(3),
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}}, true, true},
	}
	// A re-created CR has no status until the operator's first pass: once the
	// operator is known to publish observedGeneration, that is not converged.
	if _, gen := Readiness(map[string]model.Object{cr: {"metadata": map[string]any{"generation": int64(1)}}}, cr, true); gen {
		t.Error("a CR without status.observedGeneration counts as observed although the operator publishes it")
	}
	for _, tt := range tests {
		nr, gen := Readiness(tt.objs, cr, false)
		if (len(nr) == 0) != tt.wantReady || gen != tt.wantGen {
			t.Errorf("%s: readiness = %v, %v; want ready %v gen %v", tt.name, nr, gen, tt.wantReady, tt.wantGen)
		}
	}
}

// TestReadinessWaitsForAvailability: a StatefulSet with minReadySeconds is
// converged only once its ready pods count as available (the untuned
// Prometheus-operator campaign, seed 2, group 9: minReadySeconds 10, judged
// converged on readiness, then status.availableReplicas "drifted" 0 → 1).
func TestReadinessWaitsForAvailability(t *testing.T) {
	sts := model.ObjectKey{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: "n", Name: "alertmanager-example"}.String()
	state := func(minReady, available int64) map[string]model.Object {
		spec := map[string]any{"replicas": int64(1)}
		if minReady > 0 {
			spec["minReadySeconds"] = minReady
		}
		return map[string]model.Object{sts: {"metadata": map[string]any{"generation": int64(2)}, "spec": spec,
			"status": map[string]any{"observedGeneration": int64(2), "readyReplicas": int64(1), "availableReplicas": available, "updatedReplicas": int64(1),
				"replicas": int64(1), "currentRevision": "r", "updateRevision": "r"}}}
	}
	if nr, _ := Readiness(state(10, 0), "", false); len(nr) != 1 || nr[0] != sts+": 0 of 1 ready pods available (minReadySeconds 10)" {
		t.Errorf("ready for less than minReadySeconds: readiness = %q, want the pod not available yet", nr)
	}
	if nr, _ := Readiness(state(10, 1), "", false); len(nr) != 0 {
		t.Errorf("available: readiness = %q", nr)
	}
	// Without minReadySeconds a ready pod is available at once; the
	// controller may publish the two counts apart, which is no wait.
	if nr, _ := Readiness(state(0, 0), "", false); len(nr) != 0 {
		t.Errorf("no minReadySeconds: readiness = %q", nr)
	}
}
