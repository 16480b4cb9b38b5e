package examples

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// TestE2EPrometheusOperatorIgnoredOnCreation replays values an untuned
// campaign on the Prometheus operator raised as "not reflected" alarms: the
// operator passes `--enable-feature`, `--cluster.label` and the silence limits
// only to Alertmanager versions that have those flags (0.27, 0.26 and 0.28),
// so with the 0.25 operand it rightly leaves them out. A fresh creation of the
// same desired state gives the same state: each value is a warning saying the
// operator ignores it on creation too, not an alarm.
func TestE2EPrometheusOperatorIgnoredOnCreation(t *testing.T) {
	t.Parallel() // its own clusters and state root
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	needBuilt(t, "build it with `make prometheus-operator`", "${GAUNTLET_CACHE_DIR}/prometheus-operator/v0.85.0/operator",
		"${GAUNTLET_CACHE_DIR}/prometheus-operator/v0.85.0/prometheus-config-reloader")
	testenv.NeedFile(t, "/usr/bin/prometheus-alertmanager", "install Alertmanager with `make prometheus-operator` (Debian's prometheus-alertmanager)")
	out := filepath.Join(t.TempDir(), "results")
	cleanCampaign{name: "Prometheus operator", target: filepath.Join("prometheus-operator", "prometheus-operator.yaml"),
		cases: []string{"spec.enableFeatures#array/append", "spec.clusterLabel#string/generated"},
		seed:  1, timeout: 8 * time.Minute, ownLog: "alertmanager-controller", out: out}.run(t)
	warnings := summaryWarnings(t, out)
	for _, prop := range []string{"spec.enableFeatures", "spec.clusterLabel"} {
		found := false
		for _, w := range warnings {
			found = found || strings.HasPrefix(w, prop) && strings.Contains(w, "fresh creation of the same desired state gives the same state")
		}
		if !found {
			t.Errorf("no warning says %s is ignored on a fresh creation too; warnings: %q", prop, warnings)
		}
	}
}

// summaryWarnings reads the warnings' summaries from a results folder's summary.json.
func summaryWarnings(t *testing.T, out string) []string {
	t.Helper()
	var sum struct {
		Warnings []struct {
			Summary string `json:"summary"`
		} `json:"warnings"`
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	var out2 []string
	for _, w := range sum.Warnings {
		out2 = append(out2, w.Summary)
	}
	return out2
}
