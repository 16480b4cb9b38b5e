// Package examples holds the end-to-end tests of the example third-party
// targets (targets/examples/*): each runs a short clean campaign of the real
// operator, built from its pinned module, on the embedded cluster.
package examples

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/targets"
)

func TestMain(m *testing.M) {
	if local.Init() {
		return
	}
	os.Exit(m.Run())
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// cleanCampaign is a short clean campaign of a third-party target.
type cleanCampaign struct {
	name       string   // the operator, in messages
	target     string   // target file, relative to this folder
	properties []string // the properties to change
	// cases, when set, are the test cases to run ("property#generator", one
	// desired state each) instead of the first three of the campaign's order.
	cases   []string
	seed    int64
	timeout time.Duration
	ownLog  string // a string only the operator's own log output holds
	// provider, when set, makes the clusters (default: the embedded cluster, one node).
	provider cluster.Provider
	// out, when set, is the results folder (default: a temporary one).
	out string
	// noDifferential skips the differential re-runs, for a run whose differential verdict
	// another test already gives (the same cases from the same seed on another cluster).
	noDifferential bool
}

// run runs the campaign on the embedded cluster (three desired states, or one
// per listed case; no faults) and expects every planned step done, no alarm,
// the operator's own output in its log (a real process, not a simulated
// container) and no simulated container in the summary.
func (c cleanCampaign) run(t *testing.T) {
	tg, err := targets.Load(c.target)
	if err != nil {
		t.Fatal(err)
	}
	tg.Properties = c.properties
	steps, keep := 3, func(*inputgen.TestCase) bool { return true }
	if len(c.cases) > 0 {
		steps = len(c.cases)
		keep = func(tc *inputgen.TestCase) bool { return slices.Contains(c.cases, tc.Property+"#"+tc.Generator) }
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	out := c.out
	if out == "" {
		out = filepath.Join(t.TempDir(), "results")
	}
	if d := os.Getenv("GAUNTLET_E2E_KEEP"); d != "" {
		out = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var prov cluster.Provider = local.Provider{Options: local.Options{StateRoot: t.TempDir(), Nodes: 1, Log: log}}
	if c.provider != nil {
		prov = c.provider
	}
	cfg := campaign.Config{Target: tg, Workers: 1, Seed: c.seed, MaxSteps: steps, CaseFilter: keep, OutDir: out, Progress: testWriter{t}, Logger: log,
		NoMinimize: true, NoDifferential: c.noDifferential, Provider: prov}
	res, err := campaign.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != res.Planned || res.Done < steps {
		t.Errorf("done %d of %d planned steps; want all of at least %d", res.Done, res.Planned, steps)
	}
	for _, g := range res.Groups {
		t.Errorf("alarm on %s: %s %s: %s (steps %v)", c.name, g.Oracle, g.Signature, g.Summary, g.Steps)
	}
	// The operator ran as a process: its log is its own, not a simulated container's note.
	logs, _ := filepath.Glob(filepath.Join(out, "steps", "w0", "*", "operator.log"))
	var real bool
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if strings.Contains(string(b), "simulated:") {
			t.Errorf("%s: the operator was simulated", l)
		}
		real = real || strings.Contains(string(b), c.ownLog)
	}
	if !real {
		t.Errorf("no step's operator.log holds %s's own output (%d logs)", c.name, len(logs))
	}
	// No container ran simulated: the summary lists none.
	var sum struct {
		Simulated []map[string]any `json:"simulatedContainers"`
	}
	if b, err := os.ReadFile(filepath.Join(out, "summary.json")); err != nil {
		t.Error(err)
	} else if err := json.Unmarshal(b, &sum); err != nil {
		t.Error(err)
	}
	for _, s := range sum.Simulated {
		t.Errorf("container ran simulated: %v", s)
	}
	t.Logf("bench: %+v", res.Bench)
}

// needBuilt fails (CI) or skips unless each of Gauntlet's cache paths exists.
func needBuilt(t *testing.T, fix string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		p, err := imagemap.ExpandEnv(p)
		if err != nil {
			t.Fatal(err)
		}
		testenv.NeedFile(t, p, fix)
	}
}

// TestE2ECertManagerCleanCampaign runs a few desired states of a Certificate
// against cert-manager v1.21.2 (controller, webhook and cainjector built from
// its module by `make certmanager`, every container a real process) and
// expects no alarm.
func TestE2ECertManagerCleanCampaign(t *testing.T) {
	t.Parallel() // its own clusters and state root
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	needBuilt(t, "build it with `make certmanager`", "${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/controller",
		"${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/webhook", "${GAUNTLET_CACHE_DIR}/cert-manager/v1.21.2/cainjector")
	cleanCampaign{name: "cert-manager", target: filepath.Join("cert-manager", "cert-manager.yaml"),
		properties: []string{"spec.commonName", "spec.dnsNames", "spec.issuerRef.name"},
		seed:       1, timeout: 10 * time.Minute, ownLog: "cert-manager"}.run(t)
}
