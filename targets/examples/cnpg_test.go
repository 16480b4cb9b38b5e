package examples

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/cluster/local/imagemap"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestE2ECloudNativePGCleanCampaign runs a few desired states of a PostgreSQL
// Cluster against CloudNativePG v1.28.2 (cmd/manager built from its module by
// `make cnpg`: the operator, its webhooks, and the instance manager running
// Debian's PostgreSQL 15 in every instance pod, all real processes) and expects
// no alarm.
func TestE2ECloudNativePGCleanCampaign(t *testing.T) {
	testenv.NeedE2E(t, local.ControlPlaneBinDir())
	mgr, err := imagemap.ExpandEnv("${GAUNTLET_CACHE_DIR}/cnpg/v1.28.2/manager")
	if err != nil {
		t.Fatal(err)
	}
	testenv.NeedFile(t, mgr, "build it with `make cnpg`")
	testenv.NeedFile(t, "/usr/lib/postgresql/15/bin/postgres", "install PostgreSQL 15 with `make cnpg` (Debian's postgresql-15)")
	tg, err := targets.Load(filepath.Join("cloudnative-pg", "cloudnative-pg.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tg.Properties = []string{"spec.enableSuperuserAccess", "spec.instances", "spec.logLevel"}
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
	cfg := campaign.Config{Target: tg, Workers: 1, Seed: 3, MaxSteps: 3, OutDir: out, Progress: testWriter{t}, Logger: log,
		NoMinimize: true, Provider: local.Provider{Options: local.Options{StateRoot: t.TempDir(), Nodes: 1, Log: log}}}
	res, err := campaign.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != res.Planned || res.Done < 3 {
		t.Errorf("done %d of %d planned steps; want all of at least 3", res.Done, res.Planned)
	}
	for _, g := range res.Groups {
		t.Errorf("alarm on CloudNativePG: %s %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
	}
	// The operator ran as a process: its log is CloudNativePG's, not a simulated container's note.
	logs, _ := filepath.Glob(filepath.Join(out, "steps", "w0", "*", "operator.log"))
	var real bool
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if strings.Contains(string(b), "simulated:") {
			t.Errorf("%s: the operator was simulated", l)
		}
		real = real || strings.Contains(string(b), "postgresql.cnpg.io")
	}
	if !real {
		t.Errorf("no step's operator.log holds CloudNativePG's own output (%d logs)", len(logs))
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
	for _, c := range sum.Simulated {
		t.Errorf("container ran simulated: %v", c)
	}
	t.Logf("bench: %+v", res.Bench)
}
