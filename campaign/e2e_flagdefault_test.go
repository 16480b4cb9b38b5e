package campaign

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/model"
)

// TestE2EFlagRemovedToDefault replays a case an untuned bench campaign raised
// as a consistency alarm: runAsNonRoot turned on (the operator's default
// already) and then removed, with no object changing either time. The
// removal is judged against a fresh creation of the same desired state, which
// equals the state reached: the previous value is the operator's default, a
// warning, not an alarm.
func TestE2EFlagRemovedToDefault(t *testing.T) {
	t.Parallel() // its own clusters and state root
	tg, prov := e2eSetup(t)
	tg.Properties = []string{"spec.containerSecurityContext", "spec.containerSecurityContext.runAsNonRoot"}
	out := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const id = "spec.containerSecurityContext.runAsNonRoot#boolean/flip"
	cfg := Config{Target: tg, Provider: prov, Workers: 1, Seed: 7, OutDir: out, Progress: testWriter{t}, Stability: time.Second,
		NoDifferential: true, NoMinimize: true, CaseFilter: func(tc *inputgen.TestCase) bool { return tc.ID == id }}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range res.Groups {
		t.Errorf("alarm: %s %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
	}
	recs, _, err := ReadJournal(filepath.Join(out, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	removed, warned := false, false
	for _, r := range recs {
		if r.Step == nil || r.Step.Kind != model.StepApply || r.Step.TestCase != id {
			continue
		}
		if _, set := get(r.Step.Desired, "spec", "containerSecurityContext", "runAsNonRoot").(bool); !set {
			removed = true
		}
		for _, f := range r.Step.Findings {
			warned = warned || f.Severity == model.SeverityWarning && f.Signature == model.Signature("removal-default", "spec.containerSecurityContext.runAsNonRoot")
		}
	}
	if !removed {
		t.Fatal("the case never removed runAsNonRoot: the removal was not exercised")
	}
	if !warned {
		t.Error("no warning says runAsNonRoot's removal kept the operator's default")
	}
}
