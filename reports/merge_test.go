package reports

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// shardDir is a hand-made shard results folder, written as a campaign writes
// one: Build, reproducer paths on the groups, WriteSummary, plus a cr.yaml per
// step and an alarms/N folder per reproducer.
type shardDir struct {
	target      string
	seed        int64
	shard       *Shard
	workers     int
	started     time.Time
	stopped     string
	steps       []model.Step
	findings    []model.Finding
	reproducers map[string]string // bug group signature -> alarms/N
	simulated   []SimulatedContainer
}

func (d shardDir) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	in := BuildInput{CampaignID: filepath.Base(dir), Target: d.target, Seed: d.seed, Started: d.started, Finished: d.started.Add(time.Hour),
		Workers: d.workers, StepsPlanned: len(d.steps) + 1, Oracles: []string{"consistency", "health"}, Findings: d.findings, Stopped: model.StopReason(d.stopped),
		Shard: d.shard, SimulatedContainers: d.simulated, Properties: []PropertyPlan{{Path: "spec.a", TestCases: []string{"tc-a"}}, {Path: "spec.b", TestCases: []string{"tc-b"}}, {Path: "spec.c", TestCases: []string{"tc-c"}}}}
	for _, s := range d.steps {
		in.Steps = append(in.Steps, StepRecord{Step: s, Overhead: 100 * time.Millisecond})
		p := filepath.Join(dir, "steps", "w"+strconv.Itoa(s.Worker), "s"+strconv.Itoa(s.Index))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "cr.yaml"), []byte("# "+shardName(d.shard)+" "+s.ID()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Build(in)
	for i, g := range s.Alarms {
		if r := d.reproducers[g.Signature]; r != "" {
			s.Alarms[i].Reproducer, s.Alarms[i].ReproducerSteps, s.Alarms[i].Confirmed = r, 2, true
			if err := os.MkdirAll(filepath.Join(dir, r), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, r, "reproducer.json"), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	return dir
}

func shardName(s *Shard) string {
	if s == nil {
		return "whole"
	}
	return s.String()
}

func apply(w, i int, tc string, changed ...string) model.Step {
	return model.Step{Worker: w, Index: i, Kind: model.StepApply, TestCase: tc, Changed: changed,
		Started: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), Converged: time.Date(2026, 1, 1, 0, 0, i+1, 0, time.UTC)}
}

func finding(oracle, sig, step string) model.Finding {
	return model.Finding{Oracle: oracle, Severity: model.SeverityError, Signature: sig, Summary: oracle + " " + sig, Step: step,
		Evidence: []model.Evidence{{Detail: "seen on " + step}}}
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	misop := model.Finding{Oracle: "health", Severity: model.SeverityError, Signature: "health-x", Summary: "pods not ready", Step: "w1/s1",
		Misoperation: true, Cause: "replicas above the cluster"}
	one := shardDir{target: "valkey", seed: 7, shard: &Shard{1, 3}, workers: 2, started: t0,
		steps:       []model.Step{apply(0, 1, "tc-a", "spec.a"), apply(1, 1, "tc-b", "spec.b")},
		findings:    []model.Finding{finding("health", "health-x", "w0/s1"), finding("consistency", "consistency-y", "w0/s1"), misop},
		reproducers: map[string]string{"health-x": "alarms/1"},
		simulated:   []SimulatedContainer{{Namespace: "gauntlet-w1", Pod: "cache-0", Container: "exporter", Image: "oliver006/redis_exporter:v1"}}}
	three := shardDir{target: "valkey", seed: 7, shard: &Shard{3, 3}, workers: 1, started: t0.Add(time.Minute), stopped: "budget",
		steps:       []model.Step{apply(0, 1, "tc-c", "spec.c"), apply(0, 2, "tc-a", "spec.a")},
		findings:    []model.Finding{finding("health", "health-x", "w0/s2"), finding("consistency", "consistency-y", "w0/s1")},
		reproducers: map[string]string{"health-x": "alarms/1", "consistency-y": "alarms/2"},
		simulated:   []SimulatedContainer{{Namespace: "gauntlet-w0", Pod: "cache-1", Container: "exporter", Image: "oliver006/redis_exporter:v1"}}}
	d1, d3 := one.write(t), three.write(t)
	out := filepath.Join(t.TempDir(), "merged")
	details := func(dir string) (Details, error) {
		if dir == d1 {
			return Details{Findings: one.findings, Desired: map[string]model.Object{"w0/s1": {"spec": map[string]any{"a": "from-shard-1"}}}}, nil
		}
		return Details{Findings: three.findings}, nil
	}
	// Given out of order: shards are merged in shard order.
	m, err := Merge(context.Background(), out, []string{d3, d1}, MergeOptions{Details: details})
	if err != nil {
		t.Fatal(err)
	}
	if m.StepsPlanned != 3+3 || m.StepsDone != 4 || m.Workers != 3 || m.Target != "valkey" || m.Seed != 7 || m.Shard != nil {
		t.Errorf("counts: planned %d done %d workers %d target %s seed %d shard %v", m.StepsPlanned, m.StepsDone, m.Workers, m.Target, m.Seed, m.Shard)
	}
	if got := m.SimulatedContainers; len(got) != 2 || got[0].Pod != "cache-0" || got[1].Pod != "cache-1" {
		t.Errorf("simulated containers are every shard's, in shard order: %+v", got)
	}
	if !m.Partial || m.StopReason != "budget" {
		t.Errorf("a partial shard makes the merge partial: partial %v reason %q", m.Partial, m.StopReason)
	}
	if !m.Started.Equal(t0) || !m.Finished.Equal(t0.Add(time.Minute+time.Hour)) {
		t.Errorf("window %s .. %s", m.Started, m.Finished)
	}
	wantMerged := &Merged{Count: 3, Present: []int{1, 3}, Missing: []int{2}, Shards: []MergedShard{
		{Index: 1, Source: d1, Dir: "shards/1", FirstWorker: 0, Workers: 2, StepsPlanned: 3, StepsDone: 2},
		{Index: 3, Source: d3, Dir: "shards/3", FirstWorker: 2, Workers: 1, StepsPlanned: 3, StepsDone: 2, Partial: true, StopReason: "budget"},
	}}
	if !reflect.DeepEqual(m.Merged, wantMerged) {
		t.Errorf("merged:\n got %+v\nwant %+v", m.Merged, wantMerged)
	}
	// Bug groups merged by signature, steps renumbered (shard 3's worker 0 is w2),
	// the first reproducer kept; the misoperation with a bug's signature stays apart.
	type g struct {
		sig        string
		count      int
		steps      []string
		reproducer string
	}
	var bugs, mis []g
	for _, a := range m.Alarms {
		bugs = append(bugs, g{a.Signature, a.Count, a.Steps, a.Reproducer})
	}
	for _, a := range m.Misoperations {
		mis = append(mis, g{a.Signature, a.Count, a.Steps, a.Reproducer})
	}
	wantBugs := []g{
		{"consistency-y", 2, []string{"w0/s1", "w2/s1"}, "shards/3/alarms/2"},
		{"health-x", 2, []string{"w0/s1", "w2/s2"}, "shards/1/alarms/1"},
	}
	if !reflect.DeepEqual(bugs, wantBugs) {
		t.Errorf("bug groups:\n got %+v\nwant %+v", bugs, wantBugs)
	}
	if wantMis := []g{{"health-x", 1, []string{"w1/s1"}, ""}}; !reflect.DeepEqual(mis, wantMis) {
		t.Errorf("misoperation groups:\n got %+v\nwant %+v", mis, wantMis)
	}
	oracles := map[string]OracleCount{}
	for _, o := range m.Oracles {
		oracles[o.Oracle] = o
	}
	if h := oracles["health"]; h.Findings != 2 || h.Groups != 1 || h.MisoperationFindings != 1 {
		t.Errorf("health counts %+v", h)
	}
	// A misoperation group per cause counts under "misoperation", as Build counts it.
	if mo := oracles["misoperation"]; mo.MisoperationGroups != 1 {
		t.Errorf("misoperation counts %+v", mo)
	}
	if c := oracles["consistency"]; c.Findings != 2 || c.Groups != 1 {
		t.Errorf("consistency counts %+v", c)
	}
	// Coverage unioned: spec.a by both shards, spec.b by shard 1, spec.c by shard 3.
	cov := map[string][]string{}
	for _, p := range m.Coverage.Properties {
		cov[p.Path] = p.Steps
	}
	if want := map[string][]string{"spec.a": {"w0/s1", "w2/s2"}, "spec.b": {"w1/s1"}, "spec.c": {"w2/s1"}}; !reflect.DeepEqual(cov, want) || m.Coverage.Covered != 3 || m.Coverage.Total != 3 {
		t.Errorf("coverage %d/%d %v", m.Coverage.Covered, m.Coverage.Total, cov)
	}
	var tl []string
	for _, e := range m.Timeline {
		tl = append(tl, e.ID())
	}
	if want := []string{"w0/s1", "w1/s1", "w2/s1", "w2/s2"}; !reflect.DeepEqual(tl, want) {
		t.Errorf("timeline %v, want %v", tl, want)
	}
	// Evidence paths work in the merged folder.
	for id, want := range map[string]string{"w1/s1": "# 1/3 w1/s1\n", "w2/s2": "# 3/3 w0/s2\n"} {
		dir, ok := m.StepDir(id)
		if !ok {
			t.Fatalf("StepDir(%s): no shard owns it", id)
		}
		b, err := os.ReadFile(filepath.Join(out, dir, "cr.yaml"))
		if err != nil || string(b) != want {
			t.Errorf("%s: %s/cr.yaml = %q, %v; want %q", id, dir, b, err, want)
		}
	}
	for _, a := range m.Alarms {
		if _, err := os.Stat(filepath.Join(out, a.Reproducer, "reproducer.json")); err != nil {
			t.Errorf("group %s: reproducer %s: %v", a.Signature, a.Reproducer, err)
		}
	}
	// The merged folder reads back strictly, and carries JUnit and HTML.
	back, err := ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Merged, m.Merged) || len(back.Alarms) != 2 {
		t.Errorf("summary.json read back: merged %+v, %d alarm groups", back.Merged, len(back.Alarms))
	}
	junit, err := os.ReadFile(filepath.Join(out, JUnitFile))
	if err != nil || !strings.Contains(string(junit), `name="gauntlet.shardsMissing" value="2"`) || !strings.Contains(string(junit), "shards/3/alarms/2") {
		t.Errorf("junit.xml: %v\n%s", err, junit)
	}
	html, err := os.ReadFile(filepath.Join(out, HTMLFile))
	if err != nil || !strings.Contains(string(html), "from-shard-1") || !strings.Contains(string(html), "shards/1/alarms/1") || !strings.Contains(string(html), "1,3 of 3 (missing 2)") {
		t.Errorf("report.html lacks the shard's desired state, the rewritten reproducer path or the shards merged (%v)", err)
	}
	for _, f := range []string{"shards/1/" + SummaryFile, "shards/3/" + SummaryFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// Merging into a folder that is not empty is refused.
	if _, err := Merge(context.Background(), out, []string{d1}, MergeOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("merge into a full folder: %v", err)
	}
	// A merged folder is not a shard.
	if _, err := Merge(context.Background(), t.TempDir(), []string{d1, out}, MergeOptions{}); !errors.Is(err, ErrNotShard) || !strings.Contains(err.Error(), "already a merged folder") {
		t.Errorf("merge of a merged folder: %v", err)
	}
}

func TestMergeRefuses(t *testing.T) {
	base := shardDir{target: "valkey", seed: 7, workers: 1, started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		steps: []model.Step{apply(0, 1, "tc-a", "spec.a")}}
	with := func(f func(*shardDir)) string {
		d := base
		d.shard = &Shard{1, 2}
		f(&d)
		return d.write(t)
	}
	first := with(func(*shardDir) {})
	for _, tc := range []struct {
		name   string
		other  string
		err    error
		errHas string
	}{
		{"another target", with(func(d *shardDir) { d.shard, d.target = &Shard{2, 2}, "other.yaml" }), ErrShardsDiffer, `target "other.yaml"`},
		{"another seed", with(func(d *shardDir) { d.shard, d.seed = &Shard{2, 2}, 8 }), ErrShardsDiffer, "seed 8"},
		{"another count", with(func(d *shardDir) { d.shard = &Shard{2, 3} }), ErrShardsDiffer, "shard 2/3"},
		{"the same shard twice", with(func(*shardDir) {}), ErrShardTwice, "both shard 1/2"},
		{"an unsharded campaign", with(func(d *shardDir) { d.shard = nil }), ErrNotShard, "ran the whole plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			_, err := Merge(context.Background(), out, []string{first, tc.other}, MergeOptions{})
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("got %v; want %v saying %q", err, tc.err, tc.errHas)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused merge created %s", out)
			}
		})
	}
}
