package campaign

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestResolveBaseAccumulated is the bundled operator's seed 1 (8 minutes, 2
// workers): an earlier case had set podDisruptionBudget.maxUnavailable 2, and
// the plan's valid case replicas 2 (solved against the seed) was refused by
// the CEL rule "maxUnavailable must be less than replicas". Re-solved on the
// accumulated state, the case lands where maxUnavailable is the seed's, and
// every state it declares is accepted.
func TestResolveBaseAccumulated(t *testing.T) {
	tg, err := targets.Valkey("..")
	if err != nil {
		t.Fatal(err)
	}
	s, err := tg.Schema()
	if err != nil {
		t.Fatal(err)
	}
	v, err := inputgen.NewLocalValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	seed := jsonv.CopyMap(tg.Seed)
	spec := seed["spec"].(map[string]any)
	spec["replicas"] = int64(3)
	delete(spec, "podDisruptionBudget")
	acc := jsonv.CopyMap(seed)
	acc["spec"].(map[string]any)["podDisruptionBudget"] = map[string]any{"maxUnavailable": int64(2)}
	acc["spec"].(map[string]any)["config"] = map[string]any{"maxmemory": "100mb"}
	tc := &inputgen.TestCase{ID: "replicas-2", Label: inputgen.Valid, Property: "spec.replicas",
		Steps: []inputgen.Step{{Changes: []inputgen.Change{{Op: inputgen.OpSet, Path: "/spec/replicas", Value: int64(2)}}}}}
	ctx := context.Background()
	if n, err := invalidStates(ctx, v, tc, acc, acc); err != nil || n != 1 {
		t.Fatalf("the recorded case: %d refused states (err %v), want 1", n, err)
	}
	base, reverted := resolveBase(ctx, v, tc, acc, seed)
	if !slices.Equal(reverted, []string{"spec.podDisruptionBudget"}) {
		t.Fatalf("reverted %v, want the earlier case's maxUnavailable", reverted)
	}
	if n, _ := invalidStates(ctx, v, tc, base, acc); n != 0 {
		t.Errorf("the re-solved case still has %d refused states", n)
	}
	if got := get(base, "spec", "config", "maxmemory"); got != "100mb" {
		t.Errorf("an unrelated accumulated value was lost: config.maxmemory = %v", got)
	}
	if _, ok := valueAt(acc, "spec.podDisruptionBudget.maxUnavailable"); !ok {
		t.Error("resolveBase modified the accumulated state it was given")
	}
	// A state valid where it lands is left alone; so is a misoperation.
	ok := &inputgen.TestCase{ID: "replicas-4", Label: inputgen.Valid,
		Steps: []inputgen.Step{{Changes: []inputgen.Change{{Op: inputgen.OpSet, Path: "/spec/replicas", Value: int64(4)}}}}}
	if _, r := resolveBase(ctx, v, ok, acc, seed); r != nil {
		t.Errorf("a valid landing was re-solved: %v", r)
	}
	mis := *tc
	mis.Label = inputgen.Misoperation
	if _, r := resolveBase(ctx, v, &mis, acc, seed); r != nil {
		t.Errorf("a misoperation was re-solved: %v", r)
	}
	// Wired into the runner: the bundled target's CRD is read once.
	r := &runner{cfg: Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, target: tg, base: seed, val: &validator{}}
	if got := r.landOn(ctx, 0, tc, acc); get(got, "spec", "podDisruptionBudget", "maxUnavailable") != nil {
		t.Errorf("landOn kept maxUnavailable: %v", get(got, "spec"))
	}
}

// TestRefusedRecreationLeavesNoCR is the third-party operator's night 2: a
// re-creating test case whose create the API server refused had deleted the
// CR, and the worker went on with no CR at all (the next case built the
// system from scratch). Such a step must be rolled back (D(i-1) re-created,
// the seed when that is refused too), a refused update must not.
func TestRefusedRecreationLeavesNoCR(t *testing.T) {
	prev := model.Object{"spec": map[string]any{"shards": int64(3)}}
	d := model.Object{"spec": map[string]any{"shards": int64(3), "persistence": map[string]any{"size": "1Gi"}}}
	seed := model.Object{"spec": map[string]any{"shards": int64(1)}}
	refused := &StepRecord{Current: prev}
	if !leftWithoutCR(stepInput{kind: model.StepRecreate, recreate: true, desired: d, prevDesired: prev}, refused) {
		t.Error("a refused re-creation left no CR: it must be rolled back")
	}
	if leftWithoutCR(stepInput{kind: model.StepApply, desired: d, prevDesired: prev}, refused) {
		t.Error("a refused update leaves D(i-1) in place: nothing to restore")
	}
	if leftWithoutCR(stepInput{kind: model.StepRecreate, recreate: true, desired: d, prevDesired: prev}, &StepRecord{Current: d}) {
		t.Error("an accepted re-creation holds D")
	}
	// Its rollback re-creates D(i-1); refused too, the worker goes back to the seed.
	if !fallBackToSeed(&StepRecord{Current: d}, prev, seed) {
		t.Error("a refused re-creation of D(i-1) must fall back to the seed")
	}
}
