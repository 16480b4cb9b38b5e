package campaign

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/model"
)

// TestE2EFaultCampaignClean runs the clean operator with three Valkey pods
// through config changes while the primary is killed (a transient fault on a
// converged system) and then partitioned from its replicas while the next
// spec.config change is declared (a persistent fault). Every transition must be
// judged with the system monitor's readings and the workload's history, the
// faults recorded, and the clean operator must raise no alarm.
func TestE2EFaultCampaignClean(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	tg, prov := e2eSetup(t)
	tg.Seed["spec"] = map[string]any{"replicas": int64(3), "image": "valkey/valkey:8.1",
		"config":   map[string]any{"maxmemory": "100mb", "maxmemory-policy": "allkeys-lru"},
		"failover": map[string]any{"healthCheckInterval": "500ms", "timeout": "500ms", "downAfter": "2s"}}
	tg.Properties = []string{"spec.config"}
	out := filepath.Join(t.TempDir(), "results")
	if keep := os.Getenv("GAUNTLET_E2E_KEEP"); keep != "" { // results kept for a post-mortem
		out = filepath.Join(keep, "results")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := Config{Target: tg, Provider: prov, Workers: 1, Seed: 3, OutDir: out, Progress: testWriter{t}, Stability: time.Second,
		NoDifferential: true,
		CaseFilter: func(tc *inputgen.TestCase) bool {
			return tc.ID == "spec.config#config/change-key" || tc.ID == "spec.config#config/add-key" || tc.ID == "spec.config#config/remove-key"
		},
		Faults: &FaultOptions{Hold: 6 * time.Second, Script: []FaultPlan{
			{Kind: FaultPodKill, Role: model.RolePrimary},
			{Kind: FaultPartition, Role: model.RolePrimary, Persistent: true},
		}}}
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		cfg.Logger = prov.Options.Log
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range res.Groups {
		t.Errorf("alarm on the clean operator: %s %s: %s (steps %v, misoperation %v)", g.Oracle, g.Signature, g.Summary, g.Steps, g.Misoperation)
		for _, f := range g.Findings {
			for _, e := range f.Evidence {
				t.Logf("  evidence %s: %+v", f.Step, e)
			}
		}
	}
	var killed, partitioned bool
	var judgedWithSystem, withHistory int
	for _, s := range res.Steps {
		for _, f := range s.Faults {
			t.Logf("%s: fault %s on %v (persistent %v, injected %s, removed %s, unsupported %q), converged in %v, availability %+v",
				s.ID(), f.Kind, f.Targets, f.Persistent, f.Injected.Format(time.StampMilli), f.Removed.Format(time.StampMilli), f.Unsupported, s.ConvergeTime(), s.Availability)
			if f.Unsupported != "" {
				t.Errorf("%s: fault %s unsupported on the embedded cluster: %s", s.ID(), f.Kind, f.Unsupported)
			}
			switch {
			case f.Kind == FaultPodKill && s.Kind == model.StepFault && strings.HasPrefix(f.Targets[0], "primary "):
				killed = true
			case f.Kind == FaultPartition && s.Kind == model.StepApply && f.Persistent && !f.Removed.IsZero():
				partitioned = true
			}
		}
		if s.Snapshot == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(out, s.Snapshot, "history.json")); err == nil {
			withHistory++
		}
		snap, err := loadSnapshot(filepath.Join(out, s.Snapshot))
		if err != nil {
			t.Fatal(err)
		}
		if snap.System != nil && len(snap.System.Members) == 3 {
			judgedWithSystem++
		}
	}
	if !killed {
		t.Error("no fault step killed the primary")
	}
	if !partitioned {
		t.Error("no desired state was declared while the primary was partitioned (persistent fault)")
	}
	if judgedWithSystem < len(res.Steps)-1 {
		t.Errorf("only %d of %d steps recorded a system reading of the three pods", judgedWithSystem, len(res.Steps))
	}
	if withHistory < len(res.Steps)-1 {
		t.Errorf("only %d of %d steps recorded the workload's history", withHistory, len(res.Steps))
	}
	t.Logf("bench: %+v", res.Bench)
}
