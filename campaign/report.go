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
		Budget:       res.Budget,
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
	for _, p := range plan.Properties {
		if p.Pinned {
			continue // no valid change exists: never coverable, not counted
		}
		in.Properties = append(in.Properties, reports.PropertyPlan{Path: p.Path, TestCases: p.Targeted})
	}
	sum := reports.Build(in)
	// Attach reproducers (and Go tests) to the groups, matched by signature.
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
// with the same signature and, when asked, writes its Go test.
func attachReproducer(dir string, g *reports.AlarmGroup, res *Result, plan *inputgen.Plan, goTests bool) {
	var cg *AlarmGroup
	for _, x := range res.Groups {
		if x.Signature == g.Signature && x.Misoperation == g.Misoperation {
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
	rep, _ := GoTestReproducer(cg, reports.CRDRef{Group: plan.Group, Version: plan.Version, Kind: plan.Kind}, filepath.Join(dir, alarmDir))
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
// (named Gauntlet<ID>, package gauntlet_test): the seed, then the minimized
// steps with their recreations and replayable faults, the target to deploy,
// and the evidence of g's first finding that has some. replayDir is the alarm
// folder `gauntlet reproduce` takes. ok is false when g has no reproducer.
func GoTestReproducer(g *AlarmGroup, crd reports.CRDRef, replayDir string) (rep reports.Reproducer, ok bool) {
	r := g.Reproducer
	if r == nil {
		return reports.Reproducer{}, false
	}
	target := r.Target
	if target != "" && !strings.HasPrefix(target, "builtin:") && !filepath.IsAbs(target) {
		if abs, err := filepath.Abs(target); err == nil {
			target = abs // a target file, found from wherever the test runs
		}
	}
	rep = reports.Reproducer{
		Name:      "Gauntlet" + strconv.Itoa(g.ID),
		Package:   "gauntlet_test",
		Target:    target,
		CRD:       crd,
		Namespace: "gauntlet-repro",
		Oracle:    r.Oracle,
		Signature: r.Signature,
		Summary:   r.Summary,
		Evidence:  firstEvidence(g),
		ReplayDir: replayDir,
	}
	rep.Steps = append(rep.Steps, r.Seed)
	for i, s := range r.Steps {
		rep.Steps = append(rep.Steps, s.Desired)
		if s.Recreate {
			rep.Recreate = append(rep.Recreate, i+1)
		}
		for _, f := range s.Faults {
			if rf, ok := reports.ReproFaultFrom(f, s.Kind != model.StepFault); ok {
				if rep.Faults == nil {
					rep.Faults = map[int][]reports.ReproFault{}
				}
				rep.Faults[i+1] = append(rep.Faults[i+1], rf)
			}
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
