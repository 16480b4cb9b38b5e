package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// The resume test re-executes the test binary as a campaign process: TestMain
// calls runResumeChild when envResumeChild names the results folder.
const (
	envResumeChild = "GAUNTLET_TEST_RESUME_CHILD_OUT"
	envResumeState = "GAUNTLET_TEST_RESUME_CHILD_STATE"
)

// resumeCases is the small plan of the resume test: spec.replicas scaled up
// then down, and one spec.config key added (3 desired-state steps).
var resumeCases = map[string]bool{
	"spec.replicas#replicas/scale-up-down": true,
	"spec.config#config/add-key":           true,
}

// resumeConfig builds the campaign configuration shared by the killed child
// and the resuming parent. It returns an error naming what is missing when
// the embedded cluster cannot run here.
// resumeTestConfig skips under -short and returns resumeConfig's campaign with
// a fresh results folder (cfg.OutDir) and state folder (returned), logging to
// log, or marks the test unavailable saying what is missing.
func resumeTestConfig(t *testing.T, log *slog.Logger) (cfg Config, state string) {
	t.Helper()
	testenv.SkipShort(t)
	state = t.TempDir()
	cfg, err := resumeConfig(filepath.Join(t.TempDir(), "results"), state, log)
	if err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	return cfg, state
}

func resumeConfig(out, stateRoot string, log *slog.Logger) (Config, error) {
	if os.Geteuid() != 0 {
		return Config{}, errors.New("end-to-end tests need root (the embedded cluster uses network and mount namespaces)")
	}
	binDir := os.Getenv("GAUNTLET_CONTROLPLANE_BIN")
	if binDir == "" {
		binDir = local.ControlPlaneBinDir()
	}
	if _, err := os.Stat(filepath.Join(binDir, "kube-apiserver")); err != nil {
		return Config{}, fmt.Errorf("control plane not built (run `make controlplane`): %w", err)
	}
	root, err := targets.FindRepoRoot(".")
	if err != nil {
		return Config{}, err
	}
	bin, err := operatorbin.Find(root)
	if err != nil {
		return Config{}, err
	}
	tg, err := targets.Valkey(root)
	if err != nil {
		return Config{}, err
	}
	tg.Seed["spec"] = map[string]any{"replicas": int64(1), "image": "valkey/valkey:8.1", "config": map[string]any{"maxmemory": "100mb"}}
	tg.Properties = []string{"spec.replicas", "spec.config"}
	prov := local.Provider{Options: local.Options{StateRoot: stateRoot, OperatorBinary: bin, Log: log, Nodes: 1}}
	return Config{Target: tg, Provider: prov, Workers: 1, Seed: 11, OutDir: out, MaxSteps: 4, Stability: time.Second,
		NoDifferential: true, NoMinimize: true, Quiet: true, Logger: log,
		CaseFilter: func(tc *inputgen.TestCase) bool { return resumeCases[tc.ID] }}, nil
}

// runResumeChild runs the campaign of TestE2EResumeAfterSIGKILL in this process
// until it ends or is killed; it returns the exit code.
func runResumeChild() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := resumeConfig(os.Getenv(envResumeChild), os.Getenv(envResumeState), log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "resume child:", err)
		return 2
	}
	if _, err := Run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "resume child: campaign:", err)
		return 1
	}
	return 0
}

// appliedSteps counts the desired-state steps (apply, recreate) in a journal.
func appliedSteps(recs []Record) int {
	n := 0
	for _, r := range recs {
		if r.Type == RecStep && r.Step != nil && (r.Step.Kind == model.StepApply || r.Step.Kind == model.StepRecreate) {
			n++
		}
	}
	return n
}

func TestE2EResumeAfterSIGKILL(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg, state := resumeTestConfig(t, log)
	out := cfg.OutDir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()

	// 1. The child campaign, killed with SIGKILL once a desired-state step is durable.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.CommandContext(ctx, self, "-test.run=^$")
	child.Env = append(os.Environ(), envResumeChild+"="+out, envResumeState+"="+state)
	childLog := filepath.Join(t.TempDir(), "child.log")
	lf, err := os.Create(childLog)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	child.Stdout, child.Stderr = lf, lf
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	jpath := filepath.Join(out, "journal.jsonl")
	var before []Record
	killed := false
	for !killed {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(childLog)
			t.Fatalf("the campaign process exited (%v) before it could be killed; its log:\n%s", err, b)
		case <-ctx.Done():
			_ = child.Process.Kill()
			<-exited
			t.Fatal("no desired-state step was recorded in time")
		case <-time.After(100 * time.Millisecond):
		}
		recs, _, err := ReadJournal(jpath)
		if err != nil {
			continue
		}
		if appliedSteps(recs) >= 1 {
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			killed = true
		}
	}
	before, _, err = ReadJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	start, _, err := Replay(before)
	if err != nil {
		t.Fatal(err)
	}
	if appliedSteps(before) >= start.Planned {
		t.Fatalf("the child recorded all %d planned steps before SIGKILL: nothing left to resume", start.Planned)
	}
	t.Logf("killed the campaign after %s with %d of %d planned steps recorded", time.Since(began).Round(time.Millisecond), appliedSteps(before), start.Planned)

	// 2. Collect the killed run's clusters.
	left, err := local.List(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) == 0 {
		t.Error("the killed campaign left no cluster record to collect (expected its cluster under the state root)")
	}
	removed, err := local.GC(ctx, state)
	if err != nil {
		t.Fatalf("gc after SIGKILL: %v", err)
	}
	if len(removed) != len(left) {
		t.Errorf("gc removed %v, want every cluster of %v", removed, left)
	}
	assertNoClusters(t, state, "after gc of the killed run")

	// 3. Resume.
	cfg.Resume = true
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.Done != res.Planned || res.Planned != start.Planned {
		t.Errorf("resumed campaign: done %d of %d planned steps; want all %d", res.Done, res.Planned, start.Planned)
	}
	for _, g := range res.Groups {
		t.Errorf("alarm on the clean operator: %s %s: %s (steps %v)", g.Oracle, g.Signature, g.Summary, g.Steps)
	}

	// 4. The journal: the killed run's records kept verbatim, every planned step exactly once.
	recs, _, err := ReadJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range before {
		if recs[i].Type != r.Type || (r.Step != nil && (recs[i].Step == nil || recs[i].Step.ID() != r.Step.ID())) {
			t.Errorf("journal record %d changed across the resume: %s → %s", i, r.Type, recs[i].Type)
		}
	}
	type stepKey struct {
		kind   model.StepKind
		tc     string
		cursor Cursor
	}
	ids, keys := map[string]int{}, map[stepKey]int{}
	var seeds, ends, dones int
	maxIndex := -1
	for _, r := range recs {
		switch r.Type {
		case RecStep:
			s := r.Step
			ids[s.ID()]++
			keys[stepKey{s.Kind, s.TestCase, s.Cursor}]++
			if s.Kind == model.StepSeed {
				seeds++
			}
			if s.Index > maxIndex {
				maxIndex = s.Index
			}
		case RecEnd:
			ends++
		case RecWorkerDone:
			dones++
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("step %s recorded %d times, want once", id, n)
		}
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("step %+v recorded %d times, want once", k, n)
		}
	}
	if len(ids) != maxIndex+1 {
		t.Errorf("step indexes have gaps: %d steps, highest index %d", len(ids), maxIndex)
	}
	if got := appliedSteps(recs); got != start.Planned {
		t.Errorf("journal holds %d desired-state steps, want the %d planned", got, start.Planned)
	}
	if seeds != 1 || ends != 1 || dones != 1 {
		t.Errorf("journal holds %d seed steps, %d worker-done and %d end records; want 1 each", seeds, dones, ends)
	}
	for _, f := range []string{"summary.json", "junit.xml", "report.html", "result.json", "plan.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("results folder: %v", err)
		}
	}
	for id := range ids {
		if _, err := os.Stat(filepath.Join(out, "steps", id, "verdict.json")); err != nil {
			t.Errorf("results folder: step %s: %v", id, err)
		}
	}
	assertNoClusters(t, state, "after the resumed campaign")
	t.Logf("resume test: %d steps in the journal, %s in all; bench %+v", len(ids), time.Since(began).Round(time.Millisecond), res.Bench)
}

// assertNoClusters fails when any cluster record or folder is left under the state root.
func assertNoClusters(t *testing.T, state, when string) {
	t.Helper()
	infos, err := local.List(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		t.Errorf("%s: cluster %s left under the state root (running %v, folder %s)", when, i.Name, i.Running, i.Dir)
	}
	ents, err := os.ReadDir(filepath.Join(state, "clusters"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("%s: %s left under %s", when, e.Name(), filepath.Join(state, "clusters"))
	}
}
