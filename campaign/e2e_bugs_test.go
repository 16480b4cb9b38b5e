package campaign_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/internal/testing/bugcampaign"
)

// TestE2ECatchesSeededBug runs a short campaign against the operator built with
// one seeded bug (the user's maxmemory-policy overruled by an operator default),
// requires an alarm from the expected oracle, a confirmed reproducer for its
// group, and that replaying the reproducer raises the same signature again.
func TestE2ECatchesSeededBug(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cfg, res, out := runSeededBug(ctx, t, "04-config-default-overrules-user", true, 1)
	hit := bugcampaign.RequireAlarm(t, res, "consistency")
	rep, err := campaign.ReadReproducer(filepath.Join(out, "alarms", strconv.Itoa(hit.ID)))
	if err != nil {
		t.Fatalf("reproducer of group %d: %v", hit.ID, err)
	}
	if rep.Signature != hit.Signature {
		t.Errorf("reproducer signature %q, group signature %q", rep.Signature, hit.Signature)
	}
	if !rep.Confirmed {
		t.Errorf("reproducer not confirmed by the campaign (tried %d: %s)", rep.Tried, rep.Note)
	}
	// Reproduce must judge with the default oracles on its own, as `gauntlet reproduce` does.
	cfg.Oracles = nil
	again, err := campaign.Reproduce(ctx, cfg, rep)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !again.Reproduced {
		t.Errorf("replaying the reproducer did not raise %s again; findings: %v", rep.Signature, again.Findings)
	}
}

// runSeededBug runs the benchmark's campaign of the seeded bug name (its first n
// test cases, with its faults) against the operator built with the bug.
func runSeededBug(ctx context.Context, t *testing.T, name string, minimize bool, n int) (campaign.Config, *campaign.Result, string) {
	t.Helper()
	return bugcampaign.Run(ctx, t, name, true, minimize, n)
}
