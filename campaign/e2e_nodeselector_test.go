package campaign_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/internal/testing/bugcampaign"
)

// nodeSelectorBug is the seeded bug that drops node selector keys with a
// prefix, and quotedHostname the property its campaign case changes, as the
// oracles write it (the key quoted: it holds a dot and a slash).
const (
	nodeSelectorBug = "10-node-selector-prefixed-keys-dropped"
	quotedHostname  = `spec.scheduling.nodeSelector["kubernetes.io/hostname"]`
)

// TestE2ENodeSelectorQuotedKey runs, end to end, the campaign case that sets
// spec.scheduling.nodeSelector {"kubernetes.io/hostname": "node-1"} (the
// embedded cluster's first node, so the pods stay schedulable): against the
// operator that drops node selector keys with a prefix the consistency oracle
// must name the quoted property, and against the clean operator (which rolls
// the selector out) no oracle may raise an alarm. Both runs must record the
// change under the quoted path (issue 11: the unquoted path was parsed back as
// nodeSelector.kubernetes["io/hostname"] and never judged).
func TestE2ENodeSelectorQuotedKey(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel) // once both subtests are done

	// The two campaigns side by side: each has its own cluster.
	t.Run("bug", func(t *testing.T) {
		t.Parallel()
		_, res, _ := bugcampaign.Run(ctx, t, nodeSelectorBug, true, false, 1)
		requireQuotedChange(t, res)
		hit := bugcampaign.RequireAlarm(t, res, "consistency")
		named := false
		for _, f := range hit.Findings {
			named = named || strings.Contains(f.Summary, quotedHostname)
		}
		if !named {
			t.Errorf("the consistency alarm does not name %s: %s", quotedHostname, hit.Summary)
		}
	})
	t.Run("clean", func(t *testing.T) {
		t.Parallel()
		_, clean, _ := bugcampaign.Run(ctx, t, nodeSelectorBug, false, false, 1)
		requireQuotedChange(t, clean)
		for _, g := range clean.Groups {
			if !g.Misoperation {
				t.Errorf("clean operator: %s alarm %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
			}
		}
	})
}

// requireQuotedChange fails unless the campaign ran the node selector case to
// convergence and recorded its change under the quoted property path.
func requireQuotedChange(t *testing.T, res *campaign.Result) {
	t.Helper()
	for _, s := range res.Steps {
		if !strings.HasPrefix(s.TestCase, "spec.scheduling.nodeSelector#") {
			continue
		}
		if s.Unconverged() {
			t.Errorf("step %s (%s) did not converge (timed out %v, stuck %v): not ready %v", s.ID(), s.TestCase, s.TimedOut, s.Stuck, s.NotReady)
		}
		if !slices.Contains(s.Changed, quotedHostname) {
			t.Errorf("step %s (%s) recorded changed paths %q, want %s among them", s.ID(), s.TestCase, s.Changed, quotedHostname)
		}
		return
	}
	t.Fatalf("no step ran the node selector case (%d steps)", len(res.Steps))
}
