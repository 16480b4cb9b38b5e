package examples

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestE2EPrometheusOperatorUntunedCases runs, on the real Prometheus
// operator, the untuned campaign's cases that raised generic false alarms:
// a Secret named that does not exist (the pod waits in FailedMount), a
// generated pass-through argument Alertmanager refuses (crash loop), a
// governing Service named that does not exist (the operator reports
// Reconciled=False), a new version (the image tag and the version label), a
// generated peer (passed on as --cluster.peer) and minReadySeconds. None may
// raise an alarm; the first three are misoperation groups naming their cause.
func TestE2EPrometheusOperatorUntunedCases(t *testing.T) {
	t.Parallel() // its own clusters and state root
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	needBuilt(t, "build it with `make prometheus-operator`", "${GAUNTLET_CACHE_DIR}/prometheus-operator/v0.85.0/operator",
		"${GAUNTLET_CACHE_DIR}/prometheus-operator/v0.85.0/prometheus-config-reloader")
	testenv.NeedFile(t, "/usr/bin/prometheus-alertmanager", "install Alertmanager with `make prometheus-operator` (Debian's prometheus-alertmanager)")
	tg, err := targets.Load(filepath.Join("prometheus-operator", "prometheus-operator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []string{"spec.secrets#array/append", "spec.additionalArgs#array/append", "spec.serviceName#string/generated",
		"spec.version#string/generated", "spec.additionalPeers#array/append", "spec.minReadySeconds#number/change"}
	tg.Properties = []string{"spec.secrets", "spec.additionalArgs", "spec.serviceName", "spec.version", "spec.additionalPeers", "spec.minReadySeconds"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	out := filepath.Join(t.TempDir(), "results")
	if d := os.Getenv("GAUNTLET_E2E_KEEP"); d != "" {
		out = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := campaign.Config{Target: tg, Workers: 1, Seed: 1, MaxSteps: len(cases),
		CaseFilter: func(tc *inputgen.TestCase) bool { return slices.Contains(cases, tc.Property+"#"+tc.Generator) },
		OutDir:     out, Progress: testWriter{t}, Logger: log, NoMinimize: true, NoDifferential: true,
		Provider: local.Provider{Options: local.Options{StateRoot: t.TempDir(), Nodes: 1, Log: log}}}
	res, err := campaign.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Done < len(cases) {
		t.Errorf("done %d steps, want at least %d", res.Done, len(cases))
	}
	var misops []string
	for _, g := range res.Groups {
		if !g.Misoperation {
			t.Errorf("alarm: %s %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
			continue
		}
		misops = append(misops, g.Summary)
	}
	all := strings.Join(misops, "\n")
	for _, want := range []string{
		`spec.secrets[0] names Secret "gauntlet-`,                            // a missing Secret
		"the operand refused a value the generator invented",                 // a generated argument
		"the operator refused the desired state: condition Reconciled=False", // a missing governing Service
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no misoperation group says %q; the groups:\n%s", want, all)
		}
	}
}
