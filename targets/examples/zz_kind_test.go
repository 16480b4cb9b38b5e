package examples

// The kind tests are in the file go test reaches last, so that they start once the first
// tests of this package are done (-parallel) and the kind lane's campaign, which makes the
// longest chain of kind clusters of the run, has taken the first kind creation turn.

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/kind"
	"github.com/gauntlet-dev/gauntlet/cluster/kind/kindtest"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/kindturns"
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
		provider: kindturns.Provider(kind.Provider{Options: kind.Options{StateDir: t.TempDir(), Log: slog.New(slog.DiscardHandler)}})}.run(t)
}

// TestE2EKindCloudNativePGCleanCampaign runs CloudNativePG on a kind cluster of the offline
// node image (kind lane): its operator image and its PostgreSQL 15 operand image (named by the
// seed's spec.imageName) are assembled from the target's image mapping — the operand with the
// rule's files: Debian's PostgreSQL, its data, time zones, the C.UTF-8 locale and a shell —
// and its operator Deployment, which pulls Always, runs the loaded image. instances 1→2 makes
// a streaming replica (pg_basebackup between pods across the node's bridge); no alarm. Its
// differential re-runs are TestE2ECloudNativePGCleanCampaign's, which runs the same case from
// the same seed on the embedded cluster: that verdict is the operator's (how it reaches the
// state declared directly, judged against its history on the same cluster), and three more
// CloudNativePG systems on one kind node would prove it again.
func TestE2EKindCloudNativePGCleanCampaign(t *testing.T) {
	t.Parallel()
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	kindtest.NeedLane(t, false)
	needBuilt(t, "build it with `make cnpg`", "${GAUNTLET_CACHE_DIR}/cnpg/v1.28.2/manager")
	testenv.NeedFile(t, "/usr/lib/postgresql/15/bin/postgres", "install PostgreSQL 15 with `make cnpg` (Debian's postgresql-15)")
	cleanCampaign{name: "CloudNativePG on kind", target: filepath.Join("cloudnative-pg", "cloudnative-pg.yaml"),
		properties: []string{"spec.instances"},
		cases:      []string{"spec.instances#number/change"},
		seed:       3, timeout: 15 * time.Minute, ownLog: "postgresql.cnpg.io", noDifferential: true,
		provider: kindturns.Provider(kind.Provider{Options: kind.Options{StateDir: t.TempDir(), Log: slog.New(slog.DiscardHandler)}})}.run(t)
}
