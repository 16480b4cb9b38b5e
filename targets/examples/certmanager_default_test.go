package examples

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestE2ECertManagerRemovedDefault replays the removals an untuned
// cert-manager campaign raised as consistency alarms: the seed sets an ECDSA
// key's size to 256 and the duration to 2160h — cert-manager's own defaults —
// and a removal of either leaves the certificate as it was, rightly. The
// removal is judged against a fresh creation of the same desired state, which
// holds the same values: no alarm, a warning naming the default instead.
func TestE2ECertManagerRemovedDefault(t *testing.T) {
	t.Parallel() // its own clusters and state root
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	needBuilt(t, "build it with `make certmanager`", "${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/controller",
		"${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/webhook", "${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/cainjector")
	out := filepath.Join(t.TempDir(), "results")
	cleanCampaign{name: "cert-manager", target: filepath.Join("cert-manager", "cert-manager.yaml"),
		cases: []string{"spec.privateKey.size#scalar/remove", "spec.duration#scalar/remove"},
		seed:  1, timeout: 10 * time.Minute, ownLog: "cert-manager", out: out}.run(t)

	warnings := summaryWarnings(t, out)
	for _, prop := range []string{"spec.privateKey.size", "spec.duration"} {
		found := false
		for _, w := range warnings {
			found = found || strings.HasPrefix(w, prop+" was removed") && strings.Contains(w, "fresh creation")
		}
		if !found {
			t.Errorf("no warning says %s's kept value is what a fresh creation holds; warnings: %q", prop, warnings)
		}
	}
}
