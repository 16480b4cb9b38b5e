package campaign

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// WriteReports writes summary.json, junit.xml and report.html for res into dir
// and, when goTests, a standalone Go regression test per alarm group that has a
// reproducer (alarms/N/<name>_test.go). oracleNames lists the oracles that ran.
func WriteReports(dir string, res *Result, oracleNames []string, goTests bool) error {
	plan, err := inputgen.ReadPlanFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	in := reports.BuildInput{
		CampaignID:   filepath.Base(dir),
		Target:       res.Target,
		Seed:         res.Seed,
		Started:      res.Started,
		Finished:     res.Finished,
		Workers:      res.Workers,
		StepsPlanned: res.Planned,
		Oracles:      oracleNames,
		Findings:     res.Findings,
		Stopped:      res.Stopped,
		Budget:       res.Budget.D(),
		Active:       time.Duration(res.Bench.ActiveSeconds * float64(time.Second)),
		Shard:        res.Shard.report(),

		SimulatedContainers: res.Simulated,
		Time: reports.CampaignTime{Setup: time.Duration(res.Bench.SetupSeconds * float64(time.Second)),
			Backoff: time.Duration(res.Bench.BackoffSeconds * float64(time.Second)), BackoffWaits: res.Bench.BackoffWaits},
	}
	desired := map[string]model.Object{}
	for _, s := range res.Steps {
		rec := reports.StepRecord{Step: s.Step, Overhead: time.Duration(s.Timing.Overhead) * time.Millisecond}
		if a := s.Availability; a != nil {
			rate := a.Rate
			rec.Availability, rec.Requests = &rate, a.Requests
		}
		in.Steps = append(in.Steps, rec)
		desired[s.ID()] = s.Desired
	}
	effective := map[string][]string{} // property -> test cases changing its effective value
	for _, tc := range plan.TestCases {
		for _, p := range tc.Effective {
			effective[p] = append(effective[p], tc.ID)
		}
	}
	for _, p := range plan.Properties {
		if p.Pinned {
			continue // no valid change exists: never coverable, not counted
		}
		in.Properties = append(in.Properties, reports.PropertyPlan{Path: p.Path, TestCases: p.Targeted, Effective: effective[p.Path]})
	}
	in.HeldBack = HeldBackCases(plan, plan.TestCases)
	sum := reports.Build(in)
	// Attach reproducers (and Go tests) to the groups: the same grouping
	// numbered them alike.
	for i := range sum.Alarms {
		attachReproducer(dir, &sum.Alarms[i], res, plan, goTests)
	}
	for i := range sum.Misoperations {
		attachReproducer(dir, &sum.Misoperations[i], res, plan, goTests)
	}
	if err := reports.WriteSummary(dir, sum); err != nil {
		return err
	}
	if err := writeWith(filepath.Join(dir, reports.JUnitFile), func(f io.Writer) error { return reports.WriteJUnit(f, sum) }); err != nil {
		return err
	}
	return writeWith(filepath.Join(dir, reports.HTMLFile), func(f io.Writer) error {
		return reports.WriteHTML(f, sum, reports.Details{Findings: res.Findings, Desired: desired})
	})
}

// attachReproducer fills the group's reproducer fields from the campaign's group
// with the same ID and, when asked, writes its Go test.
func attachReproducer(dir string, g *reports.AlarmGroup, res *Result, plan *inputgen.Plan, goTests bool) {
	var cg *AlarmGroup
	for _, x := range res.Groups {
		if x.ID == g.ID {
			cg = x
			break
		}
	}
	if cg == nil || cg.Reproducer == nil {
		return
	}
	r := cg.Reproducer
	alarmDir := filepath.Join("alarms", strconv.Itoa(cg.ID))
	g.Reproducer = alarmDir
	g.ReproducerSteps = len(r.Steps)
	g.Confirmed = r.Confirmed
	if !goTests {
		return
	}
	rep, _ := GoTestReproducer(cg, replay.CRDRef{Group: plan.Group, Version: plan.Version, Kind: plan.Kind}, filepath.Join(dir, alarmDir))
	name := reports.GoTestFileName(rep)
	err := writeWith(filepath.Join(dir, alarmDir, name), func(f io.Writer) error { return reports.WriteGoTest(f, rep) })
	if err != nil {
		// The replay-only reproducer (gauntlet reproduce) remains.
		_ = os.Remove(filepath.Join(dir, alarmDir, name))
		if !errors.Is(err, reports.ErrNoInvariant) {
			g.GoTestError = err.Error()
		}
		return
	}
	g.GoTest = filepath.Join(alarmDir, name)
}

// GoTestReproducer is the reproducer of g as its generated Go test declares it
// (named Gauntlet<ID>, package gauntlet_test, in namespace gauntlet-repro):
// the recorded reproducer with the CRD, the target made absolute when it is
// a file, the evidence of g's first finding that has some, and replayDir,
// the alarm folder `gauntlet reproduce` takes. A step's fault that the
// recorded run's back end could not inject is dropped: that run went without
// it. ok is false when g has no reproducer.
func GoTestReproducer(g *AlarmGroup, crd replay.CRDRef, replayDir string) (rep replay.Reproducer, ok bool) {
	if g.Reproducer == nil {
		return replay.Reproducer{}, false
	}
	rep = *g.Reproducer
	if rep.Target != "" && !strings.HasPrefix(rep.Target, "builtin:") && !filepath.IsAbs(rep.Target) {
		if abs, err := filepath.Abs(rep.Target); err == nil {
			rep.Target = abs // a target file, found from wherever the test runs
		}
	}
	rep.Name, rep.Package, rep.Namespace = "Gauntlet"+strconv.Itoa(g.ID), "gauntlet_test", "gauntlet-repro"
	rep.CRD, rep.ReplayDir = crd, replayDir
	rep.Evidence = firstEvidence(g)
	rep.Steps = slices.Clone(rep.Steps)
	for i, s := range rep.Steps {
		if s.Fault != nil && len(s.Faults) > 0 && !slices.ContainsFunc(s.Faults, func(f model.Fault) bool { return f.Unsupported == "" }) {
			rep.Steps[i].Fault = nil
		}
	}
	return rep, true
}

func firstEvidence(g *AlarmGroup) []model.Evidence {
	for _, f := range g.Findings {
		if len(f.Evidence) > 0 {
			return slices.Clone(f.Evidence)
		}
	}
	return nil
}

// writeWith creates path's folder and replaces path, atomically, with what fn writes.
func writeWith(path string, fn func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := atomicfile.WriteWith(path, 0o644, fn); err != nil {
		return fmt.Errorf("reports: write %s: %w", path, err)
	}
	return nil
}
