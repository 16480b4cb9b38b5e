package examples

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestE2EPrometheusOperatorCleanCampaign runs a few desired states of an
// Alertmanager against the Prometheus operator v0.85.0 (cmd/operator and the
// config reloader built from its module by `make prometheus-operator`, the
// operand Debian's Alertmanager 0.25, all real processes) and expects no alarm:
// replicas 1→3 (a gossip cluster: the operator passes each pod its peers), the
// log format and the log level (both passed to the config reloader too).
func TestE2EPrometheusOperatorCleanCampaign(t *testing.T) {
	t.Parallel() // its own clusters and state root
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	needBuilt(t, "build it with `make prometheus-operator`", "${GAUNTLET_CACHE_DIR}/prometheus-operator/v0.85.0/operator",
		"${GAUNTLET_CACHE_DIR}/prometheus-operator/v0.85.0/prometheus-config-reloader")
	testenv.NeedFile(t, "/usr/bin/prometheus-alertmanager", "install Alertmanager with `make prometheus-operator` (Debian's prometheus-alertmanager)")
	cleanCampaign{name: "Prometheus operator", target: filepath.Join("prometheus-operator", "prometheus-operator.yaml"),
		properties: []string{"spec.replicas", "spec.logFormat", "spec.logLevel"},
		cases:      []string{"spec.replicas#number/change", "spec.logFormat#enum/json", "spec.logLevel#enum/error"},
		seed:       1, timeout: 8 * time.Minute, ownLog: "alertmanager-controller"}.run(t)
}
