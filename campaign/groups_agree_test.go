package campaign

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// TestGroupsAgree: the campaign's result (its exit status and progress line),
// summary.json and report.html count the same groups and number them alike —
// warnings, findings without a signature and misoperations included (the
// campaign and the reports grouped separately and disagreed: 31 vs 30).
func TestGroupsAgree(t *testing.T) {
	E, W := model.SeverityError, model.SeverityWarning
	cause := "replicas beyond the cluster's capacity"
	res := &Result{Findings: []model.Finding{
		{Oracle: "consistency", Signature: "consistency-a", Step: "w0/s5", Severity: E, Summary: "a"},
		{Oracle: "apply", Signature: "apply-refused", Step: "w0/s2", Severity: W, Summary: "refused"},
		{Oracle: "custom", Step: "w0/s3", Severity: E, Summary: "x"},
		{Oracle: "custom", Step: "w1/s3", Severity: E, Summary: "y"},
		{Oracle: "health", Step: "w1/s1", Severity: E, Misoperation: true, Cause: cause, Signature: model.CauseSignature(cause), Summary: "pending"},
		{Oracle: "consistency", Signature: "consistency-a", Step: "w1/s7", Severity: E, Summary: "a again"},
	}}
	group(res)
	sum := reports.Build(reports.BuildInput{CampaignID: "c", Findings: res.Findings})
	if res.Alarms() != len(sum.Alarms) || len(res.Groups)-res.Alarms() != len(sum.Misoperations) {
		t.Fatalf("result: %d alarm and %d misoperation groups; summary.json: %d and %d",
			res.Alarms(), len(res.Groups)-res.Alarms(), len(sum.Alarms), len(sum.Misoperations))
	}
	if res.Alarms() != 3 || len(sum.Warnings) != 1 {
		t.Errorf("%d alarm groups, %d warning groups; want 3 (a, x, y) and 1", res.Alarms(), len(sum.Warnings))
	}
	byID := map[int]*AlarmGroup{}
	for _, g := range res.Groups {
		byID[g.ID] = g
	}
	for _, g := range append(append([]reports.AlarmGroup{}, sum.Alarms...), sum.Misoperations...) {
		cg := byID[g.ID]
		if cg == nil || cg.Signature != g.Signature || cg.Misoperation != g.Misoperation || len(cg.Steps) != len(g.Steps) {
			t.Errorf("summary group %d (%s) has no like campaign group: %+v", g.ID, g.Signature, cg)
		}
	}
	var b bytes.Buffer
	if err := reports.WriteHTML(&b, sum, reports.Details{Findings: res.Findings}); err != nil {
		t.Fatal(err)
	}
	for label, want := range map[string]string{"alarm groups": "3", "misoperation groups": "1", "warning groups": "1"} {
		re := regexp.MustCompile(`<span class="value">(\d+)</span><span class="label">` + label + `<`)
		m := re.FindStringSubmatch(b.String())
		if m == nil || m[1] != want {
			t.Errorf("report.html %s: %v, want %s", label, m, want)
		}
	}
}
