package campaign

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/testing/localenv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

func TestMain(m *testing.M) {
	if local.Init() {
		return
	}
	if os.Getenv(envResumeChild) != "" {
		os.Exit(runResumeChild())
	}
	os.Exit(m.Run())
}

// e2eSetup skips unless the embedded cluster can run here, and returns a small
// valkey target and a provider.
func e2eSetup(t *testing.T) (*targets.Target, local.Provider) {
	t.Helper()
	root := localenv.Repo(t)
	bin := localenv.Operator(t, root)
	tg, err := targets.Valkey(root)
	if err != nil {
		t.Fatal(err)
	}
	// Small scale first: one replica, no persistence.
	tg.Seed["spec"] = map[string]any{"replicas": int64(1), "image": "valkey/valkey:8.1", "config": map[string]any{"maxmemory": "100mb"}}
	tg.Properties = []string{"spec.replicas", "spec.config", "spec.auth.passwordSecret", "spec.auth.passwordSecret.name"}
	state := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return tg, local.Provider{Options: local.Options{StateRoot: state, OperatorBinary: bin, Log: log, Nodes: 1}}
}

var e2eCases = map[string]bool{
	"spec.replicas#replicas/scale-up-down": true,
	"spec.config#config/remove-key":        true,
	"spec.config#config/add-key":           true,
	// Auth on, naming the Secret the target's fixture creates: the monitor and the
	// workload must follow with the password. (The object/add case now completes
	// the new reference from the target's value pool, so it holds what the
	// name's pool case held, and that case is merged into it.)
	"spec.auth.passwordSecret#object/add": true,
}

func TestE2ECleanCampaign(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	tg, prov := e2eSetup(t)
	out := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := Config{Target: tg, Provider: prov, Workers: 2, Seed: 7, OutDir: out, Progress: testWriter{t}, Stability: time.Second,
		CaseFilter: func(tc *inputgen.TestCase) bool { return e2eCases[tc.ID] }}
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		cfg.Logger = prov.Options.Log
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Six desired states: scale up and down (2), a config key removed (1) and added (1), and auth
	// added then turned off again (2: a case that turns a feature on turns it off too).
	if res.Done != res.Planned || res.Done != 6 {
		t.Errorf("done %d of %d planned steps; want 6 of 6", res.Done, res.Planned)
	}
	for _, g := range res.Groups {
		t.Errorf("alarm on the clean operator: %s %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
	}
	for _, f := range []string{"plan.json", "journal.jsonl", "summary.json", "steps/w0/s0/state.json", "steps/w0/s1/verdict.json", "steps/w1/s1/cr.yaml", "steps/w1/s1/operator.log"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("results folder: %v", err)
		}
	}
	var diff int
	for _, s := range res.Steps {
		if s.Kind == model.StepDifferential {
			diff++
		}
	}
	if diff == 0 {
		t.Error("no differential re-run recorded")
	}
	t.Logf("bench: %+v", res.Bench)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// TestE2EDanglingReference declares a password Secret name that exists nowhere:
// the harness must label the step a misoperation (naming the missing Secret), so
// whatever the operator does with it is reported apart from bugs.
func TestE2EDanglingReference(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	tg, prov := e2eSetup(t)
	out := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := Config{Target: tg, Provider: prov, Workers: 1, Seed: 7, OutDir: out, Progress: testWriter{t}, Stability: time.Second,
		NoDifferential: true, NoMinimize: true, Converge: ConvergeOptions{Timeout: 40 * time.Second},
		CaseFilter: func(tc *inputgen.TestCase) bool { return tc.ID == "spec.auth.passwordSecret.name#string/generated" }}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var labelled bool
	for _, s := range res.Steps {
		if s.Kind == model.StepApply {
			labelled = s.Misoperation && strings.Contains(s.MisoperationReason, "spec.auth.passwordSecret.name names Secret")
			t.Logf("%s: misoperation %v (%s)", s.ID(), s.Misoperation, s.MisoperationReason)
		}
	}
	if !labelled {
		t.Error("the step naming a missing Secret was not labelled a misoperation with the reason")
	}
	if n := res.Alarms(); n != 0 {
		t.Errorf("%d bug alarm groups; a dangling reference is a misoperation", n)
	}
}
