package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestResumedRates: a resumed campaign's rates count every run's steps over
// every run's time (Active), not over its last run's start to its end.
func TestResumedRates(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var steps []StepRecord
	for i := range 30 {
		steps = append(steps, StepRecord{Step: model.Step{Worker: 0, Index: i, Kind: model.StepApply, Started: t0.Add(time.Duration(i) * time.Minute)}})
	}
	// 10 minutes one night, 5 the next: the last run began 24 h after the first.
	in := BuildInput{CampaignID: "c", Started: t0.Add(24 * time.Hour), Finished: t0.Add(24*time.Hour + 5*time.Minute), Steps: steps, Active: 15 * time.Minute}
	s := Build(in)
	if s.TransitionsPerHour != 120 {
		t.Errorf("transitions/hour = %v, want 120 (30 over 15 minutes)", s.TransitionsPerHour)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, s, Details{}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"(15m00s)", ">120.0<"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// A summary from before Active existed: Finished minus Started.
	in.Active = 0
	if s := Build(in); s.TransitionsPerHour != 360 || s.RunTime() != 5*time.Minute {
		t.Errorf("without Active: %v/h over %v, want 360/h over 5m", s.TransitionsPerHour, s.RunTime())
	}
}

// TestOlderSummaryWarnings: a summary written when warning groups sat among the
// alarms reads back with them in Warnings, so its alarm count is the alarms'.
func TestOlderSummaryWarnings(t *testing.T) {
	doc := `{"format": 2, "campaignId": "c", "target": "t", "seed": 1, "started": "2026-01-02T03:00:00Z", "workers": 1,
		"stepsPlanned": 1, "stepsDone": 1, "oracles": [],
		"alarms": [{"signature": "a", "oracle": "consistency", "severity": "error", "summary": "s", "count": 1, "steps": ["w0/s1"]},
		           {"signature": "w", "oracle": "apply", "severity": "warning", "summary": "refused", "count": 1, "steps": ["w0/s2"]}],
		"misoperations": [], "coverage": {"properties": [], "covered": 0, "total": 0}, "transitionsPerHour": 0,
		"harnessOverhead": {"steps": 0}, "timeline": []}`
	s, err := UnmarshalSummary([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Alarms) != 1 || s.Alarms[0].Signature != "a" || len(s.Warnings) != 1 || s.Warnings[0].Signature != "w" {
		t.Errorf("alarms %+v, warnings %+v", s.Alarms, s.Warnings)
	}
}
