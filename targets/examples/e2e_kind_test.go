package examples

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/kind"
	"github.com/gauntlet-dev/gauntlet/cluster/kind/kindtest"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestE2EKindCertManagerCleanCampaign runs cert-manager's short clean campaign on a kind
// cluster of the offline node image (kind lane): nothing can be pulled, so its three images
// are assembled from the target's image mapping (the binaries `make certmanager` builds) and
// loaded into the node, and the campaign must run every step with no alarm, as on the
// embedded cluster.
func TestE2EKindCertManagerCleanCampaign(t *testing.T) {
	t.Parallel()
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	kindtest.NeedLane(t, false)
	needBuilt(t, "build it with `make certmanager`", "${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/controller",
		"${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/webhook", "${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/cainjector")
	cleanCampaign{name: "cert-manager on kind", target: filepath.Join("cert-manager", "cert-manager.yaml"),
		properties: []string{"spec.commonName", "spec.dnsNames", "spec.issuerRef.name"},
		seed:       1, timeout: 10 * time.Minute, ownLog: "cert-manager",
		provider: kind.Provider{Options: kind.Options{StateDir: t.TempDir(), Log: slog.New(slog.DiscardHandler)}}}.run(t)
}
