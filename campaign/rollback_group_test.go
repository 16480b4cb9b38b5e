package campaign

import (
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// TestRollbackAfterMisoperationOwnAlarm: the rollback after a misoperation is
// a valid step the harness does not re-judge a misoperation, so a failed
// rollback is an alarm group of its own, grouped by what failed: after two
// different misoperations the same failure is one alarm with two steps, not
// folded into (and hidden in) either misoperation's group.
func TestRollbackAfterMisoperationOwnAlarm(t *testing.T) {
	d0 := model.Object{"spec": map[string]any{"replicas": int64(3)}}
	d1 := model.Object{"spec": map[string]any{"replicas": int64(1000)}}
	res := &Result{}
	for i, cause := range []string{"replicas beyond the cluster's capacity", "the operator refuses spec.replicas"} {
		in := stepInput{worker: 0, index: 2 * i, kind: model.StepApply, testCase: "tc", misop: true, cause: cause, desired: d1, prevDesired: d0}
		rec := &StepRecord{Step: model.Step{Worker: 0, Index: 2 * i, Kind: model.StepApply, Misoperation: true}}
		back := rollbackInput(in, rec, nil, Cursor{})
		if back.misop || back.recovering == "" {
			t.Fatalf("rollback after %q: misop=%v recovering=%q, want a valid step recovering from it", cause, back.misop, back.recovering)
		}
		if back.harnessJudges() {
			t.Errorf("rollback after %q: the harness may judge it a misoperation (and fold it into the misoperation's group)", cause)
		}
		if back.recovering != cause || back.kind != model.StepRollback || !jsonEqual(back.desired, d0) {
			t.Errorf("rollback input %+v", back)
		}
		// The misoperation's own findings (one group per cause) and the rollback's,
		// flagged as session.run flags a step's findings.
		res.Findings = append(res.Findings,
			model.Finding{Oracle: oracles.NameHealth, Step: rec.ID(), Misoperation: true, Cause: cause, Signature: model.CauseSignature(cause), Severity: model.SeverityError},
			model.Finding{Oracle: "recovery", Step: (&model.Step{Worker: 0, Index: 2*i + 1}).ID(), Misoperation: back.misop,
				Signature: model.Signature("recovery", "StatefulSet", "spec.replicas"), Summary: "failed to roll back", Severity: model.SeverityError})
	}
	group(res)
	if got := res.Alarms(); got != 1 {
		t.Fatalf("%d alarm groups, want 1 (the failed rollback): %+v", got, res.Groups)
	}
	var alarm *AlarmGroup
	for _, g := range res.Groups {
		if !g.Misoperation {
			alarm = g
		}
	}
	if alarm.Oracle != "recovery" || len(alarm.Steps) != 2 {
		t.Errorf("alarm group %s with steps %v, want recovery on both rollbacks", alarm.Oracle, alarm.Steps)
	}
	if n := len(res.Groups) - res.Alarms(); n != 2 {
		t.Errorf("%d misoperation groups, want one per misoperation cause", n)
	}
}
