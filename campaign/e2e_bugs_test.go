package campaign_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/bench/bugs"
	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/targets"
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
	hit := requireAlarm(t, res, "consistency")
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

// TestE2ECatchesSeededFailoverBug runs the fault campaign of the seeded bug
// that fails over to the replica with the lowest offset (the primary's
// container is killed while the workload writes with WAIT 1): the restarted,
// empty primary is promoted and the acknowledged writes are lost, which the
// durability or system-state oracle must report.
func TestE2ECatchesSeededFailoverBug(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	_, res, _ := runSeededBug(ctx, t, "07-failover-lowest-offset", false, 1)
	requireAlarm(t, res, "durability", "system-state")
}

// runSeededBug builds the operator with a seeded bug and runs the benchmark's
// campaign for the first n of its test cases (with its faults).
func runSeededBug(ctx context.Context, t *testing.T, name string, minimize bool, n int) (campaign.Config, *campaign.Result, string) {
	t.Helper()
	return runBugCampaign(ctx, t, name, true, minimize, n)
}

// runBugCampaign runs the benchmark's campaign of the seeded bug name (its
// first n test cases, its faults and example CRs) against the operator built
// with the bug's patch, or, when patched is false, against the clean operator.
// backend, when given, changes the campaign's configuration (its cluster provider) for the
// operator binary it is given.
func runBugCampaign(ctx context.Context, t *testing.T, name string, patched, minimize bool, n int, backend ...func(*campaign.Config, string)) (campaign.Config, *campaign.Result, string) {
	t.Helper()
	testenv.SkipShort(t)
	testenv.NeedRoot(t)
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	root, err := targets.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := bugs.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	var bug *bugs.Bug
	for i := range bs {
		if bs[i].Name == name {
			bug = &bs[i]
		}
	}
	if bug == nil {
		t.Fatalf("seeded bug %s not found", name)
	}
	dir := t.TempDir()
	if d := os.Getenv("GAUNTLET_E2E_KEEP"); d != "" {
		dir = d
	}
	patch := bug.Patch
	if !patched {
		patch = ""
		dir = filepath.Join(dir, "clean") // apart from the patched run's (GAUNTLET_E2E_KEEP)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "valkey-operator")
	if err := bugs.BuildOperator(ctx, root, patch, bin); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	cfg, err := bugs.Config(root, filepath.Join(dir, "state"), out, bin, bug.Cases[:n], 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	bug.Apply(&cfg)
	for _, b := range backend {
		b(&cfg, bin)
	}
	cfg.NoMinimize = !minimize
	res, err := campaign.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Steps {
		for _, f := range s.Faults {
			t.Logf("%s: %s on %v, unsupported %q; availability %+v; converged after %v", s.ID(), f.Kind, f.Targets, f.Unsupported, s.Availability, s.ConvergeTime())
		}
	}
	return cfg, res, out
}

// requireAlarm returns the first bug alarm group raised by one of the oracles.
func requireAlarm(t *testing.T, res *campaign.Result, oracles ...string) *campaign.AlarmGroup {
	t.Helper()
	var hit *campaign.AlarmGroup
	for _, g := range res.Groups {
		t.Logf("alarm: %s %s: %s (steps %v, misoperation %v)", g.Oracle, g.Signature, g.Summary, g.Steps, g.Misoperation)
		if slices.Contains(oracles, g.Oracle) && !g.Misoperation && hit == nil {
			hit = g
		}
	}
	if hit == nil {
		t.Fatalf("the seeded bug raised no %v alarm (%d groups)", oracles, len(res.Groups))
	}
	return hit
}
