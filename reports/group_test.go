package reports

import (
	"reflect"
	"testing"

	"github.com/gauntlet-dev/gauntlet/model"
)

func TestGroup(t *testing.T) {
	f := func(oracle, sig, step string, misop bool, sev model.Severity, summary string) model.Finding {
		return model.Finding{Oracle: oracle, Signature: sig, Step: step, Misoperation: misop, Severity: sev, Summary: summary,
			Evidence: []model.Evidence{{Path: "spec." + summary}}}
	}
	E, W := model.SeverityError, model.SeverityWarning
	type group struct {
		sig   string
		misop bool
		steps []string
		count int
		sum   string
		sev   model.Severity
	}
	tests := []struct {
		name string
		in   []model.Finding
		want []group
	}{
		{name: "none", in: nil, want: nil},
		{
			name: "one bug on many steps is one group, first seen by step order not input order",
			in: []model.Finding{
				f("consistency", "c-1", "w1/s12", false, E, "late"),
				f("consistency", "c-1", "w0/s3", false, E, "first"),
				f("consistency", "c-1", "w1/s3", false, E, "same index, later worker"),
			},
			want: []group{{sig: "c-1", steps: []string{"w0/s3", "w1/s3", "w1/s12"}, count: 3, sum: "first", sev: E}},
		},
		{
			name: "a step counted once even when it fires twice",
			in: []model.Finding{
				f("health", "h-1", "w0/s2", false, E, "a"),
				f("health", "h-1", "w0/s2", false, E, "b"),
			},
			want: []group{{sig: "h-1", steps: []string{"w0/s2"}, count: 2, sum: "a", sev: E}},
		},
		{
			name: "warnings apart from alarms, after every alarm and misoperation",
			in: []model.Finding{
				f("health", "h-1", "w0/s1", false, W, "a warning"),
				f("health", "h-1", "w0/s2", false, E, "an alarm"),
				f("health", "h-2", "w0/s3", true, E, "misop"),
			},
			want: []group{
				{sig: "h-1", steps: []string{"w0/s2"}, count: 1, sum: "an alarm", sev: E},
				{sig: "h-2", misop: true, steps: []string{"w0/s3"}, count: 1, sum: "misop", sev: E},
				{sig: "h-1", steps: []string{"w0/s1"}, count: 1, sum: "a warning", sev: W},
			},
		},
		{
			name: "misoperations apart from bugs, after them, even with the same signature",
			in: []model.Finding{
				f("health", "h-1", "w0/s1", true, E, "misop"),
				f("health", "h-1", "w0/s9", false, E, "bug"),
				f("consistency", "c-2", "w0/s4", false, E, "bug2"),
			},
			want: []group{
				{sig: "c-2", steps: []string{"w0/s4"}, count: 1, sum: "bug2", sev: E},
				{sig: "h-1", steps: []string{"w0/s9"}, count: 1, sum: "bug", sev: E},
				{sig: "h-1", misop: true, steps: []string{"w0/s1"}, count: 1, sum: "misop", sev: E},
			},
		},
		{
			name: "ties on the first step break by signature",
			in: []model.Finding{
				f("stability", "z", "w0/s5", false, E, "z"),
				f("consistency", "a", "w0/s5", false, E, "a"),
			},
			want: []group{
				{sig: "a", steps: []string{"w0/s5"}, count: 1, sum: "a", sev: E},
				{sig: "z", steps: []string{"w0/s5"}, count: 1, sum: "z", sev: E},
			},
		},
		{
			name: "malformed step ids sort last",
			in: []model.Finding{
				f("custom", "x", "weird", false, E, "x"),
				f("custom", "y", "w3/s40", false, E, "y"),
			},
			want: []group{
				{sig: "y", steps: []string{"w3/s40"}, count: 1, sum: "y", sev: E},
				{sig: "x", steps: []string{"weird"}, count: 1, sum: "x", sev: E},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := Group(tc.in)
			var got []group
			for _, g := range gs {
				got = append(got, group{sig: g.Signature, misop: g.Misoperation, steps: g.Steps, count: g.Count, sum: g.Summary, sev: g.Severity})
				if len(g.Evidence) != 1 || g.Evidence[0].Path != "spec."+g.Summary {
					t.Errorf("group %s evidence %v is not the first finding's", g.Signature, g.Evidence)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Group =\n%+v\nwant\n%+v", got, tc.want)
			}
			// Deterministic whatever the input order.
			rev := append([]model.Finding(nil), tc.in...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			var again []string
			for _, g := range Group(rev) {
				again = append(again, g.Signature)
			}
			var first []string
			for _, g := range gs {
				first = append(first, g.Signature)
			}
			if !reflect.DeepEqual(first, again) {
				t.Errorf("order depends on input order: %v vs %v", first, again)
			}
		})
	}
}

func TestGroupWithoutSignature(t *testing.T) {
	gs := Group([]model.Finding{
		{Oracle: "custom", Summary: "same", Step: "w0/s1"},
		{Oracle: "custom", Summary: "same", Step: "w0/s2"},
		{Oracle: "custom", Summary: "other", Step: "w0/s3"},
	})
	if len(gs) != 2 || gs[0].Count != 2 || gs[0].Signature == "" {
		t.Fatalf("findings without signature: %+v", gs)
	}
}

func TestSplitGroups(t *testing.T) {
	bugs, mis, warn := SplitGroups([]AlarmGroup{{Signature: "a"}, {Signature: "b", Misoperation: true}, {Signature: "c"}, {Signature: "d", Severity: model.SeverityWarning}})
	if len(bugs) != 2 || bugs[1].Signature != "c" || len(mis) != 1 || mis[0].Signature != "b" || len(warn) != 1 || warn[0].Signature != "d" {
		t.Fatalf("SplitGroups = %v, %v, %v", bugs, mis, warn)
	}
}

func TestCompareSteps(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"w0/s1", "w0/s2", -1},
		{"w0/s10", "w0/s9", 1},
		{"w1/s1", "w0/s2", -1},
		{"w1/s2", "w0/s2", 1},
		{"w0/s2", "w0/s2", 0},
		{"x", "w0/s2", 1},
		{"a", "b", -1},
	}
	for _, tc := range tests {
		if got := compareSteps(tc.a, tc.b); got != tc.want {
			t.Errorf("compareSteps(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// Misoperation findings that share a cause are one group whatever the oracles
// and the generated names; bug findings keep their signatures.
func TestGroupMisoperationsByCause(t *testing.T) {
	cause := func(name string) string {
		return `spec.auth.passwordSecret.name names Secret "` + name + `", which does not exist`
	}
	mis := func(step, oracle, summary, c string) model.Finding {
		return model.Finding{Oracle: oracle, Severity: model.SeverityError, Summary: summary, Step: step, Misoperation: true,
			Cause: c, Signature: model.CauseSignature(c)}
	}
	fs := []model.Finding{
		mis("w0/s3", "health", "Ready=False (PasswordSecretMissing)", cause("gauntlet-a1")),
		mis("w0/s3", "system-state", "3 of 3 members unreachable", cause("gauntlet-a1")),
		mis("w1/s5", "roll-safety", "3 servers out of service", cause("gauntlet-b2")),
		mis("w1/s9", "health", "Ready=False (SpecRejected)", "the operator refused it: condition Ready=False (SpecRejected): bad"),
		{Oracle: "consistency", Severity: model.SeverityError, Summary: "ignored", Signature: "consistency-x", Step: "w0/s4"},
	}
	bugs, misops, _ := SplitGroups(Group(fs))
	if len(bugs) != 1 || bugs[0].Signature != "consistency-x" {
		t.Fatalf("bug groups %+v", bugs)
	}
	if len(misops) != 2 {
		t.Fatalf("%d misoperation groups, want 2 (one per cause): %+v", len(misops), misops)
	}
	g := misops[0]
	if g.Oracle != "misoperation" || g.Summary != cause("gauntlet-a1") || len(g.Steps) != 2 || g.Count != 3 || len(g.Evidence) != 3 {
		t.Fatalf("the missing-Secret group: %+v", g)
	}
}
