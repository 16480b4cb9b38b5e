package campaign_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/internal/testing/bugcampaign"
	"github.com/gauntlet-dev/gauntlet/model"
)

// viewBug is the seeded bug only a fault of the operator's view finds: the
// operator acknowledges a new generation in the status before it scales the
// StatefulSet, and takes an acknowledged generation's scale as done.
const viewBug = "11-scale-acknowledged-before-done"

// TestE2EViewPlanCatchesSeededBug runs the seeded bug's untuned campaign
// (crash-after-write drawn, aimed by a plan derived from the first converged
// step's view record): the crash right after the acknowledging status write
// leaves the StatefulSet unscaled, which the oracles catch.
func TestE2EViewPlanCatchesSeededBug(t *testing.T) {
	t.Parallel() // each campaign has its own clusters and state root
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	_, res, _ := bugcampaign.Run(ctx, t, viewBug, true, false, 1)
	requirePlannedCrash(t, res)
	bugcampaign.RequireAlarm(t, res, "consistency", "health")
}

// TestE2EViewPlanCleanOperator runs the campaign against the clean operator,
// with a second scaling case so that the plans derived from its own reference
// steps reach its status write too: it is crashed right after it, on a
// change, and recovers every time.
func TestE2EViewPlanCleanOperator(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, res, _ := bugcampaign.Run(ctx, t, viewBug, false, false, 2)
	requirePlannedCrash(t, res)
	statusCrash := false
	for _, s := range res.Steps {
		for _, f := range s.Faults {
			if s.Kind == model.StepApply && f.Kind == campaign.FaultCrashAfterWrite && strings.Contains(f.Effect, "cut") && strings.Contains(strings.Join(f.Targets, " "), "/status") {
				statusCrash = true
			}
		}
	}
	if !statusCrash {
		t.Error("no change crashed the clean operator right after its status write")
	}
	for _, g := range res.Groups {
		t.Errorf("alarm on the clean operator: %s %s: %s (steps %v, misoperation %v)", g.Oracle, g.Signature, g.Summary, g.Steps, g.Misoperation)
	}
}

// requirePlannedCrash fails t unless a step crashed the operator after a
// write a reference step's view record named (a plan, not a seeded draw).
func requirePlannedCrash(t *testing.T, res *campaign.Result) {
	t.Helper()
	for _, s := range res.Steps {
		for _, f := range s.Faults {
			if f.Kind == campaign.FaultCrashAfterWrite && strings.Contains(f.Effect, "cut") && !strings.Contains(strings.Join(f.Targets, " "), "any resource") {
				return
			}
		}
	}
	t.Fatal("no step crashed the operator after a planned write")
}
