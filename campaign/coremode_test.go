package campaign

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestCoreCheckMode: with a shard, auto requires the check, so no shard silently plans without
// it while another plans with it.
func TestCoreCheckMode(t *testing.T) {
	shard := Shard{Index: 2, Count: 3}
	tests := []struct {
		mode  string
		shard Shard
		want  string
		err   error
	}{
		{"auto", Shard{}, CoreCheckAuto, nil},
		{"", Shard{}, CoreCheckAuto, nil},
		{"auto", shard, CoreCheckOn, nil},
		{"on", Shard{}, CoreCheckOn, nil},
		{"off", shard, CoreCheckOff, nil},
		{"maybe", Shard{}, "", ErrCoreCheckMode},
	}
	for _, tt := range tests {
		got, err := CoreCheckMode(tt.mode, tt.shard)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("CoreCheckMode(%q, %s) = %q, %v; want %q, %v", tt.mode, tt.shard, got, err, tt.want, tt.err)
		}
	}
}

// TestCheckCoreValidationOnResume: a resume keeps the recorded plan; an explicit request for the
// other kind of plan is refused, and the journal's record survives a round trip.
func TestCheckCoreValidationOnResume(t *testing.T) {
	dir := t.TempDir()
	j, _, err := OpenJournal(dir + "/journal.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Record{Type: RecStart, Start: &StartRecord{Target: "builtin:valkey", Seed: 1, Workers: 1,
		Assignments: [][]string{{"a"}}, Planned: 1, CoreValidated: true}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _, err := ReadJournal(dir + "/journal.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	checked, _, err := Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	if !checked.CoreValidated {
		t.Fatal("the journal lost coreValidated")
	}
	unchecked := &StartRecord{}
	tests := []struct {
		start *StartRecord
		mode  string
		given bool
		err   error
	}{
		{checked, "auto", false, nil},
		{checked, "off", false, nil}, // the default value, not passed: the recorded plan runs
		{checked, "auto", true, nil},
		{checked, "on", true, nil},
		{checked, "off", true, ErrCoreCheckMismatch},
		{unchecked, "off", true, nil},
		{unchecked, "on", true, ErrCoreCheckMismatch},
		{unchecked, "auto", true, nil},
		{unchecked, "sometimes", true, ErrCoreCheckMode},
	}
	for _, tt := range tests {
		err := CheckCoreValidation(tt.start, tt.mode, tt.given)
		if !errors.Is(err, tt.err) {
			t.Errorf("recorded %v, --validate-core=%s (given %v): err %v, want %v", tt.start.CoreValidated, tt.mode, tt.given, err, tt.err)
		}
	}
}

// countingValidator accepts every object and counts the questions (a unit-test stand-in: the
// real API server's verdicts are tested end to end in inputgen).
type countingValidator struct{ asked atomic.Int64 }

func (v *countingValidator) Validate(context.Context, map[string]any) (string, error) {
	v.asked.Add(1)
	return "", nil
}

// TestSelectCasesUsesCoreValidator: the dry run and the campaign plan with the configured
// validator (gauntlet run --validate-core), and the plan says so.
func TestSelectCasesUsesCoreValidator(t *testing.T) {
	tg := valkeyTarget(t)
	v := &countingValidator{}
	plan, _, err := SelectCases(context.Background(), Config{Target: tg, Seed: 1, Plan: PlanOptions{CoreValidator: v}})
	if err != nil {
		t.Fatal(err)
	}
	if v.asked.Load() == 0 || plan.Stats.Core == nil || plan.Stats.Core.Checked == 0 {
		t.Errorf("validator asked %d times, plan core stats %+v: want the plan judged by it", v.asked.Load(), plan.Stats.Core)
	}
}
