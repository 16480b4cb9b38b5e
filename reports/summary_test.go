package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testing/golden"
	"github.com/gauntlet-dev/gauntlet/model"
)

const summaryGolden = "testdata/summary.golden.json"

// TestSummaryGolden pins summary.json's shape: field order, indentation,
// durations in seconds. Run with -update after an intended change.
func TestSummaryGolden(t *testing.T) {
	got, err := MarshalSummary(sampleSummary())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, summaryGolden, got, *update)
}

func TestWriteReadSummaryRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in := sampleSummary()
	if err := WriteSummary(dir, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Times come back in their recorded zone, durations to the millisecond.
	a, _ := MarshalSummary(in)
	b, _ := MarshalSummary(out)
	if !bytes.Equal(a, b) {
		t.Fatalf("round trip changed the summary:\n%s", golden.Diff(string(a), string(b)))
	}
	if !out.Started.Equal(in.Started) || out.Seed != in.Seed || len(out.Alarms) != len(in.Alarms) {
		t.Fatalf("round trip lost fields: %+v", out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != SummaryFile {
		t.Fatalf("results folder holds %v, want only %s (no temporary file left)", entries, SummaryFile)
	}
}

func TestReadSummaryRejects(t *testing.T) {
	good, err := MarshalSummary(Summary{Target: "x"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		doc     string
		wantErr string
		is      error
	}{
		{"unknown field", strings.Replace(string(good), `"target"`, `"targget"`, 1), "unknown field", nil},
		{"newer format", strings.Replace(string(good), `"format": 2`, `"format": 99`, 1), "newer Gauntlet", ErrNewerSummary},
		{"trailing data", string(good) + "{}", "trailing data", nil},
		{"not json", "nope", "decode summary", nil},
		{"bad duration", strings.Replace(string(good), `"meanSeconds": 0`, `"meanSeconds": "1s"`, 1), "seconds", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadSummary(dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ReadSummary = %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %v is not %v", err, tc.is)
			}
		})
	}
	if _, err := ReadSummary(t.TempDir()); err == nil || !strings.Contains(err.Error(), "results folder") {
		t.Fatalf("missing summary: %v", err)
	}
}

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		d    time.Duration
		json string
	}{
		{0, "0"},
		{1500 * time.Millisecond, "1.5"},
		{90 * time.Second, "90"},
		{1234567 * time.Microsecond, "1.235"},
		{-2 * time.Second, "-2"},
	}
	for _, tc := range tests {
		b, err := json.Marshal(Duration(tc.d))
		if err != nil || string(b) != tc.json {
			t.Errorf("marshal %v = %s, %v; want %s", tc.d, b, err, tc.json)
		}
		var back Duration
		if err := json.Unmarshal(b, &back); err != nil || back.D() != tc.d.Round(time.Millisecond) {
			t.Errorf("unmarshal %s = %v, %v", b, back.D(), err)
		}
	}
	for _, bad := range []string{`"1s"`, `null`, `1e300`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("unmarshal %s accepted", bad)
		}
	}
}

func TestBuild(t *testing.T) {
	s := Build(sampleInput())
	if s.StepsDone != 24 || s.StepsPlanned != 26 || s.Workers != 2 || s.Seed != 42 {
		t.Fatalf("header: done %d planned %d workers %d seed %d", s.StepsDone, s.StepsPlanned, s.Workers, s.Seed)
	}
	if len(s.Alarms) != 5 || len(s.Misoperations) != 1 {
		t.Fatalf("alarms %d misoperations %d, want 5 and 1", len(s.Alarms), len(s.Misoperations))
	}
	wantOracles := []OracleCount{
		{Oracle: "consistency", Findings: 5, Groups: 2},
		{Oracle: "differential", Findings: 1, Groups: 1},
		{Oracle: "health", MisoperationFindings: 1, MisoperationGroups: 1},
		{Oracle: "recovery", Findings: 1, Groups: 1},
		{Oracle: "stability", Findings: 1, Groups: 1},
	}
	if !reflect.DeepEqual(s.Oracles, wantOracles) {
		t.Errorf("oracles = %+v\nwant %+v", s.Oracles, wantOracles)
	}
	// Coverage: every property but spec.tls.enabled; rollback, fault and
	// differential steps do not count.
	if s.Coverage.Total != 9 || s.Coverage.Covered != 8 {
		t.Errorf("coverage %d/%d, want 8/9", s.Coverage.Covered, s.Coverage.Total)
	}
	for _, p := range s.Coverage.Properties {
		switch p.Path {
		case "spec.tls.enabled":
			if p.Covered() {
				t.Errorf("spec.tls.enabled covered by %v", p.Steps)
			}
		case "spec.exporter.enabled":
			if want := []string{"w0/s3", "w0/s4", "w1/s5", "w1/s6"}; !reflect.DeepEqual(p.Steps, want) {
				t.Errorf("spec.exporter.enabled steps = %v, want %v (rollbacks excluded, step order)", p.Steps, want)
			}
			if want := []string{"exporter-off", "exporter-on"}; !reflect.DeepEqual(p.TestCases, want) {
				t.Errorf("test cases = %v, want %v", p.TestCases, want)
			}
		case "spec.config":
			// Covered through its test case although no step changed the path itself.
			if !p.Covered() {
				t.Errorf("spec.config not covered through test case config-maxmemory")
			}
		}
	}
	if len(s.Timeline) != 24 {
		t.Fatalf("timeline has %d entries", len(s.Timeline))
	}
	for i := 1; i < len(s.Timeline); i++ {
		if s.Timeline[i].Started.Before(s.Timeline[i-1].Started) {
			t.Fatalf("timeline not sorted by start at %d", i)
		}
	}
	byID := map[string]TimelineEntry{}
	for _, e := range s.Timeline {
		byID[e.ID()] = e
	}
	if e := byID["w0/s5"]; e.Findings != 2 || e.Kind != model.StepRollback {
		t.Errorf("w0/s5 = %+v, want a rollback with 2 findings", e)
	}
	if e := byID["w0/s7"]; !e.TimedOut || e.Converge != 0 || !e.Misoperation {
		t.Errorf("w0/s7 = %+v, want a timed-out misoperation", e)
	}
	if e := byID["w1/s2"]; e.Converge.D() != 58*time.Second {
		t.Errorf("w1/s2 converge = %v", e.Converge)
	}
	if s.TransitionsPerHour <= 0 {
		t.Errorf("transitions per hour = %v", s.TransitionsPerHour)
	}
	if o := s.HarnessOverhead; o.Steps != 24 || o.P50 > o.P95 || o.P95 > o.Max || o.Mean <= 0 {
		t.Errorf("overhead = %+v", o)
	}
}

func TestBuildFaultsAndAvailability(t *testing.T) {
	s := Build(sampleInput())
	if s.FaultSteps != 5 || s.FaultsUnsupported != 1 {
		t.Errorf("fault steps %d, unsupported %d; want 5 and 1", s.FaultSteps, s.FaultsUnsupported)
	}
	if s.MinAvailability == nil || *s.MinAvailability != 0.625 || s.MinAvailabilityStep != "w1/s9" || s.MinAvailabilityRequests != 40 {
		t.Errorf("min availability %v at %q over %d, want 0.625 at w1/s9 over 40", s.MinAvailability, s.MinAvailabilityStep, s.MinAvailabilityRequests)
	}
	byID := map[string]TimelineEntry{}
	for _, e := range s.Timeline {
		byID[e.ID()] = e
	}
	part := byID["w0/s9"]
	if len(part.Faults) != 1 {
		t.Fatalf("w0/s9 faults = %+v, want the held partition", part.Faults)
	}
	if f := part.Faults[0]; f.Kind != "partition" || !f.Persistent || f.Held() != 8*time.Second || !reflect.DeepEqual(f.Targets, []string{"replica gauntlet-w0/vk-2"}) {
		t.Errorf("w0/s9 fault = %+v (held %v)", f, f.Held())
	}
	if e := byID["w1/s5"]; len(e.Faults) != 1 || e.Faults[0].Unsupported == "" || e.Faults[0].Held() != 0 {
		t.Errorf("w1/s5 faults = %+v, want one unsupported fault", e.Faults)
	}
	if e := byID["w0/s7"]; e.MisoperationReason == "" || !e.Misoperation {
		t.Errorf("w0/s7 = %+v, want a misoperation with the harness's reason", e)
	}
	if e := byID["w0/s0"]; e.Availability != nil || e.Requests != 0 || e.Faults != nil {
		t.Errorf("w0/s0 = %+v, want no workload and no fault", e)
	}

	// Rates are sanitized (JSON has no NaN), the earliest step wins a tie,
	// and a campaign without workload or fault writes none of the fields.
	rate := func(f float64) *float64 { return &f }
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	tests := []struct {
		name     string
		rates    []*float64
		wantMin  *float64
		wantStep string
	}{
		{"none", []*float64{nil, nil}, nil, ""},
		{"nan ignored", []*float64{rate(math.NaN()), rate(0.5)}, rate(0.5), "w0/s1"},
		{"infinity ignored", []*float64{rate(math.Inf(-1)), nil}, nil, ""},
		{"clamped", []*float64{rate(1.5), rate(-0.25)}, rate(0), "w0/s1"},
		{"earliest on a tie", []*float64{rate(0.7), rate(0.9), rate(0.7)}, rate(0.7), "w0/s0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := BuildInput{Target: "t", Started: t0}
			for i, r := range tc.rates {
				in.Steps = append(in.Steps, StepRecord{Step: model.Step{Index: i, Kind: model.StepApply, Started: at(i)}, Availability: r, Requests: 10})
			}
			s := Build(in)
			if (s.MinAvailability == nil) != (tc.wantMin == nil) || (s.MinAvailability != nil && *s.MinAvailability != *tc.wantMin) || s.MinAvailabilityStep != tc.wantStep {
				t.Errorf("min availability %v at %q, want %v at %q", deref(s.MinAvailability), s.MinAvailabilityStep, deref(tc.wantMin), tc.wantStep)
			}
			b, err := MarshalSummary(s)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if tc.wantMin == nil && (bytes.Contains(b, []byte(`"minAvailability`)) || bytes.Contains(b, []byte(`"faultSteps"`))) {
				t.Errorf("summary without workload or fault carries their fields:\n%s", b)
			}
			for _, e := range s.Timeline {
				if e.Availability != nil && (*e.Availability < 0 || *e.Availability > 1) {
					t.Errorf("%s availability %v outside 0..1", e.ID(), *e.Availability)
				}
			}
		})
	}
	// A rate set by hand on a summary is sanitized when written, without
	// touching the caller's timeline.
	hand := Summary{Target: "t", Timeline: []TimelineEntry{{Availability: rate(math.NaN())}}, MinAvailability: rate(math.Inf(1))}
	b, err := MarshalSummary(hand)
	if err != nil {
		t.Fatalf("marshal a summary with NaN availability: %v", err)
	}
	if bytes.Contains(b, []byte("availability")) || hand.Timeline[0].Availability == nil {
		t.Errorf("NaN availability written or caller's timeline changed:\n%s", b)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestReadSummaryOlderFormat(t *testing.T) {
	// A format-1 summary (before faults and availability) still reads.
	b, err := MarshalSummary(Build(BuildInput{Target: "old", Steps: []StepRecord{{Step: model.Step{Kind: model.StepSeed, Started: t0}}}}))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"format": 2`), []byte(`"format": 1`), 1)
	s, err := UnmarshalSummary(b)
	if err != nil || s.Format != 1 || s.Target != "old" || len(s.Timeline) != 1 {
		t.Fatalf("read format 1: %+v, %v", s, err)
	}
}

func TestBuildEmpty(t *testing.T) {
	s := Build(BuildInput{Target: "t"})
	b, err := MarshalSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"alarms": []`, `"misoperations": []`, `"timeline": []`, `"oracles": []`, `"properties": []`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("empty summary lacks %s:\n%s", want, b)
		}
	}
	if bytes.Contains(b, []byte(`"finished"`)) {
		t.Errorf("an unfinished campaign writes a finished time:\n%s", b)
	}
	if s.Coverage.Percent() != 100 || s.TransitionsPerHour != 0 {
		t.Errorf("empty coverage %v%%, rate %v", s.Coverage.Percent(), s.TransitionsPerHour)
	}
}

func TestOverheadStats(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		in   []time.Duration
		want Overhead
	}{
		{nil, Overhead{}},
		{ms(500), Overhead{Steps: 1, Mean: Duration(500 * time.Millisecond), P50: Duration(500 * time.Millisecond), P95: Duration(500 * time.Millisecond), Max: Duration(500 * time.Millisecond)}},
		{ms(400, 100, 300, 200), Overhead{Steps: 4, Mean: Duration(250 * time.Millisecond), P50: Duration(200 * time.Millisecond), P95: Duration(400 * time.Millisecond), Max: Duration(400 * time.Millisecond)}},
	}
	for _, tc := range tests {
		if got := OverheadStats(tc.in); got != tc.want {
			t.Errorf("OverheadStats(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestBuildEffectiveCoverage checks the second coverage figure: a property
// counts as effectively changed only when an executed step's test case changes
// its effective value (naming it, e.g. setting its default, is not enough).
func TestBuildEffectiveCoverage(t *testing.T) {
	in := sampleInput()
	for i := range in.Properties {
		switch in.Properties[i].Path {
		case "spec.image":
			in.Properties[i].Effective = []string{"image-8.0"}
		case "spec.exporter.enabled":
			// exporter-on ran; exporter-off only set the default.
			in.Properties[i].Effective = []string{"exporter-on"}
		case "spec.tls.enabled":
			in.Properties[i].Effective = []string{"tls-on"} // never ran
		}
	}
	in.HeldBack = []HeldBack{{ID: "replicas-1000", Reason: "beyond the test cluster's capacity"}}
	s := Build(in)
	if len(s.HeldBack) != 1 || s.HeldBack[0].ID != "replicas-1000" {
		t.Errorf("held back: %+v", s.HeldBack)
	}
	if s.Coverage.Covered != 8 || s.Coverage.Effective != 2 {
		t.Fatalf("coverage: %d named, %d effective; want 8 and 2", s.Coverage.Covered, s.Coverage.Effective)
	}
	for _, p := range s.Coverage.Properties {
		want := p.Path == "spec.image" || p.Path == "spec.exporter.enabled"
		if p.Effective != want {
			t.Errorf("%s effective = %v, want %v", p.Path, p.Effective, want)
		}
	}
	var html strings.Builder
	if err := WriteHTML(&html, s, Details{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "2 effectively changed") {
		t.Error("report.html does not show the effective coverage figure")
	}
	if !strings.Contains(html.String(), "replicas-1000: beyond the test cluster") {
		t.Error("report.html does not say which case was held back and why")
	}
}
