package campaign_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/campaign/bugs"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestE2ECatchesSeededBug runs a short campaign against the operator built with
// one seeded bug (the user's maxmemory-policy overruled by an operator default),
// requires an alarm from the expected oracle, a confirmed reproducer for its
// group, and that replaying the reproducer raises the same signature again.
func TestE2ECatchesSeededBug(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("end-to-end tests need root (the embedded cluster uses network and mount namespaces)")
	}
	binDir := os.Getenv("GAUNTLET_CONTROLPLANE_BIN")
	if binDir == "" {
		binDir = local.ControlPlaneBinDir()
	}
	if _, err := os.Stat(filepath.Join(binDir, "kube-apiserver")); err != nil {
		t.Skipf("control plane not built (run `make controlplane`): %v", err)
	}
	root, err := targets.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	const bugName, wantOracle = "04-config-default-overrules-user", "consistency"
	bs, err := bugs.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	var bug *bugs.Bug
	for i := range bs {
		if bs[i].Name == bugName {
			bug = &bs[i]
		}
	}
	if bug == nil {
		t.Fatalf("seeded bug %s not found", bugName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "valkey-operator")
	if err := bugs.BuildOperator(ctx, root, bug.Patch, bin); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	// Only the case that exercises the bug: the reproducer is minimized in the run.
	cfg, err := bugs.Config(root, filepath.Join(dir, "state"), out, bin, bug.Cases[:1], 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := campaign.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var hit *campaign.AlarmGroup
	for _, g := range res.Groups {
		t.Logf("alarm: %s %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
		if g.Oracle == wantOracle && !g.Misoperation && hit == nil {
			hit = g
		}
	}
	if hit == nil {
		t.Fatalf("seeded bug %s raised no %s alarm (%d groups)", bugName, wantOracle, len(res.Groups))
	}
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
