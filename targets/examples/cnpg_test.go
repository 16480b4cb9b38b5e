package examples

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestE2ECloudNativePGCleanCampaign runs a few desired states of a PostgreSQL
// Cluster against CloudNativePG v1.28.2 (cmd/manager built from its module by
// `make cnpg`: the operator, its webhooks, and the instance manager running
// Debian's PostgreSQL 15 in every instance pod, all real processes) and expects
// no alarm: superuser access on, instances 1→2 (a streaming replica), logLevel,
// and storage 1Gi→2Gi (the embedded cluster's volume expansion: the claim and
// its volume grow while the instance runs).
func TestE2ECloudNativePGCleanCampaign(t *testing.T) {
	t.Parallel() // its own clusters and state root
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	needBuilt(t, "build it with `make cnpg`", "${GAUNTLET_CACHE_DIR}/cnpg/v1.28.2/manager")
	testenv.NeedFile(t, "/usr/lib/postgresql/15/bin/postgres", "install PostgreSQL 15 with `make cnpg` (Debian's postgresql-15)")
	cleanCampaign{name: "CloudNativePG", target: filepath.Join("cloudnative-pg", "cloudnative-pg.yaml"),
		properties: []string{"spec.enableSuperuserAccess", "spec.instances", "spec.logLevel", "spec.storage.size"},
		cases: []string{"spec.enableSuperuserAccess#boolean/flip", "spec.instances#number/change", "spec.logLevel#enum/warning",
			"spec.storage.size#storage/grow"},
		seed: 3, timeout: 15 * time.Minute, ownLog: "postgresql.cnpg.io"}.run(t)
}
