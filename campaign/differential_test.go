package campaign

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/targets"
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

func TestDifferentialRefusedOnCreate(t *testing.T) {
	dir := t.TempDir()
	j, _, err := OpenJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r := &runner{dir: dir, journal: j, target: &targets.Target{}, oracles: []oracles.Oracle{oracles.NewDifferential(oracles.Config{})}}
	hist := &model.Snapshot{Objects: map[string]model.Object{"/v1/Pod/ns/db-1": {"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "db-1", "namespace": "ns"}}}}
	d := model.Object{"spec": map[string]any{"projectedVolumeTemplate": map[string]any{"defaultMode": 2}}}
	in := stepInput{worker: 0, index: 5, kind: model.StepDifferential, testCase: "differential:x", desired: d, prevDesired: d, prevID: "w0/s3",
		reference: &model.Snapshot{Objects: map[string]model.Object{}}}
	// Without the refusal, S(i) against an empty namespace: an alarm per object.
	rec, err := r.judgeOnly(context.Background(), in, hist)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Findings) == 0 || rec.Findings[0].Severity == model.SeverityWarning {
		t.Fatalf("an empty reference must raise an alarm (else this test proves nothing): %+v", rec.Findings)
	}
	in.index, in.reference, in.refusal = 6, nil, errors.New(`Cluster "example" is invalid: spec.projectedVolumeTemplate.sources: Invalid value: "null"`)
	rec, err = r.judgeOnly(context.Background(), in, hist)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Findings) != 1 || rec.Findings[0].Severity != model.SeverityWarning || !strings.Contains(rec.Findings[0].Summary, "refused as a new object") ||
		!strings.Contains(rec.Findings[0].Summary, "w0/s3") || !strings.Contains(rec.Findings[0].Summary, "sources") {
		t.Errorf("refused on creation: %+v, want one warning naming the step and the refusal", rec.Findings)
	}
}
