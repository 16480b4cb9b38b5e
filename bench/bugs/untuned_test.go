package bugs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// The fixtures are two results folders (summary.json and journal.jsonl) in
// the shape a real campaign writes, cut to four steps of one worker: the seed
// (w0/s0), spec.resources raised (w0/s1), a container crash of the primary
// (w0/s2), one more apply (w0/s3). The clean campaign raised a consistency
// group and a misoperation group; the bug's campaign raised both again, plus a
// new consistency group (w0/s1 and w0/s3), a new health group (w0/s2) and a
// new misoperation group whose findings are recovery's and health's (w0/s3).
func readFixture(t *testing.T, name string) *Record {
	t.Helper()
	r, err := ReadRecord("testdata/untuned/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestClassifyFixtures(t *testing.T) {
	clean, bug := readFixture(t, "clean"), readFixture(t, "bug")
	crash := Trigger{Faults: []FaultTrigger{{Kind: "container-crash", Role: "primary"}}}
	for _, tc := range []struct {
		name       string
		bug        Bug
		clean      *Record
		verdict    Verdict
		caught     string // oracleList of Caught
		caughtStep string
		after      time.Duration
		reach      string // the reaching step ("": none)
		other      string // oracleList of Other
	}{
		{"expected oracle, new group", Bug{Name: "01", Expect: []string{"consistency"}, Trigger: catalog["01-resources-ignored"].Trigger}, clean,
			VerdictCaught, "consistency(1)", "w0/s1", 70 * time.Second, "w0/s1", "health(2),recovery(1)"},
		{"expected oracle only in a misoperation group's findings", Bug{Name: "03", Expect: []string{"recovery"}, Trigger: catalog["03-sts-update-waits-for-ready"].Trigger}, clean,
			VerdictCaught, "recovery(1)", "w0/s3", 190 * time.Second, "", "consistency(1),health(1)"},
		{"reached by a fault, no expected group", Bug{Name: "07", Expect: []string{"durability"}, Trigger: crash}, clean,
			VerdictMissed, "-", "", 0, "w0/s2", "consistency(1),health(2),recovery(1)"},
		{"never reached", Bug{Name: "08", Expect: []string{"split-brain"}, Trigger: catalog["08-unreachable-primary-keeps-label"].Trigger}, clean,
			VerdictNotReached, "-", "", 0, "", "consistency(1),health(2),recovery(1)"},
		{"a group the clean campaign raised too is no catch", Bug{Name: "x", Expect: []string{"consistency"}}, &Record{Summary: reports.Summary{Alarms: []reports.AlarmGroup{{Signature: "consistency-new"}}, Misoperations: clean.Summary.Misoperations}},
			VerdictCaught, "consistency(1)", "w0/s3", 190 * time.Second, "", "health(2),recovery(1)"},
		{"without a clean campaign every group is new", Bug{Name: "x", Expect: []string{"consistency"}}, nil,
			VerdictCaught, "consistency(2)", "w0/s1", 70 * time.Second, "", "health(3),recovery(1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := Classify(tc.bug, 1, bug, tc.clean)
			if row.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q", row.Verdict, tc.verdict)
			}
			if got := oracleList(row.Caught); got != tc.caught {
				t.Errorf("caught by %s, want %s", got, tc.caught)
			}
			if row.CaughtStep != tc.caughtStep || row.CaughtAfter != tc.after {
				t.Errorf("caught at %q after %s, want %q after %s", row.CaughtStep, row.CaughtAfter, tc.caughtStep, tc.after)
			}
			reach := ""
			if row.Reach != nil {
				reach = row.Reach.Step
			}
			if reach != tc.reach {
				t.Errorf("reached at %q (%+v), want %q", reach, row.Reach, tc.reach)
			}
			if got := oracleList(row.Other); got != tc.other {
				t.Errorf("other new groups %s, want %s", got, tc.other)
			}
			if row.Alarms != 3 || row.Misoperations != 2 || row.Steps != 4 {
				t.Errorf("counts: %d alarm groups, %d misoperation groups, %d steps; want 3, 2, 4", row.Alarms, row.Misoperations, row.Steps)
			}
		})
	}
	if c := CleanRow(1, clean); c.Alarms != 1 || c.AlarmOracles["consistency"] != 1 || c.Misoperations != 1 {
		t.Errorf("clean row %+v: want 1 consistency alarm group, 1 misoperation group", c)
	}
}

// steps builds a one-worker record from desired states (nil: the previous one,
// for a fault step), each step a minute after the last.
type stepSpec struct {
	kind   model.StepKind
	spec   map[string]any
	misop  bool
	stuck  bool
	faults []model.Fault
	worker int
}

func record(specs ...stepSpec) *Record {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Record{Summary: reports.Summary{Started: t0}}
	last := map[int]*campaign.StepRecord{}
	index := map[int]int{}
	for i, s := range specs {
		cur := model.Object{"spec": s.spec}
		prev := last[s.worker]
		if s.spec == nil && prev != nil {
			cur = prev.Current
		}
		st := &campaign.StepRecord{Step: model.Step{Worker: s.worker, Index: index[s.worker], Kind: s.kind, Misoperation: s.misop, Stuck: s.stuck,
			Faults: s.faults, Desired: cur, Started: t0.Add(time.Duration(i+1) * time.Minute)}, Current: cur}
		if prev != nil {
			st.Prev = prev.ID()
		}
		index[s.worker]++
		last[s.worker] = st
		r.Steps = append(r.Steps, st)
	}
	return r
}

func TestTriggerReached(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seed := map[string]any{"replicas": 3, "config": map[string]any{"maxmemory": "100mb"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range seed {
			m[a] = b
		}
		m[k] = v
		return m
	}
	frozen := func(role string, hold time.Duration) []model.Fault {
		return []model.Fault{{Kind: "pod-failure", Targets: []string{role + " ns/cache-0"}, Injected: t0, Removed: t0.Add(hold)}}
	}
	pdb := catalog["02-pdb-never-deleted"].Trigger
	for _, tc := range []struct {
		name  string
		trig  Trigger
		rec   *Record
		want  string // reaching step ("": not reached)
		after time.Duration
	}{
		{"seed path set", Trigger{Seed: "spec.config"}, record(stepSpec{kind: model.StepSeed, spec: seed}), "w0/s0", time.Minute},
		{"seed path unset", Trigger{Seed: "spec.config"}, record(stepSpec{kind: model.StepSeed, spec: map[string]any{"config": map[string]any{}}}), "", 0},
		{"change to the value", pdb, record(stepSpec{kind: model.StepSeed, spec: seed},
			stepSpec{kind: model.StepApply, spec: with("podDisruptionBudget", map[string]any{"enabled": true})},
			stepSpec{kind: model.StepApply, spec: with("podDisruptionBudget", map[string]any{"enabled": false})}), "w0/s2", 3 * time.Minute},
		{"number compared by value", pdb, record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepRollback, spec: with("replicas", float64(1))}), "w0/s1", 2 * time.Minute},
		{"misoperation steps do not reach", pdb, record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepApply, spec: with("replicas", 1), misop: true}), "", 0},
		{"an empty object is no change", Trigger{Changes: []Change{{Path: "spec.resources"}}},
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepApply, spec: with("resources", map[string]any{})}), "", 0},
		{"a change to unset does not count with Set", catalog["01-resources-ignored"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: with("resources", map[string]any{"limits": map[string]any{"cpu": "1"}})}, stepSpec{kind: model.StepApply, spec: seed}), "", 0},
		{"a change under the path counts", catalog["01-resources-ignored"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepApply, spec: with("resources", map[string]any{"limits": map[string]any{"cpu": "1"}})}), "w0/s1", 2 * time.Minute},
		{"fault steps change nothing", catalog["01-resources-ignored"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepFault, spec: with("resources", map[string]any{"limits": map[string]any{"cpu": "1"}})}), "", 0},
		{"a value other than the operator's default", catalog["04-config-default-overrules-user"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepApply, spec: with("config", map[string]any{"maxmemory-policy": "volatile-lru"})}), "w0/s1", 2 * time.Minute},
		{"a rollback to the operator's default", catalog["04-config-default-overrules-user"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: with("config", map[string]any{"maxmemory-policy": "volatile-lru"})},
				stepSpec{kind: model.StepRollback, spec: with("config", map[string]any{"maxmemory-policy": "allkeys-lru"})}), "", 0},
		{"new prefixed key", catalog["10-node-selector-prefixed-keys-dropped"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed},
				stepSpec{kind: model.StepApply, spec: with("scheduling", map[string]any{"nodeSelector": map[string]any{"disktype": "ssd"}})},
				stepSpec{kind: model.StepApply, spec: with("scheduling", map[string]any{"nodeSelector": map[string]any{"disktype": "ssd", "kubernetes.io/hostname": "node-1"}})}), "w0/s2", 3 * time.Minute},
		{"plain keys only", catalog["10-node-selector-prefixed-keys-dropped"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepApply, spec: with("scheduling", map[string]any{"nodeSelector": map[string]any{"disktype": "ssd"}})}), "", 0},
		{"fault held long enough", catalog["08-unreachable-primary-keeps-label"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepFault, faults: frozen("primary", 8*time.Second)}), "w0/s1", 2 * time.Minute},
		{"fault held too briefly", catalog["08-unreachable-primary-keeps-label"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepFault, faults: frozen("primary", 3*time.Second)}), "", 0},
		{"fault on another role", catalog["08-unreachable-primary-keeps-label"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepFault, faults: frozen("replica", 8*time.Second)}), "", 0},
		{"unsupported fault", catalog["07-failover-lowest-offset"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepFault, faults: []model.Fault{{Kind: "pod-kill", Targets: []string{"primary ns/cache-1"}, Injected: t0, Unsupported: "no"}}}), "", 0},
		{"roll with 3 pods (the CRD's default when unset)", catalog["09-roll-primary-before-sync"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: map[string]any{}}, stepSpec{kind: model.StepApply, spec: map[string]any{"image": "valkey/valkey:8.0"}}), "w0/s1", 2 * time.Minute},
		{"roll with 2 pods", catalog["09-roll-primary-before-sync"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: with("replicas", 2)}, stepSpec{kind: model.StepApply, spec: map[string]any{"replicas": 2, "image": "valkey/valkey:8.0"}}), "", 0},
		{"change after an unready step", catalog["03-sts-update-waits-for-ready"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepApply, spec: with("replicas", 100), misop: true, stuck: true},
				stepSpec{kind: model.StepRollback, spec: seed}), "w0/s2", 3 * time.Minute},
		{"change after a ready step", catalog["03-sts-update-waits-for-ready"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepApply, spec: with("replicas", 4)}, stepSpec{kind: model.StepRollback, spec: seed}), "", 0},
		{"unready on another worker", catalog["03-sts-update-waits-for-ready"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepSeed, spec: seed, worker: 1},
				stepSpec{kind: model.StepApply, spec: with("replicas", 100), stuck: true, worker: 1}, stepSpec{kind: model.StepApply, spec: with("replicas", 4)}), "", 0},
		{"earliest step across workers", catalog["07-failover-lowest-offset"].Trigger,
			record(stepSpec{kind: model.StepSeed, spec: seed}, stepSpec{kind: model.StepSeed, spec: seed, worker: 1},
				stepSpec{kind: model.StepFault, worker: 1, faults: []model.Fault{{Kind: "container-crash", Targets: []string{"primary ns/cache-2"}, Injected: t0}}},
				stepSpec{kind: model.StepFault, faults: []model.Fault{{Kind: "pod-kill", Targets: []string{"primary ns/cache-0"}, Injected: t0}}}), "w1/s1", 3 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := tc.trig.Reached(tc.rec)
			if got := map[bool]string{true: r.Step}[ok]; got != tc.want || (ok && r.After != tc.after) {
				t.Errorf("reached %v at %q after %s (%s), want %q after %s", ok, r.Step, r.After, r.How, tc.want, tc.after)
			}
			if ok && r.How == "" {
				t.Error("a reach says how")
			}
		})
	}
}

func TestCatalogTriggers(t *testing.T) {
	bs, err := Load(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		tr := b.Trigger
		if tr.What == "" || (tr.Seed == "" && len(tr.Changes) == 0 && len(tr.Faults) == 0 && !tr.Unready) {
			t.Errorf("%s: the untuned mode needs a trigger (what reaches the bug, and at least one way to): %+v", b.Name, tr)
		}
		for _, f := range tr.Faults {
			known := false
			for _, k := range append(slices.Clone(campaign.DefaultFaultKinds), campaign.ViewFaultKinds...) {
				known = known || k == f.Kind
			}
			if !known {
				t.Errorf("%s: fault kind %q is none of the campaign's %v", b.Name, f.Kind, campaign.DefaultFaultKinds)
			}
		}
	}
}

func TestUntunedTable(t *testing.T) {
	rows := []UntunedRow{
		{Bug: "clean", Seed: 1, Alarms: 0, Misoperations: 2, Steps: 40, Duration: 8 * time.Minute},
		{Bug: "01-x", Seed: 1, Verdict: VerdictCaught, Caught: map[string]int{"consistency": 1}, CaughtStep: "w1/s4", CaughtAfter: 150 * time.Second,
			Reach: &Reach{Step: "w1/s4", After: 150 * time.Second, How: "spec.resources changed"}, Steps: 38, Expect: []string{"consistency"}, Trigger: "resources"},
		{Bug: "08-y", Seed: 1, Verdict: VerdictNotReached, Other: map[string]int{"health": 1}, Steps: 41, Expect: []string{"split-brain"}, Trigger: "a freeze"},
		{Bug: "clean", Seed: 2, Alarms: 1, AlarmOracles: map[string]int{"consistency": 1}, Steps: 39},
	}
	var b strings.Builder
	if err := WriteUntunedTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	norm := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"01-x 1 caught consistency(1) w1/s4 (2m30s) w1/s4 (2m30s): spec.resources changed - 38",
		"08-y 1 not reached - - - health(1) 41",
		"clean operator, seed 1: 0 alarm groups (goal 0), 2 misoperation groups; 40 steps",
		"clean operator, seed 2: 1 alarm groups (goal 0) consistency(1)",
		"reached, 08-y: a freeze",
	} {
		if !strings.Contains(norm, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestUntunedArgs(t *testing.T) {
	got := strings.Join(UntunedArgs(UntunedOptions{RepoRoot: "/r", Budget: 4 * time.Minute}, 2, "/b/op", "/s", "/o"), " ")
	want := "run --target valkey --faults all --workers 2 --seed 2 --budget 4m0s --no-minimize --repo /r --operator-binary /b/op --state-dir /s --out /o"
	if got != want {
		t.Errorf("args\n%s\nwant\n%s", got, want)
	}
}

// TestReclassify runs the untuned mode over results folders left in its work
// folder (the fixtures), as `-reclassify` does: no campaign runs.
func TestReclassify(t *testing.T) {
	work := t.TempDir()
	for name, fixture := range map[string]string{"clean": "clean", "01-resources-ignored": "bug", "08-unreachable-primary-keeps-label": "bug"} {
		dir := filepath.Join(work, "seed1", name, "results")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"summary.json", "journal.jsonl"} {
			b, err := os.ReadFile(filepath.Join("testdata/untuned", fixture, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	o := UntunedOptions{RepoRoot: repoRoot(t), WorkDir: work, Seeds: []int64{1}, Reclassify: true,
		Only: []string{"01-resources-ignored", "08-unreachable-primary-keeps-label", "02-pdb-never-deleted"}}
	rows, err := RunUntuned(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Bug] = string(r.Verdict)
		if r.Err != nil {
			got[r.Bug] = "error"
		}
	}
	want := map[string]string{"clean": "", "01-resources-ignored": "caught", "08-unreachable-primary-keeps-label": "not reached", "02-pdb-never-deleted": "error"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if rows[0].Bug != "clean" || rows[0].Alarms != 1 || rows[0].Duration != 5*time.Minute {
		t.Errorf("first row %+v: want the clean campaign, 1 alarm group, 5m recorded", rows[0])
	}
}

func TestCampaignError(t *testing.T) {
	gate := campaignError(errors.New("exit status 1"), os.ErrNotExist, "starting\ngauntlet: "+campaign.ErrSeedUnhealthy.Error()+": step w0/s0: exit 127\n", "run.log")
	if !errors.Is(gate, errSeedGate) || !strings.Contains(gate.Error(), "exit 127") {
		t.Errorf("seed gate: %v", gate)
	}
	failed := campaignError(errors.New("exit status 2"), os.ErrNotExist, "bad flag\n", "run.log")
	if errors.Is(failed, errSeedGate) || !strings.Contains(failed.Error(), "bad flag") {
		t.Errorf("failed command: %v", failed)
	}
}
