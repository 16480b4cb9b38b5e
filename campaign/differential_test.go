package campaign

import (
	"context"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// A differential step judges S(i) of the history, which held a restart excused when it
// was recorded (a container crash): only the differential oracle may judge it again.
func TestDifferentialJudgedByDifferentialOnly(t *testing.T) {
	all := []oracles.Oracle{oracles.NewHealth(oracles.Config{}), oracles.NewDifferential(oracles.Config{})}
	pod := func(restarts int) model.Object {
		return model.Object{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "cache-0", "namespace": "ns"},
			"status": map[string]any{"phase": "Running",
				"conditions":        []any{map[string]any{"type": "Ready", "status": "True"}},
				"containerStatuses": []any{map[string]any{"name": "valkey", "ready": true, "restartCount": restarts, "state": map[string]any{"running": map[string]any{}}}}}}
	}
	hist := &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/cache-0": pod(1)}}
	ref := &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/cache-0": pod(0)}}
	tr := func(kind model.StepKind) *model.Transition {
		return &model.Transition{Step: &model.Step{Kind: kind}, Curr: hist, Reference: ref}
	}
	// Judged by every oracle, the history's restart reads as new (no state before it).
	if fs := oracles.Run(context.Background(), all, tr(model.StepApply)); !hasOracle(fs, oracles.NameHealth) {
		t.Fatalf("the health oracle must see the restart in a transition without a previous state (else this test proves nothing): %+v", fs)
	}
	for _, f := range oracles.Run(context.Background(), judgesOf(model.StepDifferential, all), tr(model.StepDifferential)) {
		if f.Oracle != oracles.NameDifferential {
			t.Errorf("a differential step judged by %s: %s", f.Oracle, f.Summary)
		}
	}
	if got := judgesOf(model.StepApply, all); len(got) != len(all) {
		t.Errorf("an apply step is judged by %d of the %d oracles", len(got), len(all))
	}
}

func hasOracle(fs []model.Finding, name string) bool {
	for _, f := range fs {
		if f.Oracle == name {
			return true
		}
	}
	return false
}
