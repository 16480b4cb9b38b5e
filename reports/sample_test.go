package reports

import (
	"flag"
	"fmt"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

var (
	update    = flag.Bool("update", false, "rewrite the golden files under testdata/")
	reportOut = flag.String("report-out", "", "also write the sample report.html here (to look at it in a browser)")
)

// nasty is a string that breaks naive HTML, XML, JSON and Go emitters.
const nasty = "<script>alert('x')</script> \"quoted\" `back` */ /* \\ \n newline \x00 NUL \u2028 ünïcødé 🚀 ]]> &amp;"

var t0 = time.Date(2026, 3, 14, 2, 0, 0, 0, time.UTC)

const (
	vkGroup = "valkey.gauntlet.dev"
	crKey   = vkGroup + "/v1alpha1/ValkeyCluster/gauntlet-w0/vk"
	stsKey  = "apps/v1/StatefulSet/gauntlet-w0/vk"
)

// sampleInput is a small but complete campaign: two workers, a seed step each,
// applies, a rollback, fault steps (a pod kill, a container crash), a partition
// held across a desired state, an operator crash mid-reconcile, an unsupported
// fault, workload availability on several steps (one below 80%), a differential
// re-run, a timeout, a bug seen on several steps of both workers, a
// misoperation alarm with the harness's reason, and nasty strings.
func sampleInput() BuildInput {
	in := BuildInput{
		CampaignID:   "c-20260314-020000-" + "a1b2",
		Target:       "valkey",
		Seed:         42,
		Started:      t0,
		Finished:     t0, // the last step's end, below
		Workers:      2,
		StepsPlanned: 26,
		Oracles:      []string{"consistency", "differential", "health", "recovery", "stability"},
		Properties: []PropertyPlan{
			{Path: "spec.replicas", TestCases: []string{"replicas-1", "replicas-3", "replicas-1000"}},
			{Path: "spec.image", TestCases: []string{"image-8.0"}},
			{Path: "spec.config", TestCases: []string{"config-maxmemory"}},
			{Path: "spec.config.maxmemory", TestCases: []string{"config-maxmemory"}},
			{Path: "spec.persistence.size", TestCases: []string{"persistence-2Gi"}},
			{Path: "spec.exporter.enabled", TestCases: []string{"exporter-on", "exporter-off"}},
			{Path: "spec.pdb.minAvailable", TestCases: []string{"pdb-1"}},
			{Path: "spec.tls.enabled", TestCases: []string{"tls-on"}},
			{Path: "spec.service.annotations", TestCases: []string{"svc-annotations-nasty"}},
		},
	}
	type st struct {
		kind     model.StepKind
		tc       string
		changed  []string
		converge time.Duration
		timeout  bool
		misop    bool
		reason   string
		// faults are relative to the step's start: injected at inj, removed at rem (when > 0).
		faults []sampleFault
		avail  float64 // 0: no workload ran
		req    int
	}
	plans := [][]st{
		{ // worker 0
			{kind: model.StepSeed, converge: 41 * time.Second},
			{kind: model.StepApply, tc: "replicas-3", changed: []string{"spec.replicas"}, converge: 36 * time.Second},
			{kind: model.StepApply, tc: "config-maxmemory", changed: []string{"spec.config.maxmemory"}, converge: 4 * time.Second},
			{kind: model.StepApply, tc: "exporter-on", changed: []string{"spec.exporter.enabled"}, converge: 22 * time.Second},
			{kind: model.StepApply, tc: "exporter-off", changed: []string{"spec.exporter.enabled"}, converge: 9 * time.Second},
			{kind: model.StepRollback, changed: []string{"spec.exporter.enabled"}, converge: 8 * time.Second},
			{kind: model.StepFault, converge: 27 * time.Second, avail: 0.9, req: 120,
				faults: []sampleFault{{kind: "pod-kill", target: "primary gauntlet-w0/vk-0", inj: 300 * time.Millisecond}}},
			{kind: model.StepApply, tc: "replicas-1000", changed: []string{"spec.replicas"}, timeout: true, misop: true,
				reason: "spec.replicas=1000 asks for more memory than the cluster's nodes have"},
			{kind: model.StepRollback, changed: []string{"spec.replicas"}, converge: 31 * time.Second},
			{kind: model.StepApply, tc: "svc-annotations-nasty", changed: []string{"spec.service.annotations"}, converge: 2 * time.Second, avail: 0.95, req: 80,
				faults: []sampleFault{{kind: "partition", target: "replica gauntlet-w0/vk-2", persistent: true, rem: 8 * time.Second}}},
			{kind: model.StepApply, tc: "pdb-1", changed: []string{"spec.pdb.minAvailable"}, converge: 3 * time.Second},
			{kind: model.StepDifferential, tc: "exporter-off", converge: 44 * time.Second},
			{kind: model.StepDifferential, tc: "replicas-3", converge: 39 * time.Second},
		},
		{ // worker 1
			{kind: model.StepSeed, converge: 43 * time.Second},
			{kind: model.StepApply, tc: "replicas-1", changed: []string{"spec.replicas"}, converge: 12 * time.Second, avail: 1, req: 64},
			{kind: model.StepApply, tc: "image-8.0", changed: []string{"spec.image"}, converge: 58 * time.Second},
			{kind: model.StepApply, tc: "persistence-2Gi", changed: []string{"spec.persistence.size"}, converge: 5 * time.Second},
			{kind: model.StepRecreate, tc: "persistence-2Gi", changed: []string{"spec.persistence.size"}, converge: 47 * time.Second,
				faults: []sampleFault{{kind: "operator-crash", target: "operator gauntlet-system/valkey-operator-0", persistent: true, inj: 900 * time.Millisecond}}},
			{kind: model.StepApply, tc: "exporter-on", changed: []string{"spec.exporter.enabled"}, converge: 21 * time.Second,
				faults: []sampleFault{{kind: "pod-failure", target: "replica gauntlet-w1/vk-2", persistent: true, unsupported: "pod-failure: the cluster back end cannot inject pod-failure"}}},
			{kind: model.StepApply, tc: "exporter-off", changed: []string{"spec.exporter.enabled"}, converge: 10 * time.Second},
			{kind: model.StepRollback, changed: []string{"spec.exporter.enabled"}, converge: 9 * time.Second},
			{kind: model.StepApply, tc: "replicas-3", changed: []string{"spec.replicas"}, converge: 35 * time.Second},
			{kind: model.StepFault, converge: 33 * time.Second, avail: 0.625, req: 40,
				faults: []sampleFault{{kind: "container-crash", target: "primary gauntlet-w1/vk-1", inj: 200 * time.Millisecond}}},
			{kind: model.StepDifferential, tc: "image-8.0", converge: 46 * time.Second},
		},
	}
	for w, plan := range plans {
		at := t0.Add(time.Duration(w*7) * time.Second)
		for i, p := range plan {
			step := model.Step{
				Worker: w, Index: i, Kind: p.kind, TestCase: p.tc, Misoperation: p.misop, MisoperationReason: p.reason,
				Changed: p.changed, Started: at, TimedOut: p.timeout,
				Desired: desired(w, i),
			}
			for _, f := range p.faults {
				mf := model.Fault{Kind: f.kind, Targets: []string{f.target}, Persistent: f.persistent, Unsupported: f.unsupported, Injected: at.Add(f.inj)}
				if f.rem > 0 {
					mf.Removed = at.Add(f.rem)
				}
				step.Faults = append(step.Faults, mf)
			}
			conv := p.converge
			if p.timeout {
				conv = 5 * time.Minute
			} else {
				step.Converged = at.Add(conv)
			}
			over := time.Duration(400+97*((w*13+i*7)%9)) * time.Millisecond
			rec := StepRecord{Step: step, Overhead: over}
			if p.req > 0 {
				rec.Availability, rec.Requests = &p.avail, p.req
			}
			in.Steps = append(in.Steps, rec)
			at = at.Add(conv + over + 10*time.Second) // stability window
		}
		if at.After(in.Finished) {
			in.Finished = at
		}
	}
	ev := func(obj, path string, exp, act any) model.Evidence {
		return model.Evidence{Object: obj, Path: path, Expected: exp, Actual: act}
	}
	exporterSig := model.Signature("consistency", "spec.exporter.enabled", "StatefulSet", "containers")
	for _, s := range []string{"w0/s4", "w0/s5", "w1/s6", "w1/s7"} {
		in.Findings = append(in.Findings, model.Finding{
			Oracle: "consistency", Severity: model.SeverityError, Signature: exporterSig, Step: s,
			Summary: "spec.exporter.enabled=false is not reflected: the exporter sidecar is still in the StatefulSet",
			Evidence: []model.Evidence{
				ev(stsKey, "spec.template.spec.containers",
					[]any{map[string]any{"name": "valkey", "image": "valkey/valkey:8.0", "ports": []any{map[string]any{"containerPort": 6379}}}},
					[]any{map[string]any{"name": "valkey", "image": "valkey/valkey:8.0", "ports": []any{map[string]any{"containerPort": 6379}}},
						map[string]any{"name": "exporter", "image": "oliver006/redis_exporter:v1.62.0", "ports": []any{map[string]any{"containerPort": 9121}}}}),
			},
		})
	}
	in.Findings = append(in.Findings,
		model.Finding{
			Oracle: "recovery", Severity: model.SeverityError, Signature: model.Signature("recovery", "spec.exporter.enabled"), Step: "w0/s5",
			Summary:  "rollback to exporter-on did not restore S(i-1)",
			Evidence: []model.Evidence{ev(stsKey, "spec.template.metadata.annotations[\"gauntlet.dev/exporter\"]", "on", "off")},
		},
		model.Finding{
			Oracle: "health", Severity: model.SeverityError, Signature: model.Signature("health", "pod-not-ready", "timeout"), Step: "w0/s7", Misoperation: true,
			Summary: "replicas=1000: pods stay Pending and the step timed out",
			Evidence: []model.Evidence{
				{Object: "/v1/Pod/gauntlet-w0/vk-3", Path: "status.phase", Expected: "Running", Actual: "Pending", Detail: "0/3 nodes are available: 3 Insufficient memory."},
			},
		},
		model.Finding{
			Oracle: "consistency", Severity: model.SeverityError, Signature: model.Signature("consistency", "spec.service.annotations"), Step: "w0/s9",
			Summary: "annotation value mangled: " + nasty,
			Evidence: []model.Evidence{
				ev("/v1/Service/gauntlet-w0/vk", "metadata.annotations[\"x/nasty\"]", nasty, nasty[:20]),
				{Detail: "operator log: E0314 " + nasty},
			},
		},
		model.Finding{
			Oracle: "differential", Severity: model.SeverityError, Signature: model.Signature("differential", "ConfigMap", "data.valkey.conf"), Step: "w1/s10",
			Summary: "state reached through history differs from the state reached from S0",
			Evidence: []model.Evidence{
				ev("/v1/ConfigMap/gauntlet-w1/vk-config", "data[\"valkey.conf\"]",
					"maxmemory 64mb\nmaxmemory-policy noeviction\nappendonly yes\nsave \"\"",
					"maxmemory 64mb\nmaxmemory-policy allkeys-lru\nappendonly yes\nsave \"\""),
			},
		},
		model.Finding{
			Oracle: "stability", Severity: model.SeverityError, Signature: model.Signature("stability", "StatefulSet", "spec.replicas"), Step: "w1/s8",
			Summary:  "spec.replicas oscillates after convergence",
			Evidence: []model.Evidence{ev(stsKey, "spec.replicas", 3, 2)},
		},
	)
	return in
}

// sampleFault is a fault of sampleInput, its times relative to the step's start.
type sampleFault struct {
	kind, target, unsupported string
	persistent                bool
	inj, rem                  time.Duration
}

func desired(w, i int) model.Object {
	return model.Object{
		"apiVersion": vkGroup + "/v1alpha1",
		"kind":       "ValkeyCluster",
		"metadata":   map[string]any{"name": "vk", "namespace": fmt.Sprintf("gauntlet-w%d", w)},
		"spec": map[string]any{
			"replicas": 3,
			"exporter": map[string]any{"enabled": i%2 == 0},
			"service":  map[string]any{"annotations": map[string]any{"x/nasty": nasty}},
		},
	}
}

// sampleSummary is Build(sampleInput()) with reproducer paths filled in.
func sampleSummary() Summary {
	s := Build(sampleInput())
	for i := range s.Alarms {
		s.Alarms[i].Reproducer = fmt.Sprintf("alarms/%d", i+1)
		s.Alarms[i].ReproducerSteps = 2
		s.Alarms[i].Confirmed = i%2 == 0
		s.Alarms[i].GoTest = fmt.Sprintf("alarms/%d/reproduce_test.go", i+1)
	}
	return s
}

func sampleDetails() Details {
	in := sampleInput()
	d := Details{Findings: in.Findings, Desired: map[string]model.Object{}}
	for _, r := range in.Steps {
		d.Desired[r.Step.ID()] = r.Step.Desired
	}
	return d
}
