package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

func TestBuildTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []StepRecord{
		{Step: model.Step{Worker: 0, Index: 0, Kind: model.StepSeed, Started: t0, Time: model.StepTime{model.PhaseApply: 1000, model.PhaseConverge: 9000}}},
		{Step: model.Step{Worker: 0, Index: 1, Kind: model.StepApply, Started: t0, Time: model.StepTime{model.PhaseApply: 500, model.PhaseQuiet: 3000, model.PhaseStability: 2000, "newPhase": 500}}},
		{Step: model.Step{Worker: 0, Index: 2, Kind: model.StepFault, Started: t0, Time: model.StepTime{model.PhaseFaultHold: 8000, model.PhaseQuiet: 3000}}},
		{Step: model.Step{Worker: 0, Index: 3, Kind: model.StepApply, Started: t0}}, // recorded before phases existed
	}
	s := Build(BuildInput{Started: t0, Finished: t0.Add(6 * time.Minute), Budget: 8 * time.Minute, Steps: steps,
		Time: CampaignTime{Setup: 40 * time.Second, Backoff: 12 * time.Second, BackoffWaits: 3}})
	tm := s.Time
	if tm == nil {
		t.Fatal("no time breakdown")
	}
	if tm.Steps.D() != 27*time.Second || tm.Setup.D() != 40*time.Second || tm.Backoff.D() != 12*time.Second || tm.BackoffWaits != 3 || tm.BudgetUnused.D() != 2*time.Minute {
		t.Errorf("totals = %+v", tm)
	}
	var names []string
	var sum time.Duration
	for _, p := range tm.Phases {
		names = append(names, p.Name)
		sum += p.Total.D()
	}
	// Known phases in a step's order, then unknown ones.
	if got := strings.Join(names, ","); got != "apply,faultHold,converge,quiet,stability,newPhase" {
		t.Errorf("phase order %s", got)
	}
	if sum != tm.Steps.D() {
		t.Errorf("phases add up to %s, steps %s", sum, tm.Steps.D())
	}
	for _, p := range tm.Phases {
		if p.Name == model.PhaseQuiet && (p.Total.D() != 6*time.Second || p.Steps != 2 || p.Share != 0.222) {
			t.Errorf("quiet = %+v", p)
		}
	}
	if len(tm.Kinds) != 3 || tm.Kinds[0].Name != "fault" || tm.Kinds[0].Total.D() != 11*time.Second || tm.Kinds[2].Name != "apply" {
		t.Errorf("kinds = %+v", tm.Kinds)
	}
	b, err := MarshalSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalSummary(b)
	if err != nil || back.Time == nil || back.Time.Steps != tm.Steps || len(back.Time.Phases) != len(tm.Phases) {
		t.Errorf("summary.json round trip lost the breakdown: %v, %+v", err, back.Time)
	}
	if !bytes.Contains(b, []byte(`"budgetUnusedSeconds": 120`)) {
		t.Errorf("summary.json lacks the unused budget:\n%s", b)
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, s, Details{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="time"`, "Where the time went", "faultHold", "40s", "3 iteration(s) waited 12s", "2m00s of the budget left unused"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// No phases recorded: no section, no field.
	s = Build(BuildInput{Started: t0, Steps: steps[3:]})
	if s.Time != nil {
		t.Errorf("a summary without phases has a breakdown: %+v", s.Time)
	}
	b, _ = MarshalSummary(s)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if _, ok := m["time"]; ok {
		t.Error("summary.json has a time field without phases")
	}
}
